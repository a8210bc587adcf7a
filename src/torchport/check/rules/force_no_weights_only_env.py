"""TP306 force-no-weights-only-env: ``os.environ["TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"] = "1"``."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import string_value
from torchport.check._rule import Example, Finding, Intent, Rule

_VARIABLE = "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"
_OFF = frozenset({"0", "false", "no", "n", ""})  # torch reads only 1/y/yes/true as "on"
_SETTERS = frozenset({"os.environ.setdefault", "os.environ.update", "os.putenv"})


def _sets_on(value: ast.expr | None) -> bool:
    text = string_value(value)
    return text is None or text.strip().lower() not in _OFF


class ForceNoWeightsOnlyEnv(Rule):
    """## What it does
    Finds code that sets the environment variable
    `TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD` (`os.environ[...] = "1"`,
    `os.environ.setdefault`, `os.environ.update`, `os.putenv`).

    ## Why is this bad?
    The variable turns `weights_only` off for every `torch.load` in the process
    that does not pass it explicitly, including loads in libraries you call:
    any checkpoint they read can then run code. It is meant as a temporary
    escape hatch set by a person in a shell, not by a program. Pass
    `weights_only=False` at the one call that loads a file you trust, or allow
    the classes it needs with `torch.serialization.add_safe_globals`.
    """

    code = "TP306"
    name = "force-no-weights-only-env"
    intent = Intent.SAFETY
    message = (
        "drop `TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD`: it makes every `torch.load` run code in "
        "checkpoints; pass `weights_only=False` only where you load a file you trust"
    )
    node_types = (ast.Assign, ast.Call)
    call_attrs = frozenset(setter.rpartition(".")[2] for setter in _SETTERS)
    valid = (
        'import os\n\nos.environ["TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"] = "0"\n',
        'import os\n\nflag = os.environ.get("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD")\n',
        'import os\n\nos.environ["CUDA_VISIBLE_DEVICES"] = "1"\n',
        'env = {}\nenv.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")\n',
    )
    invalid = (
        Example('import os\n\nos.environ["TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"] = "1"\n'),
        Example('import os\n\nos.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "true")\n'),
        Example('import os\n\nos.environ.update(TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD="1")\n'),
        Example('import os\n\nos.environ.update({"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": flag})\n'),
        Example(
            'from os import environ, putenv\n\nputenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")\n'
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        if isinstance(node, ast.Assign):
            for target in _environ_items_turned_on(node, ctx):
                yield ctx.finding(self, target)
            return
        assert isinstance(node, ast.Call)
        if not _mentions(node) or ctx.qualname(node.func) not in _SETTERS:
            return
        for _ in _values_turning_it_on(node):
            yield ctx.finding(self, node)


def _environ_items_turned_on(node: ast.Assign, ctx: Context) -> Iterator[ast.Subscript]:
    """Each ``os.environ["TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"]`` the assignment sets on."""
    for target in node.targets:
        if (
            isinstance(target, ast.Subscript)
            and string_value(target.slice) == _VARIABLE
            and ctx.qualname(target.value) == "os.environ"
            and _sets_on(node.value)
        ):
            yield target


def _values_turning_it_on(call: ast.Call) -> Iterator[ast.expr | None]:
    """Each value of a setter call (``setdefault``, ``update``) that turns the variable on.

    Given positionally, as a keyword, or under a key of a dict literal.
    """
    if string_value(call.args[0] if call.args else None) == _VARIABLE:
        value = call.args[1] if len(call.args) > 1 else None
        if _sets_on(value):
            yield value
        return
    for kw in call.keywords:
        if kw.arg == _VARIABLE and _sets_on(kw.value):
            yield kw.value
    for arg in call.args:
        if isinstance(arg, ast.Dict):
            for key, value in zip(arg.keys, arg.values, strict=True):
                if string_value(key) == _VARIABLE and _sets_on(value):
                    yield value


def _mentions(call: ast.Call) -> bool:
    """Cheap pre-check before resolving the callee: the variable's name appears as a literal."""
    if any(kw.arg == _VARIABLE for kw in call.keywords):
        return True
    for arg in call.args:
        if string_value(arg) == _VARIABLE:
            return True
        if isinstance(arg, ast.Dict) and any(string_value(k) == _VARIABLE for k in arg.keys):
            return True
    return False
