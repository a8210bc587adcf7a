"""TP108 float64-to-accelerator: float64 tensors sent to a device that may be MPS."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import is_cpu_target, keyword, method_name
from torchport.check._rule import Example, Finding, Intent, Rule
from torchport.check.rules._float64_conversions import float64_of_device_tensor
from torchport.check.rules._test_code import collected_by_a_test_runner, leaves

_FLOAT64 = ("torch.float64", "torch.double")
_TAILS = frozenset(name.rpartition(".")[2] for name in _FLOAT64)


class Float64ToAccelerator(Rule):
    """## What it does
    Finds float64 data headed for a device: `dtype=torch.float64` together with
    `device=`, `.to(device, torch.float64)`, `.double().to(device)`,
    `.to(device).double()` and `.double().cuda()`; and float64 made of a tensor
    already on a device (`logits.to(torch.float64)`, `.double()`,
    `torch.rand_like(x, dtype=torch.float64)`), also in a helper whose callers in
    its module all hand it device tensors (`rules/_float64_conversions.py`).

    ## Why is this bad?
    Apple's MPS backend has no float64 and raises, and most GPUs run float64
    many times slower than float32. Keep float64 work on the CPU, or use
    float32 on the device.

    Left alone: test code (`rules/_test_code.py`) in a file that never names
    MPS, and a test that skips, before the float64 work, where float64 is
    missing (`_skip_if_dtype_unavailable(device, torch.float64)`, or `if
    device.type == "mps": pytest.skip(...)`). A test's device is the suite's
    choice; one that never names MPS runs its float64 on the CPU or CUDA,
    where it works, and float64 is often what the test checks. A test file
    that names MPS is reported as any code.
    """

    code = "TP108"
    name = "float64-to-accelerator"
    intent = Intent.DEVICE
    default = False  # under the 90% bar over samples A-Y: check/_default_scope.py
    message = "use float32 on the device (MPS has no float64) or keep the float64 work on the CPU"
    node_types = (ast.Call,)
    # `.to(...)`, `.double()`, `.cuda()`; any other call only with `device=`
    call_attrs = frozenset({"to", "double", "cuda"})
    call_keywords = frozenset({"device", "dtype"})
    valid = (
        "x = torch.zeros(3, dtype=torch.float64)\n",
        'x = y.double().to("cpu")\n',
        "x = y.float().to(device)\n",
        "import torch\n\nx = torch.ones(3)\np = x.to(torch.float64)\n",
    )
    invalid = (
        Example("import torch\n\nx = torch.zeros(3, dtype=torch.float64, device=device)\n"),
        Example("import torch\n\nx = y.to(device, torch.double)\nz = w.double().cuda()\n", count=2),
        Example("x = y.to(device).double()\n"),
        Example(
            "import torch\n\ndef noise(t):\n    return torch.rand_like(t, dtype=torch.float64)\n\n"
            "x = torch.ones(3, device=device)\np = noise(x.to(torch.float64))\n",
            count=2,
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        method = method_name(node)
        if method not in ("to", "double", "cuda") and not node.keywords:
            return  # the common case: no dtype= can be here
        if _float64_device_call(node, ctx) or float64_of_device_tensor(node, ctx):
            found = True
        elif method not in ("double", "cuda") or not isinstance(node.func, ast.Attribute):
            return
        else:
            receiver = node.func.value
            if not isinstance(receiver, ast.Call):
                return
            # `.to(device).double()`: converted after the move; `.double().cuda()`
            found = (method == "double" and _moves(receiver, ctx)) or (
                method == "cuda" and method_name(receiver) == "double"
            )
        if found and not _test_never_on_mps(ctx) and not _skipped_without_float64(node, ctx):
            yield ctx.finding(self, node)


def _test_never_on_mps(ctx: Context) -> bool:
    """Test code in a file that never names MPS: its tests do not run there.

    A test's device is the suite's choice (``rules/_test_code.py``); a suite that
    never names MPS runs its float64 on the CPU or CUDA, where float64 works, and
    float64 is often what such a test checks (gradients, tolerances). A file that
    names MPS (``"mps"``, ``torch.backends.mps``; not ``json.dumps``) may run the
    test there: reported.
    """
    if (ctx.mentions("mps") or ctx.mentions("MPS")) and _NAMES_MPS.search(ctx.source):
        return False
    return collected_by_a_test_runner(ctx)


def _skipped_without_float64(node: ast.Call, ctx: Context) -> bool:
    """Test code whose test, before ``node``, skips where float64 is missing.

    ``_skip_if_dtype_unavailable(device, torch.float64)`` (a call named for a skip
    that names float64) or ``if device.type == "mps": pytest.skip(...)`` (a test that
    names MPS and leaves), or a test a ``conftest.py`` above skips on MPS by its name
    (``rules/_conftest.py``): the float64 work never reaches MPS (kornia, sample M).
    """
    if not collected_by_a_test_runner(ctx):
        return False
    function = next(
        (
            a
            for a in reversed(ctx.ancestors)
            if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef))
        ),
        None,
    )
    if function is None:
        return False
    from torchport.check.rules._conftest import words_skipped_on_mps  # test code only

    if any(word in function.name.lower() for word in words_skipped_on_mps(ctx.path)):
        return True  # kornia's conftest skips every `*gradcheck*` test on MPS
    for stmt in function.body:
        if stmt.lineno >= node.lineno:
            return False
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            tail = _tail(stmt.value.func) or ""
            if "skip" in tail.lower() and any(map(_names_float64, stmt.value.args)):
                return True
        if (
            isinstance(stmt, ast.If)
            and _NAMES_MPS.search(ctx.segment(stmt.test))
            and leaves(stmt.body)
        ):
            return True
    return False


def _names_float64(expr: ast.expr) -> bool:
    return any(
        isinstance(n, ast.Attribute) and n.attr in ("float64", "double") for n in ast.walk(expr)
    )


# `"mps"`, `torch.backends.mps`, `has_mps`, `# MPS`: not `json.dumps`, `timestamps`
_NAMES_MPS = re.compile(r"(?<![A-Za-z])(mps|MPS)(?![a-z])")


def _moves(call: ast.Call, ctx: Context) -> bool:
    """``.cuda()``, or ``.to(target)`` with a target that is not plainly the CPU or a dtype."""
    method = method_name(call)
    if method == "cuda":
        return True
    if method != "to":
        return False
    targets = [*call.args[:1], *(kw.value for kw in call.keywords if kw.arg == "device")]
    return any(
        not is_cpu_target(t, ctx) and not (ctx.qualname(t) or "").startswith("torch.")
        for t in targets
    )


def _tail(expr: ast.expr) -> str | None:
    """``float64`` of ``torch.float64``: a sieve before asking what the name means."""
    if isinstance(expr, ast.Attribute):
        return expr.attr
    return expr.id if isinstance(expr, ast.Name) else None


def _float64_device_call(call: ast.Call, ctx: Context) -> bool:
    dtype_kw = keyword(call, "dtype")
    dtypes = [*call.args, *([dtype_kw.value] if dtype_kw else [])]
    if not any(_tail(d) in _TAILS and ctx.qualname(d) in _FLOAT64 for d in dtypes):
        if method_name(call) == "to" and isinstance(call.func, ast.Attribute):
            receiver = call.func.value  # `.double().to(device)`
            return (
                isinstance(receiver, ast.Call)
                and method_name(receiver) == "double"
                and _moves(call, ctx)
            )
        return False
    if method_name(call) == "to":
        return _moves(call, ctx)
    device_kw = keyword(call, "device")
    return device_kw is not None and not is_cpu_target(device_kw.value, ctx)
