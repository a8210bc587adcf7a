"""TP303 dataloader-without-pin-memory: a ``DataLoader`` feeding an accelerator, unpinned."""

from __future__ import annotations

import ast
import re
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

    Not reported where the batches are tiny: `batch_size=1` to `4` given as a
    number, or a dataset of text by its name (`text_ds`, `tokens`,
    `sentences`, `corpus`): a few token ids copy in microseconds, and pinning
    them only locks host memory. Nor is a loader a function binds to a name
    nothing in the file reads: its batches go nowhere. Nor is a loader whose
    dataset is built, in the same function, from data moved to or made on a
    device (`data = torch.tensor(v).to(f"cuda:{gpu}")`, then
    `DataLoader(IndexDataset(idx, data))`): its batches may be device tensors,
    which cannot be pinned (`pin_memory=True` raises for them).

    ## Fix safety
    The fix passes `pin_memory=torch.accelerator.is_available()`, so nothing
    changes on a CPU-only machine. Pinned memory is page-locked: very large
    batches or many workers use more of the host's locked memory.

    ## Why is it off by default?
    Under 90% real on the judged samples (13 of 18); `--extend-select TP303` runs it as before.
    """

    code = "TP303"
    name = "dataloader-without-pin-memory"
    intent = Intent.SPEED
    default = False
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
        "from torch.utils.data import DataLoader\n\n"
        "loader = DataLoader(train_tokens, batch_size=32)\nx = x.to(device)\n",
        "from torch.utils.data import DataLoader\n\n"
        "loader = DataLoader(ds, batch_size=1)\nx = x.to(device)\n",
        "from torch.utils.data import DataLoader\n\n\ndef main(ds):\n"
        "    unused = DataLoader(ds, batch_size=8)\n    model.to(device)\n",
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
        if in_tests(ctx) or _tiny(node):
            return  # a test's loader, or batches too small for pinning to matter
        if not _settled_loader_in_a_moving_file(node, ctx) or _never_read(node, ctx):
            return
        from torchport.check.rules._resident_datasets import dataset_may_be_on_a_device

        if dataset_may_be_on_a_device(node, ctx):
            return  # batches of device tensors: pinning them raises
        torch = ctx.torch_at(node)
        if torch is None:
            yield ctx.finding(self, node)  # torch is optional here: no `import torch` to add
            return
        text = f"pin_memory={torch[0]}.accelerator.is_available()"
        fix = Fix((add_keyword(node, text, ctx), *torch[1]), FixSafety.UNSAFE)
        yield ctx.finding(self, node, fix=fix)


def _settled_loader_in_a_moving_file(call: ast.Call, ctx: Context) -> bool:
    """No ``**kwargs`` that may hold ``pin_memory``, in a file that moves data to a device."""
    if any(k.arg is None for k in call.keywords):
        return False
    return ctx.mentions(".to(") or ctx.mentions(".cuda(")


def _never_read(call: ast.Call, ctx: Context) -> bool:
    """``loader = DataLoader(...)`` in a function, and no read of that name in the file."""
    parent = ctx.parent
    if not (isinstance(parent, ast.Assign) and len(parent.targets) == 1):
        return False
    target = parent.targets[0]
    in_function = any(isinstance(a, ast.FunctionDef | ast.AsyncFunctionDef) for a in ctx.ancestors)
    return in_function and isinstance(target, ast.Name) and not ctx.scopes.loads_of(target.id)


_TEXT = re.compile(r"text|token|sentence|corpus|vocab|caption|word|char|lang|nlp", re.IGNORECASE)
_TINY_BATCH = 4


def _tiny(call: ast.Call) -> bool:
    """A loader of a few samples per batch, or of text: pinning saves nothing there."""
    size = keyword(call, "batch_size")
    value = size.value if size is not None else (call.args[1] if len(call.args) > 1 else None)
    if (
        isinstance(value, ast.Constant)
        and isinstance(value.value, int)
        and value.value <= _TINY_BATCH
    ):
        return True
    data = call.args[0] if call.args else getattr(keyword(call, "dataset"), "value", None)
    while isinstance(data, ast.Call):
        data = data.func  # `TextDataset(...)`
    while isinstance(data, ast.Attribute):
        if _TEXT.search(data.attr):
            return True
        data = data.value
    return isinstance(data, ast.Name) and bool(_TEXT.search(data.id))
