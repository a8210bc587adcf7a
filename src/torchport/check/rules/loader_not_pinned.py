"""TP505 loader-not-pinned: a DataLoader feeding a ported model, without ``pin_memory``."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import add_keyword, keyword
from torchport.check._rule import Example, Finding, Fix, FixSafety, Intent, Rule
from torchport.check.rules._port import port_facts

_DATALOADER = ("torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader")
_HEAD = "import torch\nfrom torch.utils.data import DataLoader\n\nmodel = torch.nn.Linear(4, 2)\n"


class LoaderNotPinned(Rule):
    """## What it does
    Finds `DataLoader(...)` calls without `pin_memory` in a file the port
    moves a model in (the loader's batches are about to be copied to the
    accelerator every step).

    ## Why is this bad?
    Copies from ordinary (pageable) host memory go through a staging buffer
    and cannot overlap compute, so the `non_blocking=True` copies the port
    writes would wait anyway. The fix passes
    `pin_memory=torch.accelerator.is_available()`: pinned batches on a
    machine with an accelerator, and nothing changes on one without.
    """

    code = "TP505"
    name = "loader-not-pinned"
    intent = Intent.PORT
    default = False
    message = "pass `pin_memory=torch.accelerator.is_available()` to loaders feeding the model"
    fix_safety = FixSafety.SAFE
    node_types = (ast.Call,)
    call_attrs = frozenset({"DataLoader"})
    valid = (
        _HEAD + "loader = DataLoader(ds, pin_memory=True)\n",
        "from torch.utils.data import DataLoader\n\nloader = DataLoader(ds)\n",
    )
    invalid = (
        Example(
            _HEAD + "loader = DataLoader(ds, batch_size=8)  # train\n",
            fixed=_HEAD + "loader = DataLoader(ds, batch_size=8, "
            "pin_memory=torch.accelerator.is_available())  # train\n",
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        if not _makes_a_dataloader(node, ctx) or _pinning_given_or_hidden(node):
            return
        if not _in_user_code_with_models(node, ctx):
            return
        found = ctx.torch_at(node)
        fix = None
        if found is not None:
            text = f"pin_memory={found[0]}.accelerator.is_available()"
            fix = Fix((add_keyword(node, text, ctx), *found[1]), FixSafety.SAFE)
        yield ctx.finding(self, node, fix=fix)


def _makes_a_dataloader(call: ast.Call, ctx: Context) -> bool:
    """``DataLoader(...)``, torch's, by whatever import."""
    func = call.func
    tail = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return tail == "DataLoader" and ctx.qualname(func) in _DATALOADER


def _pinning_given_or_hidden(call: ast.Call) -> bool:
    """``pin_memory`` is given, or may be inside a ``**kwargs``."""
    return keyword(call, "pin_memory") is not None or any(k.arg is None for k in call.keywords)


def _in_user_code_with_models(call: ast.Call, ctx: Context) -> bool:
    """The call sits in a scope the port reaches (not internal), in a file that builds models."""
    facts = port_facts(ctx)
    scope = facts.scope_of.get(id(call))
    return scope is not None and not scope.internal and facts.has_models
