"""TP308 whole-model-load: ``model = torch.load(path)`` of a whole pickled module."""

from __future__ import annotations

import ast
import weakref
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import in_old_torch_fallback
from torchport.check._rule import Example, Finding, Intent, Rule
from torchport.check.rules._loading import (
    LOAD_ATTRS,
    explicit_weights_only,
    is_load,
    whole_module,
)

# Methods only a module has: `torch.load(p).eval()` loaded a module, not a tensor.
_MODULE_METHODS = frozenset(
    {"eval", "train", "parameters", "named_parameters", "modules", "named_modules",
     "children", "forward", "zero_grad", "apply", "register_forward_hook"}
)  # fmt: skip
_SAFE_GLOBALS = frozenset({"torch.serialization.safe_globals"})


def _under_safe_globals(ctx: Context) -> bool:
    """Inside ``with torch.serialization.safe_globals([...]):``, the classes are allowed."""
    for node in ctx.ancestors:
        if isinstance(node, ast.With | ast.AsyncWith):
            for item in node.items:
                expr = item.context_expr
                if isinstance(expr, ast.Call) and ctx.qualname(expr.func) in _SAFE_GLOBALS:
                    return True
    return False


def _used_as_module(name: str, ctx: Context) -> bool:
    """Whether the enclosing function (or module) calls a module-only method on ``name``.

    Each body is walked once per file, whatever the number of loads in it.
    """
    body: ast.AST | None = next(
        (
            a
            for a in reversed(ctx.ancestors)
            if isinstance(a, ast.FunctionDef | ast.AsyncFunctionDef)
        ),
        ctx.ancestors[0] if ctx.ancestors else None,
    )
    if body is None:
        return False
    known = _MODULE_USERS.get(ctx)
    if known is None:
        known = _MODULE_USERS[ctx] = {}
    users = known.get(id(body))
    if users is None:
        users = known[id(body)] = {
            node.value.id
            for node in ast.walk(body)
            if isinstance(node, ast.Attribute)
            and node.attr in _MODULE_METHODS
            and isinstance(node.value, ast.Name)
        }
    return name in users


# Per file: id(function or module) -> the names a module-only method is called on.
_MODULE_USERS: weakref.WeakKeyDictionary[Context, dict[int, set[str]]] = weakref.WeakKeyDictionary()


class WholeModelLoad(Rule):
    """## What it does
    Finds `torch.load` calls without `weights_only` whose result is used as a
    whole module: `model = torch.load(path)`, `torch.load(path).eval()`.

    ## Why is this bad?
    A whole pickled module is a custom class: since PyTorch 2.6, `torch.load`
    defaults to `weights_only=True` and refuses it ("Weights only load
    failed ... Unsupported global"). The tempting repair, `weights_only=False`,
    lets the file run any code. Save and load the `state_dict` instead
    (`model.load_state_dict(torch.load(path, weights_only=True))`), or, for a
    checkpoint you must keep, allow just its classes with
    `torch.serialization.add_safe_globals([MyNet])` or
    `with torch.serialization.safe_globals([MyNet]):` around the load.

    ## Why is it off by default?
    Under 90% real on the judged samples (8 of 9); `--extend-select TP308` runs it as before.
    """

    code = "TP308"
    name = "whole-model-load"
    intent = Intent.SAFETY
    default = False
    message = (
        "load a `state_dict` into a built model (`model.load_state_dict(torch.load(path, "
        "weights_only=True))`), or allow the model's classes with "
        "`torch.serialization.safe_globals`: whole-model loads fail since PyTorch 2.6"
    )
    node_types = (ast.Call,)
    call_attrs = LOAD_ATTRS
    valid = (
        "import torch\n\nmodel.load_state_dict(torch.load(path, weights_only=True))\n",
        "import torch\n\nmodel_state = torch.load(path)\n",
        "import torch\n\nx = torch.load(path).to(device)\n",
        "import torch\n\nwith torch.serialization.safe_globals([Net]):\n"
        "    model = torch.load(path)\n",
        "import torch\n\ntry:\n    model = torch.load(path, weights_only=False)\n"
        "except TypeError:  # a torch older than weights_only\n    model = torch.load(path)\n",
        "import torch\n\nmodel = torch.load(path, weights_only=False)\n",  # TP302's
        "import torch\n\nsd = torch.load(path)\nmodel.load_state_dict(sd)\nmodel.eval()\n",
    )
    invalid = (
        Example("import torch\n\nmodel = torch.load(path)\n"),
        Example("import torch\n\nnet = torch.load(path, map_location=device).eval()\n"),
        Example("import torch\n\nself.teacher_model = torch.load(args.teacher)\n"),
        Example(
            "import torch\n\n\ndef evaluate(path):\n    g = torch.load(path)\n"
            "    g.eval()\n    return g\n"
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        if not is_load(node, ctx):  # first: one set lookup rules out almost every call
            return
        if not _loaded_as_a_module(node, ctx) or explicit_weights_only(node) is not None:
            return
        if any(kw.arg in (None, "weights_only") for kw in node.keywords):
            return  # `**kw` or a non-constant flag: TP305 / the caller decide
        if _under_safe_globals(ctx) or _fallback_for_old_torch(ctx):
            return  # the `except TypeError:` arm runs only on torches without weights_only
        yield ctx.finding(self, node)


def _loaded_as_a_module(node: ast.Call, ctx: Context) -> bool:
    """The load's result is used as an ``nn.Module``: a method called, or bound to a module."""
    parent = ctx.parent
    if isinstance(parent, ast.Attribute) and parent.attr in _MODULE_METHODS:
        return True
    if not (isinstance(parent, ast.Assign) and parent.value is node):
        return False
    return any(whole_module(t, ctx) for t in parent.targets) or any(
        isinstance(t, ast.Name) and _used_as_module(t.id, ctx) for t in parent.targets
    )


def _fallback_for_old_torch(ctx: Context) -> bool:
    """In the fallback of a ``try`` whose body loads with ``weights_only``."""
    return in_old_torch_fallback(
        ctx, lambda c: is_load(c, ctx) and explicit_weights_only(c) is not None
    )
