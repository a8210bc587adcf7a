"""TP305 load-with-unpacked-arguments: ``torch.load(path, **kwargs)``."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._rule import Example, Finding, Intent, Rule
from torchport.check.rules._loading import explicit_weights_only, is_load, unpacks


class LoadWithUnpackedArguments(Rule):
    """## What it does
    Finds `torch.load` calls that pass `*args` or `**kwargs` without an explicit
    `weights_only=True`.

    ## Why is this bad?
    Unpacked arguments can carry `weights_only=False` or a `pickle_module`
    (which turns `weights_only` off), so whether this load runs the code inside
    a checkpoint is decided somewhere else, often by a config file or a
    caller. Reviewers and this checker cannot see it. Passing
    `weights_only=True` at the call keeps the load safe whatever the unpacked
    arguments say (a conflicting `pickle_module` then fails loudly).
    """

    code = "TP305"
    name = "load-with-unpacked-arguments"
    intent = Intent.SAFETY
    message = (
        "pass `weights_only=True` explicitly: unpacked `*args`/`**kwargs` may carry "
        "`weights_only=False` or a `pickle_module`, which run any code in the file"
    )
    node_types = (ast.Call,)
    valid = (
        "import torch\n\nstate = torch.load(path, weights_only=True, **load_kwargs)\n",
        'import torch\n\nstate = torch.load(path, map_location="cpu")\n',
        "import json\n\ncfg = json.load(fh, **options)\n",
    )
    invalid = (
        Example("import torch\n\nstate = torch.load(path, **load_kwargs)\n"),
        Example("import torch\n\nstate = torch.load(*args)\n"),
        Example("from torch import load\n\nstate = load(path, map_location=dev, **kw)\n"),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        if unpacks(node) and explicit_weights_only(node) is not True and is_load(node, ctx):
            yield ctx.finding(self, node)
