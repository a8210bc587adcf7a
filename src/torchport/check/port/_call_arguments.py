"""What a call of the file's own function hands each of its parameters: the argument at the
parameter's place or by its name, else the parameter's default."""

from __future__ import annotations

import ast

__all__ = ["argument_for", "parameter_default"]


def parameter_default(args: ast.arguments, arg: ast.arg) -> ast.expr | None:
    """The default value of parameter ``arg`` of ``args`` (None: it has none)."""
    positional = [*args.posonlyargs, *args.args]
    if arg in positional:
        offset = len(positional) - len(args.defaults)
        i = positional.index(arg)
        return args.defaults[i - offset] if i >= offset else None
    if arg in args.kwonlyargs:
        return args.kw_defaults[args.kwonlyargs.index(arg)]
    return None


def argument_for(
    call: ast.Call, positional: list[ast.arg], arg: ast.arg, default: ast.expr | None
) -> ast.expr | None:
    """What ``call`` hands the parameter ``arg``: the keyword naming it, the argument at its
    place among ``positional`` (the parameters a call's positional arguments fill: a method's
    without ``self``), else ``default``; None where a star may hide it (``f(*a)``,
    ``f(**k)``) or nothing is handed."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(
        k.arg is None for k in call.keywords
    ):
        return None
    given = next((k.value for k in call.keywords if k.arg == arg.arg), None)
    index = next((i for i, p in enumerate(positional) if p is arg), None)
    if given is None and index is not None and index < len(call.args):
        given = call.args[index]
    return default if given is None else given
