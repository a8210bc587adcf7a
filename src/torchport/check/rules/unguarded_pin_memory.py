"""TP205 unguarded-pin-memory: ``buf.pin_memory()`` on every machine, accelerator or not."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import TENSOR_FACTORIES
from torchport.check._rule import Example, Finding, Fix, FixSafety, Intent, Rule
from torchport.check.rules._test_code import benchmark_code, collected_by_a_test_runner
from torchport.check.semantic._guards import device_guard

# Calls whose result is a new tensor no other name holds: without pinning, the
# fix's other arm hands that same fresh tensor on, so nothing is shared that was not.
_FRESH = (TENSOR_FACTORIES - {"torch.as_tensor"}) | frozenset(
    f"torch.{n}"
    for n in ("stack", "cat", "zeros_like", "ones_like", "empty_like", "full_like",
              "rand_like", "randn_like")
)  # fmt: skip
# Words of a test that hands the pinning decision to a caller (`if self.pin_memory:`).
_CALLER_DECIDES = ("pin", "non_blocking")


class UnguardedPinMemory(Rule):
    """## What it does
    Finds `Tensor.pin_memory()` called on every machine: `buf = torch.empty(n).pin_memory()`,
    `frame.clone().pin_memory()`, `x.pin_memory().to(device, non_blocking=True)`. Left
    alone: a call under a device check (`if torch.cuda.is_available():`, `if
    device.type == "cuda":`, `if torch.accelerator.is_available():`), under a test of
    the caller's pinning flag (`if self.pin_memory:`, `if non_blocking:`), inside a
    function named for pinning (`def pin_memory(self)`, the batch protocol
    `DataLoader(pin_memory=True)` calls only where it pins; a loader's
    `pin_memory_batch(batch)`), on `self`, and in test or benchmark code.

    ## Why is this bad?
    Pinning page-locks host memory for an accelerator's copy engine. On a machine
    with no accelerator it raises `RuntimeError: Cannot access accelerator device when
    none is available` (torch 2.6 to 2.13, the CPU build and the CUDA build without a
    GPU alike), so the program dies on the CPU where its `.to(device)` would have
    worked. Pin only where there is an accelerator; `DataLoader(pin_memory=...)`,
    by contrast, only warns and leaves the batch unpinned.

    The fix writes `buf.pin_memory() if torch.accelerator.is_available() else buf`
    where `buf` is a new tensor (a factory call, `torch.stack`/`cat`, `.clone()`):
    with an accelerator nothing changes, without one the unpinned tensor is used,
    where the call raised. Any other receiver is reported without a fix: the
    unpinned arm would hand on a tensor other names hold, where pinning made a
    copy, and writes to one would then show in the other.

    ## Why is it off by default?
    New (held-out recall round 5g), not yet judged on a precision sample.
    `--extend-select TP205` runs it.
    """

    code = "TP205"
    name = "unguarded-pin-memory"
    intent = Intent.DEVICE
    default = False
    default_contexts = frozenset({"code"})
    message = (
        "call `pin_memory()` only where there is an accelerator (without one it raises): "
        "`x.pin_memory() if torch.accelerator.is_available() else x`"
    )
    fix_safety = FixSafety.SAFE
    node_types = (ast.Call,)
    call_attrs = frozenset({"pin_memory"})
    valid = (
        "import torch\n\nif torch.cuda.is_available():\n    buf = torch.empty(8).pin_memory()\n",
        "import torch\n\nbuf = torch.empty(8)\nif torch.accelerator.is_available():\n"
        "    buf = buf.pin_memory()\n",
        'import torch\n\nif device.type == "cuda":\n'
        "    x = x.pin_memory().to(device, non_blocking=True)\n",
        "import torch\n\nif self.pin_memory:\n    batch = batch.pin_memory()\n",
        "import torch\n\n\nclass Batch:\n    def pin_memory(self):\n"
        "        self.x = self.x.pin_memory()\n        return self\n",
        "import torch\n\nloader = torch.utils.data.DataLoader(ds, pin_memory=True)\n",
    )
    invalid = (
        Example(
            "import torch\n\nbuf = torch.ones(3, 4, dtype=torch.uint8).pin_memory()\n",
            fixed="import torch\n\nbuf = torch.ones(3, 4, dtype=torch.uint8).pin_memory() "
            "if torch.accelerator.is_available() else torch.ones(3, 4, dtype=torch.uint8)\n",
        ),
        Example(
            "import torch as th\n\nx = frame.clone().pin_memory().to(device, non_blocking=True)\n",
            fixed="import torch as th\n\nx = (frame.clone().pin_memory() if "
            "th.accelerator.is_available() else frame.clone()).to(device, non_blocking=True)\n",
        ),
        Example("import torch\n\nx = x.pin_memory().to(device, non_blocking=True)\n"),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        func = node.func
        if not isinstance(func, ast.Attribute) or func.attr != "pin_memory":
            return
        if isinstance(func.value, ast.Name) and func.value.id == "self":
            return  # an object's own `pin_memory`: whose it is, the class says
        if _left_to_a_caller(ctx) or device_guard(node, ctx) is not None:
            return
        if collected_by_a_test_runner(ctx) or benchmark_code(ctx):
            return  # a test or benchmark of pinning (`rules/_test_code.py`)
        yield ctx.finding(self, node, fix=_fix(node, func.value, ctx))


def _fix(node: ast.Call, receiver: ast.expr, ctx: Context) -> Fix | None:
    """``recv.pin_memory() if torch.accelerator.is_available() else recv``, for a new ``recv``."""
    if not _fresh(receiver, ctx):
        return None
    torch = ctx.torch_at(node)
    if torch is None:
        return None
    available = f"{torch[0]}.accelerator.is_available()"
    text = f"{ctx.segment(node)} if {available} else {ctx.segment(receiver)}"
    parent = ctx.parent
    whole = isinstance(parent, (ast.Assign, ast.AnnAssign, ast.Return)) and parent.value is node
    return Fix((ctx.replace(node, text if whole else f"({text})"), *torch[1]), FixSafety.SAFE)


def _fresh(receiver: ast.expr, ctx: Context) -> bool:
    """A call that makes a new tensor: a torch factory, or ``.clone()`` of anything."""
    if not isinstance(receiver, ast.Call):
        return False
    func = receiver.func
    if isinstance(func, ast.Attribute) and func.attr == "clone" and not receiver.args:
        return True
    return ctx.qualname(func) in _FRESH


def _left_to_a_caller(ctx: Context) -> bool:
    """Inside a function named for pinning, or under a test of a pinning flag.

    ``def pin_memory(self)`` of a batch class, a loader's ``pin_memory_batch(batch)`` or
    ``_pin_memory_loop``: called only where the caller chose to pin.
    """
    for outer in reversed(ctx.ancestors):
        if isinstance(outer, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if "pin" in outer.name:
                return True
        elif isinstance(outer, (ast.If, ast.IfExp, ast.While)):
            test = ctx.segment(outer.test)
            if any(word in test for word in _CALLER_DECIDES):
                return True
    return False
