"""TP309 whole-model-save: ``torch.save(model, path)`` instead of its ``state_dict()``."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import called
from torchport.check._rule import Example, Finding, Intent, Rule
from torchport.check.rules._loading import whole_module

_SAVE = frozenset({"save"})


class WholeModelSave(Rule):
    """## What it does
    Finds `torch.save` of a whole module (`torch.save(model, path)`, or a module
    inside the saved dict: `torch.save({"model": model}, path)`).

    ## Why is this bad?
    A whole module is pickled as its class: loading it back needs that class
    importable under the same module path, and, since PyTorch 2.6, either
    `weights_only=False` (which lets the file run any code) or allowing the
    class with `torch.serialization.add_safe_globals`. A `state_dict()` holds
    tensors only: it loads with the safe default anywhere, into whatever model
    code you have then.
    """

    code = "TP309"
    name = "whole-model-save"
    intent = Intent.SAFETY
    default = False  # by decision: check/_default_scope.LEFT_OFF
    message = (
        "pass `model.state_dict()` to `torch.save`: a whole pickled module loads only with "
        "`weights_only=False` or allow-listed classes"
    )
    node_types = (ast.Call,)
    call_attrs = _SAVE
    valid = (
        "import torch\n\ntorch.save(model.state_dict(), path)\n",
        'import torch\n\ntorch.save({"model": model.state_dict(), "epoch": epoch}, path)\n',
        "import torch\n\ntorch.save(model_state, path)\n",
        "import numpy as np\n\nnp.save(path, model)\n",
    )
    invalid = (
        Example("import torch\n\ntorch.save(model, path)\n"),
        Example('import torch\n\ntorch.save({"model": self.net, "epoch": epoch}, path)\n'),
        Example("import torch\n\nnet = Net()\ntorch.save(obj=net, f=path)\n"),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        if called(node, ctx, _SAVE) != "torch.save":  # first: rules out almost every call
            return
        saved = _saved_object(node)
        culprit = None if saved is None else _whole_module_saved(saved, ctx)
        if culprit is not None:
            yield ctx.finding(self, culprit)


def _whole_module_saved(saved: ast.expr, ctx: Context) -> ast.expr | None:
    """The whole ``nn.Module`` saved: ``saved`` itself, or the first value of a dict literal."""
    values = saved.values if isinstance(saved, ast.Dict) else [saved]
    return next((v for v in values if v is not None and whole_module(v, ctx)), None)


def _saved_object(call: ast.Call) -> ast.expr | None:
    """What ``torch.save`` is given to save: its first argument, or ``obj=`` (the last one wins)."""
    saved = call.args[0] if call.args else None
    for kw in call.keywords:
        if kw.arg == "obj":
            saved = kw.value
    return saved
