"""TP101 on a ``device="cuda"`` default that every construction overrides through
``super().__init__`` and a dict of classes: held-out sample AC's class F3 (omni-medical-suite's
``active_learning_pipeline.py``, pos 0 and 16, judged low (f)), not closed yet.

``rules/_passed_defaults.py`` follows a private function's or class's every mention, and a
subclass (``class _Diversity(_Base)``) or a class read as a dict's value (``SAMPLERS =
{"diversity": _Diversity}``, built by ``SAMPLERS.get(kind)(model, device)``) keeps the
finding: proving that every construction passes ``device`` needs each subclass's
``super().__init__(...)`` call and each read of the dict followed to a call. Until that is
done, this test states the class and fails (strict xfail).
"""

from __future__ import annotations

import pytest

from torchport.check import check_source

PROGRAM = """import torch


class _Base:
    def __init__(self, model, device="cuda"):
        self.model = model.to(device)


class _Diversity(_Base):
    def __init__(self, model, device="cuda"):
        super().__init__(model, device)


_SAMPLERS = {"diversity": _Diversity}


def build(kind, model, device):
    return _SAMPLERS.get(kind)(model, device)
"""


@pytest.mark.xfail(strict=True, reason="F3: subclasses and dicts of classes are not followed")
def test_a_default_every_construction_overrides_through_subclasses_is_left() -> None:
    lines = [f.line for f in check_source(PROGRAM, select=["TP101"])]
    assert lines == [], lines
