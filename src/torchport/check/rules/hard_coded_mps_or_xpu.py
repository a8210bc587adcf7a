"""TP112 hard-coded-mps-or-xpu: ``torch.device("mps")``, ``.to("xpu")``, ``.xpu()``."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import string_value
from torchport.check._rule import Example, Finding, Intent, Rule
from torchport.check.rules._test_code import SUBJECT_WORDS, accelerator_is_the_subject
from torchport.check.semantic._devices import MOVE_METHODS, OTHER_ACCELERATORS
from torchport.check.semantic._guards import device_guard
from torchport.check.semantic._library_imports import module_backend

_DEVICE_ARGS = ("device", "map_location")
_METHODS = MOVE_METHODS & OTHER_ACCELERATORS  # `.xpu()`, `.mtia()`, `.npu()`
_LITERALS = (ast.Constant, ast.JoinedStr)


def _other_accelerator(expr: ast.expr | None) -> str | None:
    """``"mps"``, ``"xpu:1"`` ... when ``expr`` names a non-CUDA accelerator (or ``f"xpu:{i}"``)."""
    value = string_value(expr)
    if value is None and isinstance(expr, ast.JoinedStr) and expr.values:
        value = string_value(expr.values[0])
        value = value if value is not None and value.endswith(":") else None
    if value is not None and value.partition(":")[0] in OTHER_ACCELERATORS:
        return value.partition(":")[0]
    return None


class HardCodedMpsOrXpu(Rule):
    """## What it does
    Finds code that names one non-CUDA accelerator as the device:
    `torch.device("mps")`, `.to("xpu")`, `.xpu()`, `.mtia()`, `device="mps"`,
    `map_location="xpu"`, `device = "mps"`. The accelerators are those of
    torch's own list of device types (MPS, XPU, MTIA, MAIA, XLA, HPU, IPU,
    PrivateUse1 backends such as NPU, ...). Left alone: code under a device
    check (`if torch.backends.mps.is_available():`, `if device.type == "xpu":`)
    a probe (`try: torch.zeros(1, device="mps")` with an `except` that
    copes when the device is not there), and the device of a module that
    imports its backend's extension unconditionally (`import torch_npu`,
    `import intel_extension_for_pytorch`): it runs nowhere else. Also left:
    test code whose subject is that accelerator (a test named, marked or
    skipped for it, `test_trainer_on_tpu` with `"xla"`, `@pytest.mark.tpu`):
    another device would change what it tests (`rules/_test_code.py`); and a class
    named for that accelerator (composer's `DeviceHPU` with `torch.device("hpu")`).

    ## Why is this bad?
    It is the same mistake as hard-coding CUDA, made on another machine: the
    program fails everywhere but on an Apple (MPS) or Intel (XPU) device. Define
    the device once from `torch.accelerator` and pass it everywhere.

    ## Why is it off by default?
    Judged on held-out samples V and Y, none of its six findings was worth changing:
    code written for one non-CUDA accelerator (a project's own NPU kernels, timed on
    purpose) is rarely code meant to run on another. `--extend-select TP112` runs it.
    """

    code = "TP112"
    name = "hard-coded-mps-or-xpu"
    intent = Intent.DEVICE
    default = False  # under the 90% bar over samples A-Y: check/_default_scope.py
    message = (
        "use one `device` chosen from `torch.accelerator` instead of hard-coding one "
        "accelerator (MPS, XPU, MTIA, ...)"
    )
    node_types = (ast.Call, ast.Assign)
    # `.xpu()`, `.to("mps")`, `torch.device("xpu")`; any other call only by keyword
    call_attrs = frozenset({"to", "device", *_METHODS})
    call_keywords = frozenset(_DEVICE_ARGS)
    valid = (
        "x = x.to(device)\n",
        'import torch\n\nif torch.backends.mps.is_available():\n    x = x.to("mps")\n',
        'if device.type == "xpu":\n    y = x.xpu()\n',
        'name = "mps"\n',
        'def has_mps():\n    try:\n        torch.zeros(1, device="mps")\n    except RuntimeError:\n'
        "        return False\n    return True\n",
        'import torch_npu\n\nx = x.to("npu")\n',
        'class DeviceHPU(Device):\n    _device = torch.device("hpu")\n',
    )
    invalid = (
        Example('import torch\n\ndev = torch.device("mps")\n'),
        Example('x = x.to("xpu")\ny = y.xpu()\nz = torch.zeros(3, device="xpu:0")\n', count=3),
        Example('device = "mps"\n'),
        Example('y = x.mtia()\nz = x.to("xla:0")\n', count=2),
        Example('try:\n    import torch_npu\nexcept ImportError:\n    pass\nx = x.to("npu")\n'),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        spot = _spot(node, ctx)
        if spot is None or device_guard(node, ctx) is not None or _probe(ctx):
            return
        named = _named(spot)
        backend = module_backend(ctx)
        if backend is not None and backend == named:
            return  # `import torch_npu` at the top: this module runs only on NPUs
        if named is not None and accelerator_is_the_subject(node, ctx, named):
            return  # a test of XLA itself (`test_..._on_tpu`, `@pytest.mark.tpu`)
        if named is not None and _its_class(ctx, named):
            return  # the accelerator's own class (composer's `DeviceHPU`): its subject
        yield ctx.finding(self, spot)


def _its_class(ctx: Context, named: str) -> bool:
    words = SUBJECT_WORDS.get(named, (named,))
    return any(
        isinstance(outer, ast.ClassDef) and any(w in outer.name.lower() for w in words)
        for outer in ctx.ancestors
    )


def _spot(node: ast.AST, ctx: Context) -> ast.expr | None:
    if isinstance(node, ast.Assign):
        if _other_accelerator(node.value) and any(
            "device" in ctx.segment(t).lower() for t in node.targets
        ):
            return node.value  # `device = "mps"`: a setting
        return None
    assert isinstance(node, ast.Call)
    # Cheap tests first: this runs on every call of every file.
    func = node.func
    method = func.attr if isinstance(func, ast.Attribute) else None
    if method in _METHODS and ctx.qualname(func) is None:
        return node  # `x.xpu()`
    args = node.args
    if args and isinstance(args[0], _LITERALS) and _other_accelerator(args[0]):
        if method == "to":
            return args[0]
        if ctx.qualname(func) == "torch.device":
            return node
    for kw in node.keywords:
        value = kw.value
        if kw.arg in _DEVICE_ARGS and isinstance(value, _LITERALS) and _other_accelerator(value):
            return value
    return None


def _named(spot: ast.expr) -> str | None:
    """The accelerator a spot found by :func:`_spot` names."""
    if isinstance(spot, ast.Call):
        if isinstance(spot.func, ast.Attribute) and spot.func.attr in _METHODS:
            return spot.func.attr  # `x.xpu()`
        return _other_accelerator(spot.args[0])  # `torch.device("xpu")`
    return _other_accelerator(spot)


def _probe(ctx: Context) -> bool:
    """Inside a ``try`` body with a handler: code that tries the device and copes without it."""
    child: ast.AST | None = None
    for outer in reversed(ctx.ancestors):
        if isinstance(outer, ast.Try) and outer.handlers and any(s is child for s in outer.body):
            return True
        if isinstance(outer, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return False
        child = outer
    return False
