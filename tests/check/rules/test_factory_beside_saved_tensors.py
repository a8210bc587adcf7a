"""TP117 follows the tensors a ``torch.autograd.Function`` unpacks from ``ctx.saved_tensors``.

Issue 34, branch r34al: round 5j's sigkernel made ``torch.eye(D)`` on the CPU beside ``X`` in
its Functions' ``backward`` (``X, Y, G, K = ctx.saved_tensors``); its maintainers passed
``device=X.device``. No rule reported it: TP117 followed tensor-annotated parameters only.
Oracle (by hand, per part): reported under ``--select TP117`` when the class is torch's
``autograd.Function`` (BASES' flag), the factory is made on the CPU with one dimension or more
(FACTORIES' flag) and it meets a saved tensor (MEETINGS' flag).
"""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from torchport.check import check_source

# (the import, the base; whether it is torch's autograd Function)
BASES = [
    ("", "torch.autograd.Function", True),
    ("from torch.autograd import Function\n", "Function", True),
    ("from torch import autograd\n", "autograd.Function", True),
    ("", "object", False),
    ("class Function:\n    pass\n", "Function", False),
]
# how the method unpacks its saved tensors (x is one)
UNPACKS = ["x, k = ctx.saved_tensors", "(x,) = ctx.saved_tensors", "x = ctx.saved_tensors[0]"]
# (the factory; whether it is made on the CPU with a dimension)
FACTORIES = [
    ("torch.eye(x.shape[-1])", True),
    ("torch.ones(3)", True),
    ("torch.tensor([1.0, 2.0])", True),
    ("torch.eye(x.shape[-1], device=x.device)", False),
    ("torch.tensor(2.0)", False),
    ("torch.ones(3).to(x)", False),
]
# (the statement using the factory F; whether it meets the saved tensor x)
MEETINGS = [
    ("return grad * (x + 1e-9 * {f}), None", True),
    ("y = torch.matmul(x, {f})\n        return y, None", True),
    ("eps = {f}\n        return grad * x + eps.sum().item(), None", False),
    ("z = 3.0 * {f}\n        return grad * z.sum().item(), None", False),
]


@settings(max_examples=40, deadline=None)
@example(BASES[0], UNPACKS[0], FACTORIES[0], MEETINGS[0])  # sigkernel's: reported
@given(
    st.sampled_from(BASES),
    st.sampled_from(UNPACKS),
    st.sampled_from(FACTORIES),
    st.sampled_from(MEETINGS),
)
def test_a_cpu_factory_beside_a_saved_tensor_is_reported(
    base: tuple[str, str, bool], unpack: str, factory: tuple[str, bool], use: tuple[str, bool]
) -> None:
    (imports, name, is_function), (made, on_cpu), (template, meets) = base, factory, use
    source = (
        f"import torch\n{imports}\n\nclass Kernel({name}):\n    @staticmethod\n"
        f"    def backward(ctx, grad):\n        {unpack}\n        {template.format(f=made)}\n"
    )
    reported = any(f.code == "TP117" for f in check_source(source, select=["TP117"]))
    assert reported == (is_function and on_cpu and meets), source
