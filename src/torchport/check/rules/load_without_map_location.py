"""TP301 load-without-map-location: ``torch.load(path)`` without ``map_location``."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import add_keyword, called, keyword
from torchport.check._rule import Example, Finding, Fix, FixSafety, Intent, Rule
from torchport.check.rules._loading import LOADS
from torchport.check.rules._snippets import DEVICE_LINE

_LOAD = frozenset({"load"})


class LoadWithoutMapLocation(Rule):
    """## What it does
    Finds `torch.load(...)` calls that do not pass `map_location`.

    ## Why is this bad?
    Without `map_location`, tensors are restored to the device they were saved
    from. A checkpoint written on a GPU then fails to load on a CPU-only or
    Apple machine ("Attempting to deserialize object on a CUDA device"), and
    one written on `cuda:3` lands on GPU 3 of every process.

    ## Fix safety
    The fix loads onto the module's `device`. Where the checkpoint used to be
    restored on a specific GPU (`cuda:3`) it now lands on the current one.
    """

    code = "TP301"
    name = "load-without-map-location"
    intent = Intent.DEVICE
    message = 'pass `map_location=device` (or `"cpu"`) so checkpoints load on any machine'
    fix_safety = FixSafety.UNSAFE
    node_types = (ast.Call,)
    valid = (
        'import torch\n\nstate = torch.load("ckpt.pt", map_location="cpu")\n',
        "import torch\n\nstate = torch.load(path, device)\n",
    )
    invalid = (
        Example(
            'import torch\n\nstate = torch.load("ckpt.pt", weights_only=True)\n',
            fixed="import torch\n\n"
            f"{DEVICE_LINE}"
            "\n"
            'state = torch.load("ckpt.pt", weights_only=True, map_location=device)\n',
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        if called(node, ctx, _LOAD) not in LOADS or len(node.args) > 1:
            return
        if keyword(node, "map_location") is not None or any(k.arg is None for k in node.keywords):
            return
        found = ctx.device_at(node)
        if found is None:
            yield ctx.finding(self, node)  # no name is safely the device here: by hand
            return
        name, edits = found
        add = add_keyword(node, f"map_location={name}", ctx)
        yield ctx.finding(self, node, fix=Fix((add, *edits), FixSafety.UNSAFE, _MAPPED))


_MAPPED = (
    "tensors saved on a specific GPU (`cuda:3`) now load on the current accelerator, "
    "and tensors saved on the CPU load on the accelerator too"
)
