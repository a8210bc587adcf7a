"""A torchmetrics metric is an ``nn.Module``: its methods run where the metric was moved.

Recall round 5b (chemprop's ``ChempropMetric(torchmetrics.Metric)``): ``update`` made
``torch.ones(n)`` on the CPU and mixed it with the targets, on the device. The oracle is
the table below, written from torchmetrics 1.9 itself (``issubclass(cls, nn.Module)`` for
every class the package and its metric packages list in ``__all__``; enums, exceptions and
the names a metric's own file imports are not modules), not from the checker's code.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_source, fix_source

# (import line, base as written, whether torchmetrics' class is an nn.Module)
BASES = (
    ("import torchmetrics", "torchmetrics.Metric", True),
    ("import torchmetrics as tm", "tm.MeanSquaredError", True),
    ("import torchmetrics", "torchmetrics.classification.BinaryAccuracy", True),
    ("from torchmetrics import Metric", "Metric", True),
    ("from torchmetrics.metric import Metric", "Metric", True),
    ("from torchmetrics.regression import R2Score", "R2Score", True),
    ("from torchmetrics.wrappers import MultitaskWrapper", "MultitaskWrapper", True),
    ("from torchmetrics.collections import MetricCollection", "MetricCollection", True),
    ("from torchmetrics.utilities.enums import EnumStr", "EnumStr", False),
    ("from torchmetrics.metric import TorchMetricsUserError", "TorchMetricsUserError", False),
    (
        "from torchmetrics.classification.accuracy import ClassificationTask",
        "ClassificationTask",
        False,
    ),
    ("import torchmetrics", "torchmetrics.utilities.exceptions.TorchMetricsUserError", False),
)
MAKERS = ("torch.ones(n)", "torch.zeros(n, dtype=torch.float)", "torch.arange(n)")


def _program(imports: str, base: str, through: bool, maker: str) -> tuple[str, int]:
    head = f"import torch\n{imports}\n\n\n"
    if through:  # the project's own base class in between
        head += f"class Base({base}):\n    pass\n\n\n"
        base = "Base"
    body = (
        f"class Loss({base}):\n"
        "    def update(self, preds, targets):\n"
        "        n = targets.shape[0]\n"
        f"        weights = {maker}\n"
        "        self.total = (preds - targets * weights).sum()\n"
    )
    line = head.count("\n") + 4
    return head + body, line


@settings(max_examples=60, deadline=None)
@given(
    base=st.sampled_from(BASES),
    through=st.booleans(),
    maker=st.sampled_from(MAKERS),
)
def test_a_metric_method_makes_its_tensors_on_the_inputs_device(
    base: tuple[str, str, bool], through: bool, maker: str
) -> None:
    imports, written, is_module = base
    source, line = _program(imports, written, through, maker)
    found = [f.line for f in check_source(source, select=["TP504"])]
    assert (line in found) == is_module, source
    if is_module:
        fixed = fix_source(source, select=["TP504"])
        assert "device=targets.device" in fixed.splitlines()[line - 1], fixed
