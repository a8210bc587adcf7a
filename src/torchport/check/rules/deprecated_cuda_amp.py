"""TP403 deprecated-cuda-amp: ``torch.cuda.amp.autocast`` / ``GradScaler``."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import called
from torchport.check._rule import Edit, Example, Finding, Fix, FixSafety, Intent, Rule
from torchport.check.rules._snippets import DEVICE_LINE
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


class DeprecatedCudaAmp(Rule):
    """## What it does
    Finds `torch.cuda.amp.autocast(...)` and `torch.cuda.amp.GradScaler(...)`,
    and imports from `torch.cuda.amp` that nothing uses (what is left once the
    calls are rewritten; removing them is safe).

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
    message = "use `torch.amp.autocast(device.type)` / `torch.amp.GradScaler(device.type)`"
    fix_safety = FixSafety.UNSAFE
    node_types = (ast.Call, ast.Import, ast.ImportFrom)
    call_attrs = _TAILS
    valid = (
        "import torch\n\nwith torch.amp.autocast(device.type):\n    y = model(x)\n",
        "from torch.cuda.amp import autocast\n\nmixed = autocast  # used: kept\n",
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
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield from _unused_import(self, node, ctx)
            return
        assert isinstance(node, ast.Call)
        name = called(node, ctx, _TAILS)
        if name is None or name not in _AMP:
            return
        # `device.type` for a torch.device, `device` itself for a string such as "cuda"
        found, torch = device_type_at(ctx, node), ctx.torch_at(node)
        if found is None or torch is None:
            yield ctx.finding(self, node)  # no device or torch name is safe here: by hand
            return
        device_type, edits = found
        kind = _AMP[name]
        func = ctx.replace(node.func, f"{torch[0]}.amp.{kind}")
        if any(isinstance(a, ast.Starred) for a in node.args) or (
            kind == "autocast" and len(node.args) > len(_AUTOCAST_ORDER)
        ):
            yield ctx.finding(self, node)  # arguments the new order cannot be told for
            return
        # `torch.cuda.amp.autocast(enabled, dtype, cache_enabled)` but
        # `torch.amp.autocast(device_type, dtype, enabled, cache_enabled)`: name them.
        names = _AUTOCAST_ORDER[: len(node.args)] if kind == "autocast" else ()
        named = [
            Edit(start, start, f"{k}=")
            for i, k in enumerate(names)
            if i and (start := ctx.argument_start(node, i))
        ]
        at = ctx.argument_start(node, 0)  # right after `(`, before a first argument's parentheses
        first = f"{names[0]}=" if names else ""  # one insertion there: with the type
        given = bool(node.args or node.keywords)
        add = Edit(at, at, f"{device_type}, {first}" if given else device_type)
        if not edits:
            edits = torch[1]
        fix = Fix((func, add, *named, *edits), FixSafety.UNSAFE, _ON_ELSEWHERE)
        yield ctx.finding(self, node, fix=fix)


_ON_ELSEWHERE = (
    "mixed precision now runs on MPS/XPU/CPU too, where the old call was a no-op: "
    "numerics change there"
)


def _unused_import(
    rule: Rule, node: ast.Import | ast.ImportFrom, ctx: Context
) -> Iterator[Finding]:
    """Names imported from ``torch.cuda.amp`` that nothing reads: removed (a safe fix)."""
    if isinstance(node, ast.ImportFrom):
        if node.level or node.module not in _MODULES or any(a.name == "*" for a in node.names):
            return
    elif not any(a.name in _MODULES and a.asname for a in node.names):
        return  # `import torch.cuda.amp` binds `torch` itself
    aliases = node.names
    unused = [
        a
        for a in aliases
        if (isinstance(node, ast.ImportFrom) or (a.name in _MODULES and a.asname))
        and not _read(a.asname or a.name, ctx)
    ]
    if not unused:
        return
    kept = [a for a in aliases if a not in unused]
    fix = None
    if kept:
        if node.lineno == node.end_lineno and ctx.owns_lines(node):
            names = ", ".join(ast.unparse(a) for a in kept)
            head = f"from {node.module} import " if isinstance(node, ast.ImportFrom) else "import "
            fix = Fix((ctx.replace(node, head + names),), FixSafety.SAFE)
    else:
        fix = Fix((_remove(node, ctx),), FixSafety.SAFE)
    yield ctx.finding(rule, node, message=_UNUSED, fix=fix)


def _read(name: str, ctx: Context) -> bool:
    """Whether any scope reads ``name``, or a string names it (``__all__``): then it stays."""
    scopes = ctx.scopes
    if any(name in scope.reads for scope in scopes.scopes.values()):
        return True
    return ctx.mentions(f'"{name}"') or ctx.mentions(f"'{name}'")


def _remove(node: ast.stmt, ctx: Context) -> Edit:
    """Delete ``node``: its lines when it has them to itself and is not alone in its block."""
    parent = ctx.scopes.parent(node)
    block = next(
        (
            b
            for f in ("body", "orelse", "finalbody", "handlers")
            if isinstance(b := getattr(parent, f, None), list) and any(s is node for s in b)
        ),
        [],
    )
    if len(block) > 1 and ctx.owns_lines(node):
        starts = ctx._line_starts()
        last = node.end_lineno or node.lineno
        end = starts[last + 1] if last + 1 < len(starts) else len(ctx.source)
        return Edit(starts[node.lineno], end, "")
    return ctx.replace(node, "pass")  # a statement stays where one is needed
