"""TP305 load-with-unpacked-arguments: ``torch.load(path, **kwargs)``."""

from __future__ import annotations

import ast
import weakref
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._rule import Example, Finding, Intent, Rule
from torchport.check.rules._loading import (
    LOAD_ATTRS,
    explicit_weights_only,
    is_load,
    only_safe_dicts,
    unpacks,
)


class LoadWithUnpackedArguments(Rule):
    """## What it does
    Finds `torch.load` calls that pass `*args` or `**kwargs` without an explicit
    `weights_only=True` (one passing `pickle_module=` itself is TP304's).

    ## Why is this bad?
    Unpacked arguments can carry `weights_only=False` or a `pickle_module` (which turns
    `weights_only` off), so whether this load runs the code inside a checkpoint is decided
    somewhere else, often by a config file or a caller. Reviewers and this checker cannot
    see it. Passing `weights_only=True` at the call keeps the load safe whatever the
    unpacked arguments say (a conflicting `pickle_module` then fails loudly).

    ## Why is it off by default?
    Under 90% real on the judged samples (0 of 1); `--extend-select TP305` runs it as before.
    """

    code = "TP305"
    name = "load-with-unpacked-arguments"
    intent = Intent.SAFETY
    default = False
    message = (
        "pass `weights_only=True` explicitly: unpacked `*args`/`**kwargs` may carry "
        "`weights_only=False` or a `pickle_module`, which run any code in the file"
    )
    node_types = (ast.Call,)
    call_attrs = LOAD_ATTRS
    valid = (
        "import torch\n\nstate = torch.load(path, weights_only=True, **load_kwargs)\n",
        'import torch\n\nstate = torch.load(path, map_location="cpu")\n',
        "import json\n\ncfg = json.load(fh, **options)\n",
        # Whisper's spelling: the unpacked dict is a literal that keeps loading safe.
        "import torch\n\n"
        'kw = {"weights_only": True} if new_torch else {}\n'
        "state = torch.load(fp, map_location=dev, **kw)\n",
        # a drop-in torch.load, safe unless its caller says otherwise
        "import torch\n\n\ndef load(f, **kwargs):\n"
        '    kwargs.setdefault("weights_only", True)\n'
        "    return torch.load(f, **kwargs)\n",
        'import torch\n\nkw = {}\nif not gpu:\n    kw["map_location"] = "cpu"\n'
        "state = torch.load(fp, **kw)\n",
    )
    invalid = (
        Example("import torch\n\nstate = torch.load(path, **load_kwargs)\n"),
        Example("import torch\n\nstate = torch.load(*args)\n"),
        Example(
            "import torch\n\n\ndef load(f, **kwargs):\n"
            '    kwargs.setdefault("weights_only", False)\n'
            "    return torch.load(f, **kwargs)\n"
        ),
        Example("from torch import load\n\nstate = load(path, map_location=dev, **kw)\n"),
        Example(
            "import torch\n\n"
            'kw = {"weights_only": True}\n'
            'kw["weights_only"] = False\n'
            "state = torch.load(fp, **kw)\n"
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        if (
            unpacks(node)
            and all(k.arg != "pickle_module" for k in node.keywords)  # TP304's: unsafe already
            and explicit_weights_only(node) is not True
            and is_load(node, ctx)
            and not _only_safe_literals(node, ctx)
            and not _safe_default(node, ctx)
        ):
            yield ctx.finding(self, node)


def _only_safe_literals(call: ast.Call, ctx: Context) -> bool:
    """Whether every unpacked argument is a name bound only to dict literals that keep loading safe.

    ``kw = {"weights_only": True} if new else {}`` then ``torch.load(p, **kw)`` is safe; a
    name that is also a parameter, rebound elsewhere, or written into (``kw[key] = ...``,
    ``kw.update(...)``) is not known, so the call is reported; a store of a key that keeps
    loading safe (``kw["map_location"] = "cpu"``) is known.
    """
    if any(isinstance(a, ast.Starred) for a in call.args):
        return False
    for kw in (k for k in call.keywords if k.arg is None):
        if not isinstance(kw.value, ast.Name) or not only_safe_dicts(kw.value, ctx):
            return False
        if _written_into(kw.value.id, ctx.scopes.scope_of(kw.value).node):
            return False
    return True


def _safe_default(call: ast.Call, ctx: Context) -> bool:
    """Whether the call forwards its function's own ``**kwargs`` after defaulting them safe.

    ``def load(f, **kwargs): kwargs.setdefault("weights_only", True); torch.load(f, **kwargs)``
    (or ``if "weights_only" not in kwargs: kwargs["weights_only"] = True``): a drop-in
    ``torch.load`` that is safe unless its caller says otherwise, where the choice is seen.
    Passing ``weights_only=True`` beside the forwarded dict would raise a TypeError whenever
    it holds the key.
    """
    if any(isinstance(a, ast.Starred) for a in call.args):
        return False
    unpacked = [kw.value for kw in call.keywords if kw.arg is None]
    if len(unpacked) != 1 or not isinstance(unpacked[0], ast.Name):
        return False
    name = unpacked[0].id
    function = ctx.scopes.scope_of(call).node
    kwarg = getattr(getattr(function, "args", None), "kwarg", None)
    if kwarg is None or kwarg.arg != name:
        return False
    for node in ast.walk(function):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == name
            and node.func.attr == "setdefault"
            and [_constant(a) for a in node.args] == ["weights_only", True]
        ):
            return True
        if (
            isinstance(node, ast.Assign)
            and _constant(node.value) is True
            and any(
                isinstance(t, ast.Subscript)
                and isinstance(t.value, ast.Name)
                and t.value.id == name
                and _constant(t.slice) == "weights_only"
                for t in node.targets
            )
        ):
            return True
    return False


def _constant(expr: ast.expr) -> object:
    return expr.value if isinstance(expr, ast.Constant) else None


def _written_into(name: str, scope: ast.AST) -> bool:
    """Whether ``scope`` stores into ``name[...]`` or calls a method on ``name`` (``update``).

    A store that keeps loading safe (``kw["map_location"] = "cpu"``) does not count. The
    names are gathered once per scope, not walked again for each load.
    """
    written = _WRITTEN.get(scope)
    if written is None:
        written = set()
        harmless = {
            id(t)
            for node in ast.walk(scope)
            if isinstance(node, ast.Assign)
            for t in node.targets
            if isinstance(t, ast.Subscript) and _safe_entry(_constant(t.slice), node.value)
        }
        for node in ast.walk(scope):
            if (
                isinstance(node, ast.Subscript)
                and isinstance(node.ctx, (ast.Store, ast.Del))
                and isinstance(node.value, ast.Name)
                and id(node) not in harmless
            ):
                written.add(node.value.id)
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
            ):
                written.add(node.func.value.id)
        _WRITTEN[scope] = written
    return name in written


def _safe_entry(key: object, value: ast.expr) -> bool:
    """A constant key other than ``pickle_module``, and ``weights_only`` only if True."""
    if not isinstance(key, str) or key == "pickle_module":
        return False
    return key != "weights_only" or _constant(value) is True


_WRITTEN: weakref.WeakKeyDictionary[ast.AST, set[str]] = weakref.WeakKeyDictionary()
