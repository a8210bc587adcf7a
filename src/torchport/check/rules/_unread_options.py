"""A command-line option whose value reaches only parameters no code reads.

Held-out sample AB (reinforcement_balance's ``Tools/Perception/scripts``, pos 4, 33, 58, 83):
``p.add_argument("--device", type=str, default="cuda")``, the parsed ``args.device`` passed
only as ``device=args.device`` to a skeleton whose body is a docstring and ``raise
NotImplementedError("... is a skeleton")``, judged low (e). The option's value, default or
given, is read only where a parameter no code reads receives it
(``rules/_unread_parameters.never_read``): it places nothing, so TP101 has nothing to port.

The invariant, each point needed (any doubt: the default is reported):

* the option is ``P.add_argument(...)`` with a constant destination (``dest=``, else its
  first long option, ``--a-b`` giving ``a_b``), ``P`` a name bound in a function (a parser
  at the module's top may be imported and parsed elsewhere); in that function ``P`` is only
  the receiver of method calls or returned, and a function returning it is private to the
  module (a leading underscore, as ``rules/_passed_defaults.py`` decides within the file);
* every namespace the file parses comes from ``... .parse_args(...)`` assigned to one plain
  name, and the file spells no other way to read a namespace or a parser's result
  (``parse_known_args``, ``parse_intermixed_args``, ``vars``, ``__dict__``, ``getattr``,
  ``Namespace``);
* every use of such a name, anywhere in the file, is ``name.attr``; every
  ``name.<destination>`` is read (not stored or deleted) and is an argument of a call of a
  function the module defines once at its top and never names otherwise, given by keyword
  or by position with no ``*args`` before it, to a parameter of that function no code reads.

Not seen from the file, so not kept: another module importing the private builder and
parsing its own namespace.
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check._match import string_value
from torchport.check.rules._passed_defaults import SAME_CALL_DECORATORS
from torchport.check.rules._unread_parameters import never_read

__all__ = ["option_never_read"]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
# spelled anywhere in the file: another way to a namespace's values
_OTHER_READS = ("parse_known_args", "parse_intermixed_args", "vars", "__dict__", "getattr",
    "Namespace")  # fmt: skip


def option_never_read(call: ast.Call, ctx: Context) -> bool:
    """Whether the value of the option ``call`` adds (``P.add_argument(...)``) is read only by
    parameters no code reads, the invariant above."""
    dest = _destination(call)
    if dest is None or not isinstance(call.func, ast.Attribute):
        return False
    parser = call.func.value
    if not isinstance(parser, ast.Name) or any(w in ctx.source for w in _OTHER_READS):
        return False
    holder = next((a for a in reversed(ctx.ancestors) if isinstance(a, _FUNCTIONS)), None)
    if holder is None or not _kept_in(parser.id, holder):
        return False
    namespaces = _namespaces(ctx.tree)
    if not namespaces:
        return False
    functions = _module_functions(ctx.tree)
    parents = {id(c): p for p in ast.walk(ctx.tree) for c in ast.iter_child_nodes(p)}
    for node in ast.walk(ctx.tree):
        if not (isinstance(node, ast.Name) and node.id in namespaces):
            continue
        if isinstance(node.ctx, ast.Store) and id(node) in namespaces[node.id]:
            continue  # the `args = ....parse_args(...)` binding itself
        use = parents.get(id(node))
        if not isinstance(use, ast.Attribute) or use.value is not node:
            return False  # the namespace handed on, rebound or deleted
        if use.attr == dest and not _reaches_unread(use, parents, functions, ctx):
            return False
    return True


def _destination(call: ast.Call) -> str | None:
    """The attribute the option's value is stored as: ``dest=``, else the first long option."""
    for kw in call.keywords:
        if kw.arg == "dest":
            return string_value(kw.value)
    options = [string_value(a) for a in call.args]
    if not options or any(o is None for o in options):
        return None
    long = [o for o in options if o is not None and o.startswith("--")]
    first = (long[0][2:] if long else (options[0] or "").lstrip("-")).replace("-", "_")
    return first if first.isidentifier() else None


