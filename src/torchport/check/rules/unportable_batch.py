"""TP520 unportable-batch: a batch reaches the model in a shape the port cannot move."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._rule import Example, Finding, Intent, Rule

_HEAD = (
    "import torch\nfrom torch.utils.data import DataLoader\n\n"
    "model = torch.nn.Linear(4, 2)\nloader = DataLoader(dataset)\n"
)


class UnportableBatch(Rule):
    """## What it does
    Reports the batches and arguments that reach the model but that
    `torchport port` could not move: objects built by a custom `collate_fn`
    that have no `.to()` method; batches used both whole and indexed by
    number, whose structure (tensor or list of tensors) cannot be told from
    the source; and values the port cannot tell are tensors at all: the
    parameters of a function called from elsewhere (a test's pytest
    parameters, a callback's arguments), items of an iterable it cannot see
    into.

    ## Why is this bad?
    Such a batch reaches the model on the CPU after the model has moved to
    the accelerator, and the first forward fails. A port that moved only some
    of it would fail in the same way, later, and one that called `.to()` on a
    float or a string would break a program that worked; the port leaves it
    as it is and says so, so that the one line it needs is written by someone
    who knows what the value holds.
    """

    code = "TP520"
    name = "unportable-batch"
    intent = Intent.PORT
    default = False
    message = "move this batch's tensors to `device` yourself: its structure is not visible"
    node_types = (ast.Module,)  # the batch plan is made once per file
    valid = (
        _HEAD + "for x, y in loader:\n    out = model(x)\n",
        _HEAD + "def scale(net, gamma):\n    return net(gamma)\n\nscale(model, 0.5)\n",
        # a forward that moves its input to its own parameters' device takes it as it is
        "import torch\n\nclass Net(torch.nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.l1 = torch.nn.Linear(4, 2)\n\n"
        "    def forward(self, x):\n"
        "        return self.l1(x.to(next(self.parameters()).device))\n\n"
        "policy = Net()\n\ndef act(s):\n    return policy(s)\n",
    )
    invalid = (
        Example(
            _HEAD + "for batch in loader:\n    out = model(batch)\n    y = batch[1]\n",
        ),
        Example(
            _HEAD + "for batch in loader:\n    out = model(batch['x'], **batch['extra'])\n",
        ),
        Example(
            _HEAD + "from torch.utils.data import DataLoader\n\n"
            "class Batch:\n"
            "    def __init__(self, items):\n"
            "        self.x = torch.stack(items)\n\n"
            "def collate(items):\n    return Batch(items)\n\n"
            "loader = DataLoader(ds, collate_fn=collate)\n"
            "for batch in loader:\n    out = model(batch)\n",
        ),
        Example(_HEAD + "def test_forward(model, x):\n    assert model(x).shape\n"),
        Example(_HEAD + "for x in load_items():\n    out = model(x)\n"),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        from torchport.check.port._batches import batch_plan

        for where, why in batch_plan(ctx).unportable.values():
            yield ctx.finding(self, where, message=why)
