"""Guard and placement facts (check/semantic/_guards.py), asked the way rules ask them: mid-walk."""

from __future__ import annotations

import ast
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from torchport.check import check_source
from torchport.check._context import Context
from torchport.check.semantic._guards import Guard, device_guard

# The `expr_at` fixture (tests/check/semantic/conftest.py): `HERE(expr)` and the walk state there.
ExprAt = Callable[[str, str], tuple[ast.expr, Context]]


@pytest.mark.parametrize(
    ("source", "guard"),
    [
        ('if device.type == "cuda":\n    HERE(x)\n', Guard.DEVICE_TYPE),
        ('if device.type != "cpu":\n    pass\nelse:\n    HERE(x)\n', Guard.DEVICE_TYPE),
        ("if x.is_cuda:\n    HERE(x)\n", Guard.DEVICE_TYPE),
        ("if x.is_cuda:\n    pass\nelif x.is_xpu:\n    HERE(x)\n", Guard.DEVICE_TYPE),
        ('y = HERE(x) if "cuda" in str(x.device) else x\n', Guard.DEVICE_TYPE),
        ("import torch\n\nif torch.cuda.is_available():\n    HERE(x)\n", Guard.AVAILABILITY),
        (
            "import torch\n\nuse_cuda = torch.cuda.is_available()\nif use_cuda and ok:\n"
            "    HERE(x)\n",
            Guard.AVAILABILITY,
        ),
        (
            "import torch\n\ndef f(x):\n    if not torch.cuda.is_available():\n        return x\n"
            "    return HERE(x)\n",
            Guard.AVAILABILITY,
        ),
        # Demanding CUDA is no choice: what follows is CUDA-only code.
        ("import torch\n\nassert torch.cuda.is_available()\nHERE(x)\n", None),
        (
            "import torch\n\nif not torch.cuda.is_available():\n    raise SystemExit(1)\nHERE(x)\n",
            None,
        ),
        ('assert x.device.type == "cuda"\nHERE(x)\n', Guard.DEVICE_TYPE),
        ("if args.cuda:\n    HERE(x)\n", Guard.AVAILABILITY),  # a CUDA-or-CPU switch (TP109)
        ("for x in xs:\n    HERE(x)\n", None),
        # A device check outside the function does not reach into its body.
        ('if device.type == "cuda":\n    def f(x):\n        return HERE(x)\n', None),
    ],
)
def test_device_guard(source: str, guard: Guard | None, expr_at: ExprAt) -> None:
    expr, ctx = expr_at(source, "HERE")
    assert device_guard(expr, ctx) is guard


def test_self_referencing_flags_terminate() -> None:
    # `x = x and y` binds a name to an expression that reads it: lookups must end.
    source = (
        "import torch\n\nuse = torch.cuda.is_available()\nuse = use and use\n"
        "if use:\n    x = x.cuda()\n"
    )
    check_source(source, select=["ALL"])


_CUDA_LINES = [
    "y = x.cuda()",
    'y = x.to("cuda")',
    "m = DistributedDataParallel(m, device_ids=[rank])",
    'y = x.to(f"cuda:{rank}")',
    "torch.cuda.set_device(rank)",
    "torch.cuda.synchronize()",
    "s = torch.cuda.Stream()",
    'ctx = torch.autocast("cuda")',
    'y = x.to("mps")',
]
_GUARDS = [
    'if device.type == "cuda":',
    "if x.is_cuda:",
    "if x.is_xpu or x.is_cuda:",
    'if str(x.device).startswith("cuda"):',
]


@given(st.sampled_from(_CUDA_LINES), st.sampled_from(_GUARDS))
def test_code_under_a_device_type_check_is_never_reported(line: str, guard: str) -> None:
    """Ported code branches on the device type: no portability rule reports its CUDA arm."""
    source = f"import torch\n\n\ndef f(x, device, rank):\n    {guard}\n        {line}\n"
    device_rules = ["TP101", "TP102", "TP110", "TP112", "TP113", "TP115", "TP401", "TP406"]
    assert [str(f) for f in check_source(source, select=device_rules)] == []
    # ...and the same line outside the check is reported.
    bare = f"import torch\n\n\ndef f(x, device, rank):\n    {line}\n"
    assert check_source(bare, select=device_rules)


@pytest.mark.parametrize(
    "imports",
    [
        "import tensorrt as trt\n",
        "import cupy\n",
        "try:\n    import cupy\nexcept ImportError:\n    cupy = None\n",
    ],
)
def test_a_cuda_only_library_narrows_only_the_names_it_binds(imports: str) -> None:
    """One `import cupy` (even in `try`) does not silence the module: only statements that
    use the library's names are CUDA interop."""
    lib = "trt" if "trt" in imports else "cupy"
    body = (
        "import torch\n\n"
        "buf = torch.empty(1024, dtype=torch.uint8, device='cuda')\n"
        "s = torch.cuda.Stream()\ntorch.cuda.empty_cache()\n"
    )
    rules = ["TP101", "TP401", "TP406"]
    plain = check_source(body, select=rules)
    assert len(plain) == 3
    with_library = check_source(imports + body, select=rules)
    assert [f.code for f in with_library] == [f.code for f in plain]
    interop = imports + body + f"arr = {lib}.asarray(torch.ones(2).cuda())\n"
    assert [f.code for f in check_source(interop, select=rules)] == [f.code for f in plain]


@pytest.mark.parametrize(
    "decorator",
    [
        "@pytest.mark.skipif(not torch.cuda.is_available(), reason='no GPU')",
        "@unittest.skipUnless(torch.cuda.is_available(), 'no GPU')",
        "@pytest.mark.requires_cuda",
    ],
)
def test_tests_that_need_cuda_are_guarded(decorator: str) -> None:
    source = f"import torch\n\n\n{decorator}\ndef test_gpu():\n    x = torch.ones(2).cuda()\n"
    assert check_source(source, select=["TP101"]) == []