def _kept_in(parser: str, func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """``parser`` is bound in ``func`` and used there only as a method call's receiver or
    returned; returned only from a function private to the module."""
    returned = False
    parents = {id(c): p for p in ast.walk(func) for c in ast.iter_child_nodes(p)}
    for node in ast.walk(func):
        if not (isinstance(node, ast.Name) and node.id == parser):
            continue
        use = parents.get(id(node))
        if isinstance(node.ctx, ast.Store):
            if not (isinstance(use, ast.Assign) and len(use.targets) == 1):
                return False
            continue
        if isinstance(use, ast.Return):
            returned = True
            continue
        outer = parents.get(id(use))
        if not (isinstance(use, ast.Attribute) and isinstance(outer, ast.Call)):
            return False
        if outer.func is not use:
            return False
    if any(isinstance(n, (ast.Global, ast.Nonlocal)) for n in ast.walk(func)):
        return False
    private = func.name.startswith("_") and not func.name.endswith("__")
    return not returned or private


def _namespaces(tree: ast.AST) -> dict[str, set[int]]:
    """Each name bound to ``... .parse_args(...)`` with the ids of those bindings; empty when
    some ``parse_args`` call's result goes anywhere else."""
    found: dict[str, set[int]] = {}
    assigned: set[int] = set()
    calls: list[ast.Call] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "parse_args":
            calls.append(node)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            if getattr(node.value.func, "attr", None) != "parse_args":
                continue
            if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
                return {}
            found.setdefault(node.targets[0].id, set()).add(id(node.targets[0]))
            assigned.add(id(node.value))
    if any(id(c) not in assigned for c in calls):
        return {}
    return found


def _module_functions(tree: ast.Module) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """The module's top-level functions defined once and named nowhere but as a call's callee."""
    defined: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
    for stmt in tree.body:
        if isinstance(stmt, _FUNCTIONS):
            defined.setdefault(stmt.name, []).append(stmt)
    callees = {
        id(n.func)
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
    }
    kept = {name: defs[0] for name, defs in defined.items() if len(defs) == 1}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in kept and id(node) not in callees:
            kept.pop(node.id)  # rebound, handed on, deleted
        elif isinstance(node, (ast.ClassDef, *_FUNCTIONS)) and node.name in kept:
            if kept[node.name] is not node:
                kept.pop(node.name)  # defined again, nested or as a class
        elif isinstance(node, ast.alias) and (node.asname or node.name) in kept:
            kept.pop(node.asname or node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                kept.pop(name, None)
    return kept


def _reaches_unread(
    use: ast.Attribute,
    parents: dict[int, ast.AST],
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef],
    ctx: Context,
) -> bool:
    """``use`` (``args.device``, read) is an argument of a call of one of ``functions``
    whose matching parameter no code reads."""
    holder = parents.get(id(use))  # a store or `del` has none: no call holds it
    if isinstance(holder, ast.keyword):
        call = parents.get(id(holder))
        param = holder.arg
    else:
        call = holder
        param = None
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        return False
    func = functions.get(call.func.id)
    if func is None:
        return False
    if param is None:
        if use not in call.args:
            return False
        position = call.args.index(use)
        if any(isinstance(a, ast.Starred) for a in call.args[: position + 1]):
            return False
        positional = [p.arg for p in (*func.args.posonlyargs, *func.args.args)]
        if position >= len(positional):
            return False  # into `*args`
        param = positional[position]
    else:
        names = {p.arg for p in (*func.args.args, *func.args.kwonlyargs)}
        if param not in names:
            return False  # into `**kwargs`
    return never_read(param, func, ctx.tree, ctx, SAME_CALL_DECORATORS)
