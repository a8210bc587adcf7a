"""TP302 load-weights-only-false: ``torch.load(..., weights_only=False)``, however spelled."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._rule import Example, Finding, Intent, Rule
from torchport.check.rules._loading import LOADS, parameter_defaulting_to_true, saved_by_this_run

_HOPS = 4


class LoadWeightsOnlyFalse(Rule):
    """## What it does
    Finds `torch.load` given `weights_only=False`, however it is spelled: `0`,
    `not True`, a name bound to `False`, a `**{"weights_only": False}` dict,
    through the alias `torch.serialization.load`, a name bound to the function
    (`ld = torch.load; ld(f, weights_only=False)`), `getattr(torch, "load")`, or
    a `functools.partial(torch.load, weights_only=False)`. A `weights_only`
    whose value cannot be told from the file (a flag read from a config) is
    reported too, saying so. Not reported: a file the same program saves (a
    load-or-build cache, `if exists(path): torch.load(path, weights_only=False)`
    with `torch.save(..., path)` in the `else`, or a save to the same path
    earlier in the function): its pickles are the program's own; nor test code
    (a file in a `test`/`tests` folder, a `conftest.py`, a `test_*.py` module or
    a file in a `testing` folder importing `pytest`/`unittest`, a `test*`
    function, `Test*` class or fixture in a file importing them), which
    loads the fixtures it made itself (`trainer.save(d)` then `torch.load(d + "/m.pt",
    weights_only=False)` to compare); nor a load whose `weights_only` is a parameter
    of the function around it that defaults to `True` and is never rebound
    (`def load(path, weights_only=True): ...`): called as written it is safe, and a
    caller that passes `False` does so at a call that is not `torch.load`.

    ## Why is this bad?
    With `weights_only=False`, loading runs the pickle machinery in full: a
    crafted checkpoint executes arbitrary code on the machine that loads it.
    Since PyTorch 2.6 the default is `weights_only=True`, which loads tensors,
    containers and primitive types only; other classes can be allowed one by
    one with `torch.serialization.add_safe_globals([...])`, or for one load with
    `with torch.serialization.safe_globals([...]):`.

    There is no automatic fix: removing the flag can make a checkpoint that
    holds custom objects fail to load.
    """

    code = "TP302"
    name = "load-weights-only-false"
    intent = Intent.SAFETY
    default = False
    message = (
        "load with the default `weights_only=True` and allow needed classes with "
        "`torch.serialization.add_safe_globals`; keep `False` only for files you trust"
    )
    node_types = (ast.Call,)
    # only calls given `weights_only=` or a `**` unpacking (which may hold it)
    call_attrs = frozenset[str]()
    call_keywords = frozenset({"weights_only", None})
    valid = (
        'import torch\n\nstate = torch.load("ckpt.pt", map_location="cpu")\n',
        'import torch\n\nstate = torch.load("ckpt.pt", weights_only=True)\n',
        'import torch\n\nstate = torch.load("ckpt.pt", weights_only=1)\n',
        "import json\n\ncfg = json.load(fh, weights_only=False)\n",  # not torch's load
        "import torch\n\ndef load(torch, f):\n    return torch.load(f, weights_only=False)\n",
        "import os\nimport torch\n\nif os.path.exists(path):\n"
        "    graphs = torch.load(path, weights_only=False)\n"
        "else:\n    graphs = trace()\n    torch.save(graphs, path)\n",
    )
    invalid = (
        Example(
            'import torch\n\nobj = torch.load("run.pt", map_location="cpu", weights_only=False)\n'
        ),
        Example('import torch\n\nobj = torch.load("run.pt", weights_only=not True)\n'),
        Example(
            "from torch import serialization\n\n"
            'obj = serialization.load("run.pt", map_location="cpu", weights_only=0)\n'
        ),
        Example("import torch\n\nld = torch.load\nobj = ld(f, weights_only=False)\n"),
        Example(
            "import functools\nimport torch\n\n"
            "load = functools.partial(torch.load, weights_only=False)\nobj = load(f)\n"
        ),
        Example('import torch\n\nobj = getattr(torch, "load")(f, **{"weights_only": False})\n'),
        Example("import torch\n\nobj = torch.load(f, weights_only=cfg.trust)\n"),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        given = _weights_only(node, ctx)
        if given is None:
            return  # the common case: no `weights_only` here at all
        if not _loads(node, ctx):
            if _computed_torch_attribute(node, ctx):
                yield ctx.finding(self, node, message=_computed_callee(node, ctx))
            return
        from torchport.check.rules._test_code import collected_by_a_test_runner  # first use

        if collected_by_a_test_runner(ctx):
            return  # a test loads the files it made itself, its own fixtures
        truth = _truth(given, ctx)
        if truth is None and parameter_defaulting_to_true(given, ctx):
            return  # the function follows the advice; a caller passing False is its own call
        if truth is None:
            message = (
                f"cannot tell whether `weights_only` is False here (`{ctx.segment(given)}`): "
                f"{self.message}"
            )
            yield ctx.finding(self, given, message=message)
        elif truth is False and not saved_by_this_run(node, ctx):
            # (not reported: a load-or-build cache, whose pickles are this program's own)
            yield ctx.finding(self, given)


def _computed_callee(call: ast.Call, ctx: Context) -> str:
    """The message for ``getattr(torch, name)(...)``: which function it is cannot be told."""
    return (
        "cannot tell whether this is `torch.load`: the function is looked up by a "
        f"computed name (`{ctx.segment(call.func)}`); call `torch.load(...)` by "
        f"name so that its `weights_only` can be checked"
    )


def _weights_only(call: ast.Call, ctx: Context) -> ast.expr | None:
    """The value given for ``weights_only``: a keyword, or a key of a ``**`` dict literal."""
    for kw in call.keywords:
        if kw.arg == "weights_only":
            return kw.value
        if kw.arg is None:
            unpacked = kw.value
            if isinstance(unpacked, ast.Name):
                unpacked = ctx.value_of(unpacked) or unpacked
            if isinstance(unpacked, ast.Dict):
                for key, value in zip(unpacked.keys, unpacked.values, strict=True):
                    if isinstance(key, ast.Constant) and key.value == "weights_only":
                        return value
    return None


def _loads(call: ast.Call, ctx: Context) -> bool:
    """Whether ``call`` calls ``torch.load``, or makes a ``functools.partial`` of it."""
    if ctx.qualname(call.func) == "functools.partial" and call.args:
        found = ctx.scopes.function(call.args[0])
        return found is not None and found.name in LOADS
    found = ctx.callee(call)
    # A partial's own `weights_only` was reported where the partial is made.
    return found is not None and found.name in LOADS


def _truth(expr: ast.expr, ctx: Context) -> bool | None:
    """The truth of ``expr`` where it can be told (``False``, ``0``, ``not True``, a name)."""
    for _ in range(_HOPS):
        if isinstance(expr, ast.Constant):
            return True if expr.value is None else bool(expr.value)  # None: the default
        if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
            inner = _truth(expr.operand, ctx)
            return None if inner is None else not inner
        if isinstance(expr, ast.Name):
            bound = ctx.value_of(expr)
            if bound is None:
                return None
            expr = bound
            continue
        return None
    return None


def _computed_torch_attribute(call: ast.Call, ctx: Context) -> bool:
    """``getattr(torch, name)(...)`` with a name the file does not settle."""
    func = call.func
    return (
        isinstance(func, ast.Call)
        and isinstance(func.func, ast.Name)
        and func.func.id == "getattr"
        and len(func.args) == 2
        and ctx.qualname(func.args[0]) in ("torch", "torch.serialization")
        and ctx.scopes.function(func) is None
    )
