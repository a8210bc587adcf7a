"""TP403 deprecated-cuda-amp: ``torch.cuda.amp.autocast`` / ``GradScaler``."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import called, in_old_torch_fallback
from torchport.check._rule import Edit, Example, Finding, Fix, FixSafety, Intent, Rule
from torchport.check.rules._amp_imports import old_torch_arm as _old_torch_arm
from torchport.check.rules._snippets import DEVICE_LINE
from torchport.check.rules._unused_imports import unused_imports
from torchport.check.semantic._placement import device_type_at

_AMP = {
    "torch.cuda.amp.autocast": "autocast",
    "torch.cuda.amp.autocast_mode.autocast": "autocast",
    "torch.cuda.amp.GradScaler": "GradScaler",
    "torch.cuda.amp.grad_scaler.GradScaler": "GradScaler",
}

_TAILS = frozenset(_AMP.values())
_MODULES = frozenset(
    {"torch.cuda.amp", "torch.cuda.amp.autocast_mode", "torch.cuda.amp.grad_scaler"}
)
_AUTOCAST_ORDER = ("enabled", "dtype", "cache_enabled")  # torch.cuda.amp.autocast's positions
_UNUSED = "remove the unused import from `torch.cuda.amp` (the calls now use `torch.amp`)"
_NEW = "torch.amp."
_SUBMODULES = frozenset({"torch.cuda.amp.autocast_mode", "torch.cuda.amp.grad_scaler"})
_REFERENCED = (
    "refer to `torch.amp.GradScaler` / `torch.amp.autocast` (and import from `torch.amp`): "
    "`torch.cuda.amp` is deprecated and CUDA-only"
)


class DeprecatedCudaAmp(Rule):
    """## What it does
    Finds `torch.cuda.amp.autocast(...)` and `torch.cuda.amp.GradScaler(...)`,
    references to them that are not calls (`isinstance(s, torch.cuda.amp.GradScaler)`,
    reported without a fix), imports from `torch.cuda.amp`'s submodules, and
    imports from `torch.cuda.amp` that nothing uses (what is left once the calls
    are rewritten; removing them is safe). A used import line is TP408's.

    ## Why is this bad?
    Both are deprecated (they warn on every call) and tie mixed precision to
    CUDA: on any other device autocast is silently off. `torch.amp.autocast`
    and `torch.amp.GradScaler` take the device type as their first argument.

    ## Fix safety
    The fix passes the type of the file's one device: `device.type` for a
    `torch.device`, `device` itself when it holds a type string (`"cuda"`).
    Where the old code ran without CUDA, autocast was a no-op; now it is on
    for that device (bfloat16 on the CPU by default), which changes the
    numerics there.
    """

    code = "TP403"
    name = "deprecated-cuda-amp"
    intent = Intent.DEVICE
    default = False  # under the 90% bar over samples A-Y: check/_default_scope.py
    message = "use `torch.amp.autocast(device.type)` / `torch.amp.GradScaler(device.type)`"
    fix_safety = FixSafety.UNSAFE
    node_types = (ast.Call, ast.Import, ast.ImportFrom, ast.Attribute)
    call_attrs = _TAILS
    attr_names = _TAILS
    valid = (
        "import torch\n\nwith torch.amp.autocast(device.type):\n    y = model(x)\n",
        "from torch.cuda.amp import autocast\n\nmixed = autocast  # used: kept\n",
        "import torch\n\ntry:\n    scaler = torch.amp.GradScaler(device.type)\n"
        "except (AttributeError, TypeError):  # torch < 2.3\n"
        "    scaler = torch.cuda.amp.GradScaler()\n",
    )
    invalid = (
        Example(
            "import torch\n"
            "\n"
            "scaler = torch.cuda.amp.GradScaler()\n"
            "with torch.cuda.amp.autocast(enabled=True):\n"
            "    y = model(x)\n",
            fixed="import torch\n"
            "\n"
            f"{DEVICE_LINE}"
            "\n"
            "scaler = torch.amp.GradScaler(device.type)\n"
            "with torch.amp.autocast(device.type, enabled=True):\n"
            "    y = model(x)\n",
            count=2,
        ),
        Example(
            "import torch\n"
            "from torch.cuda.amp import GradScaler, autocast  # amp\n"
            "import torch.cuda.amp as amp\n"
            "\n"
            "scaler = GradScaler\n",
            fixed="import torch\n"
            "from torch.cuda.amp import GradScaler  # amp\n"
            "\n"
            "scaler = GradScaler\n",
            count=2,
        ),
        Example("import torch\n\nok = isinstance(s, torch.cuda.amp.GradScaler)\n"),
        Example("from torch.cuda.amp.grad_scaler import OptState\n"),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        if isinstance(node, ast.Attribute):
            # `isinstance(s, torch.cuda.amp.GradScaler)`: referenced, not called
            if _refers_to_old_amp(node, ctx) and not _old_torch_arm(ctx):
                yield ctx.finding(self, node, message=_REFERENCED)
        elif _imports_from_an_old_amp_submodule(node):
            if not _old_torch_arm(ctx):  # `from torch.cuda.amp.grad_scaler import ...`
                yield ctx.finding(self, node, message=_REFERENCED)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            yield from unused_imports(self, node, ctx, _MODULES, _UNUSED)
        else:
            assert isinstance(node, ast.Call)
            found = _old_amp_call(self, node, ctx)
            if found is not None:
                yield found


def _refers_to_old_amp(node: ast.Attribute, ctx: Context) -> bool:
    """``torch.cuda.amp.GradScaler`` named without being called here."""
    parent = ctx.parent
    called_here = isinstance(parent, ast.Call) and parent.func is node
    return not called_here and ctx.qualname(node) in _AMP


def _imports_from_an_old_amp_submodule(node: ast.AST) -> bool:
    """``from torch.cuda.amp.<submodule> import ...``."""
    return isinstance(node, ast.ImportFrom) and not node.level and node.module in _SUBMODULES


def _old_amp_call(rule: Rule, node: ast.Call, ctx: Context) -> Finding | None:
    """The finding for a call of ``torch.cuda.amp.*``, fixed to ``torch.amp`` where it can be."""
    name = called(node, ctx, _TAILS)
    if name is None or name not in _AMP or _old_torch_arm(ctx):
        return None
    if in_old_torch_fallback(ctx, lambda c: (ctx.qualname(c.func) or "").startswith(_NEW)):
        return None  # `try: torch.amp.GradScaler(...) except AttributeError: <old spelling>`
    # `device.type` for a torch.device, `device` itself for a string such as "cuda"
    found, torch = device_type_at(ctx, node), ctx.torch_at(node)
    if found is None or torch is None:
        return ctx.finding(rule, node)  # no device or torch name is safe here: by hand
    kind = _AMP[name]
    if _arguments_cannot_be_renamed(node, kind):
        return ctx.finding(rule, node)  # arguments the new order cannot be told for
    device_type, edits = found
    func = ctx.replace(node.func, f"{torch[0]}.amp.{kind}")
    named, add = _device_type_first(node, kind, device_type, ctx)
    fix = Fix((func, add, *named, *(edits or torch[1])), FixSafety.UNSAFE, _ON_ELSEWHERE)
    return ctx.finding(rule, node, fix=fix)


def _arguments_cannot_be_renamed(node: ast.Call, kind: str) -> bool:
    """``*args``, or more positional arguments than ``autocast`` has names for."""
    if any(isinstance(a, ast.Starred) for a in node.args):
        return True
    return kind == "autocast" and len(node.args) > len(_AUTOCAST_ORDER)


def _device_type_first(
    node: ast.Call, kind: str, device_type: str, ctx: Context
) -> tuple[list[Edit], Edit]:
    """The edits that name the old positional arguments and put the device type first.

    ``torch.cuda.amp.autocast(enabled, dtype, cache_enabled)`` but
    ``torch.amp.autocast(device_type, dtype, enabled, cache_enabled)``: name them.
    """
    names = _AUTOCAST_ORDER[: len(node.args)] if kind == "autocast" else ()
    named = [
        Edit(start, start, f"{k}=")
        for i, k in enumerate(names)
        if i and (start := ctx.argument_start(node, i))
    ]
    at = ctx.argument_start(node, 0)  # right after `(`, before a first argument's parentheses
    first = f"{names[0]}=" if names else ""  # one insertion there: with the type
    given = bool(node.args or node.keywords)
    return named, Edit(at, at, f"{device_type}, {first}" if given else device_type)


_ON_ELSEWHERE = (
    "mixed precision now runs on MPS/XPU/CPU too, where the old call was a no-op: "
    "numerics change there"
)
