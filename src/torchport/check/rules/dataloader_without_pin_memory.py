"""TP303 dataloader-without-pin-memory: a ``DataLoader`` feeding an accelerator, unpinned."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import add_keyword, called, in_tests, keyword
from torchport.check._rule import Example, Finding, Fix, FixSafety, Intent, Rule

_DATALOADER = ("torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader")
_TAILS = frozenset({"DataLoader"})


class DataloaderWithoutPinMemory(Rule):
    """## What it does
    Finds `DataLoader(...)` without `pin_memory` in a file that moves data to a
    device (`.to(...)` or `.cuda(...)`).

    ## Why is this bad?
    Copies from ordinary (pageable) host memory go through a staging buffer and
    cannot overlap compute; `non_blocking=True` is then silently synchronous.
    Pinned batches copy at full link speed and asynchronously.

    ## Fix safety
    The fix passes `pin_memory=torch.accelerator.is_available()`, so nothing
    changes on a CPU-only machine. Pinned memory is page-locked: very large
    batches or many workers use more of the host's locked memory.
    """

    code = "TP303"
    name = "dataloader-without-pin-memory"
    intent = Intent.SPEED
    message = (
        "pass `pin_memory=torch.accelerator.is_available()` to loaders whose batches go to a device"
    )
    fix_safety = FixSafety.UNSAFE
    node_types = (ast.Call,)
    call_attrs = _TAILS
    valid = (
        "from torch.utils.data import DataLoader\n\nloader = DataLoader(ds, batch_size=8)\n",
        "from torch.utils.data import DataLoader\n\n"
        "loader = DataLoader(ds, pin_memory=True)\nx = x.to(device)\n",
    )
    invalid = (
        Example(
            "from torch.utils.data import DataLoader\n"
            "\n"
            "loader = DataLoader(ds, batch_size=8)\n"
            "for x in loader:\n"
            "    x = x.to(device)\n",
            fixed="import torch\n"
            "from torch.utils.data import DataLoader\n"
            "\n"
            "loader = DataLoader(ds, batch_size=8, pin_memory=torch.accelerator.is_available())\n"
            "for x in loader:\n"
            "    x = x.to(device)\n",
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        if called(node, ctx, _TAILS) not in _DATALOADER or keyword(node, "pin_memory") is not None:
            return
        if in_tests(ctx):
            return  # a test's loader: speed is not what it is for
        if any(k.arg is None for k in node.keywords) or not (
            ctx.mentions(".to(") or ctx.mentions(".cuda(")
        ):
            return
        torch = ctx.torch_at(node)
        if torch is None:
            yield ctx.finding(self, node)  # torch is optional here: no `import torch` to add
            return
        text = f"pin_memory={torch[0]}.accelerator.is_available()"
        fix = Fix((add_keyword(node, text, ctx), *torch[1]), FixSafety.UNSAFE)
        yield ctx.finding(self, node, fix=fix)
