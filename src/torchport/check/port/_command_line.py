"""Settings read from the command line: ``args.gamma`` after ``args = parser.parse_args()``.

argparse builds every value of its namespace from the command-line strings,
through the ``type=`` it is given: an argument declared with ``type=float``
(``int``, ``str``, ``bool``), a flag (``action="store_true"``, ``"count"``) or
one with neither a type nor an action (a string, or its literal default) is a
Python number, string or bool, never a tensor to move. argparse hands a default over
as it is: the default must be a literal, or a module-level name bound only to one
(``default=MEAN_REWARD``). An argument with any
other ``type=`` (a function of the file, ``torch.tensor``) or action, one the
file declares twice in ways that disagree, or an attribute the file also stores
(``args.device = torch.device(...)``) is not told here, unless every store of it is a number,
a string or a bool (``args.world_size = 1``: :mod:`~torchport.check.port._namespace_stores`,
which also tells the settings argparse does not declare).

A function of the file may hand the namespace over (``args, text = _parse_args()``,
each of its ``return`` statements giving ``parser.parse_args()`` at that position).
A function of the file may be handed it: ``validate(args)``, every call of
``validate`` in the file passing, at that parameter's position or by its name,
``parser.parse_args()`` or a name bound only to the namespace (or to a parameter
handed it in turn, as ``_try_run(args)`` hands it on); a function the file also
uses another way (passed as a callback, decorated) is not told.
The settings often reach the file through a parameter: ``PPO(args)`` in
``main.py`` beside it, ``self.gamma = args.gamma`` here. A parameter's attribute
is a setting when a module of the same folder that imports this one declares it
with argparse as above (every declaration of it in those modules a scalar, none
of them or this file storing it): what the parameter is given is then, by name,
that module's settings. Syntax only; those modules are read, never imported.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

from torchport.check._context import Context
from torchport.check._listing import note
from torchport.check._syntax import parsed_module
from torchport.check.port._namespace_callees import handed_stores, unread_stores
from torchport.check.port._namespace_stores import (
    freely_set,
    handed_out,
    keep_plain,
    namespace_holders,
    plain_value,
    store_values,
    undeclared_defaults,
)
from torchport.check.port._namespace_stores import parsed_namespace as _parsed
from torchport.check.port._structure import attribute_table
from torchport.check.semantic import Binding, BindingKind

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check.port._parameters import CallerKinds

__all__ = ["CommandLine"]

_Function = ast.FunctionDef | ast.AsyncFunctionDef
_SCALAR_TYPES = frozenset({"int", "float", "str", "bool"})
_SCALAR_ACTIONS = frozenset({"store_true", "store_false", "count", "store"})


class CommandLine:
    """The command-line settings of one file (worked out on the first question, kept)."""

    def __init__(self, ctx: Context, callers: CallerKinds) -> None:
        self._ctx = ctx
        self._callers = callers  # the file's call sites and returns (the port's own)
        self._scalars: frozenset[str] | None = None
        self._holding: frozenset[str] | None = None
        self._given: frozenset[str] | None = None
        self._stores_outside: tuple[dict[str, bool], frozenset[int]] | None = None

    def scalar(self, expr: ast.Attribute) -> bool:
        """Whether ``expr`` reads a number, string or bool argparse made (see the module)."""
        if not isinstance(expr.value, ast.Name):
            return False
        found = self._ctx.scopes.bindings(expr.value.id, expr.value)
        if not found:
            return False
        if self._namespace(found, set()):
            return expr.attr in self._scalar_names()
        return (
            len(found) == 1
            and found[0].kind is BindingKind.PARAMETER
            and expr.attr in self._given_names()
        )

    def _namespace(self, found: list[Binding], seen: set[int]) -> bool:
        """Whether a name with these bindings holds only the file's parsed namespace."""
        if len(found) == 1 and found[0].kind is BindingKind.PARAMETER:
            return self._handed_parsed(found[0].node, seen)
        return bool(found) and all(_parsed(b.value) or self._returned_parsed(b) for b in found)

    def _handed_parsed(self, arg: ast.AST, seen: set[int]) -> bool:
        """A parameter every call site of its function in the file hands the namespace."""
        if not isinstance(arg, ast.arg) or id(arg) in seen:
            return False  # a parameter handed itself back round a cycle: not told
        seen.add(id(arg))
        scopes = self._ctx.scopes
        args = scopes.parent(arg)
        func = scopes.parent(args) if isinstance(args, ast.arguments) else None
        if not isinstance(func, _Function) or not isinstance(args, ast.arguments):
            return False  # a lambda's
        sites = self._callers.call_sites(func)
        if not sites or arg is args.vararg or arg is args.kwarg:
            return False
        positional = [*args.posonlyargs, *args.args]
        if self._callers.method_of(func) is not None:
            positional = positional[1:]
        index = next((i for i, p in enumerate(positional) if p is arg), None)
        for call, _ in sites:
            if any(isinstance(a, ast.Starred) for a in call.args):
                return False
            given = next((k.value for k in call.keywords if k.arg == arg.arg), None)
            if given is None and index is not None and index < len(call.args):
                given = call.args[index]
            if _parsed(given):
                continue
            if not isinstance(given, ast.Name):
                return False  # a default, `**options`, or another expression
            if not self._namespace(scopes.bindings(given.id, given), seen):
                return False
        return True

    def _returned_parsed(self, binding: Binding) -> bool:
        """``args = parse()`` or ``args, text = parse()`` of a function of the file each of
        whose ``return`` gives, at that position, ``parser.parse_args()`` or a local name
        bound only to it (timm's ``_parse_args()``); a generator, a starred target or a
        tuple of another length is not told."""
        scopes = self._ctx.scopes
        holder = scopes.parent(binding.node)
        index: int | None = None
        width = 0  # the target tuple's length
        value = binding.value
        if isinstance(holder, ast.Tuple):
            statement = scopes.parent(holder)
            if not isinstance(statement, ast.Assign) or statement.targets != [holder]:
                return False
            if any(isinstance(e, ast.Starred) for e in holder.elts):
                return False
            index = next(i for i, e in enumerate(holder.elts) if e is binding.node)
            width, value = len(holder.elts), statement.value
        if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)):
            return False
        defined = scopes.bindings(value.func.id, value.func)
        func = defined[0].node if len(defined) == 1 else None
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return False
        returns = self._callers.return_values(func)
        if not returns:
            return False  # a generator, or no value returned
        for given in returns:
            if index is not None:
                if not (isinstance(given, ast.Tuple) and len(given.elts) == width):
                    return False
                given = given.elts[index]
            if _parsed(given):
                continue
            bound = scopes.bindings(given.id, given) if isinstance(given, ast.Name) else []
            if not bound or not all(_parsed(b.value) for b in bound):
                return False
        return True

    def _given_names(self) -> frozenset[str]:
        """The scalar settings the folder's modules that import this file declare."""
        if self._given is None:
            self._given = _importer_scalars(self._ctx.path) - self._stored()
        return self._given

    def _stored(self) -> set[str]:
        """Attributes this file stores on anything but ``self`` (``args.x = ...``)."""
        return {
            node.attr
            for nodes in attribute_table(self._ctx).values()
            for node in nodes
            if not isinstance(node.ctx, ast.Load)
            and not (isinstance(node.value, ast.Name) and node.value.id == "self")
        }

    def _scalar_names(self) -> frozenset[str]:
        if self._scalars is not None:
            return self._scalars
        source = self._ctx.source
        if "add_argument" not in source and "parse_args" not in source:
            self._scalars = frozenset()  # no argparse here: no node index built for it
            return self._scalars
        kinds: dict[str, bool] = {}  # dest -> every declaration of it a scalar
        stored: set[str] = set()
        constants = _constants(self._ctx.tree)
        for node in self._ctx.scopes.nodes_of(ast.Attribute):
            assert isinstance(node, ast.Attribute)
            if not isinstance(node.ctx, ast.Load):
                stored.add(node.attr)  # `args.device = ...`: not only what argparse made
        stored |= store_values(self._ctx).keys()  # `setattr(args, "device", ...)` too
        for node in self._ctx.scopes.nodes_of(ast.Call):
            assert isinstance(node, ast.Call)
            func = node.func
            if not isinstance(func, ast.Attribute) or func.attr != "add_argument":
                continue
            dest = _dest(node)
            if dest is not None:
                kinds[dest] = kinds.get(dest, True) and _scalar(node, constants)
        # What argparse alone makes; then the settings the file stores (syntax only), or
        # another module's function it hands the namespace to (each store plain, or not one)
        outside, _ = self._outside()
        self._scalars = frozenset(
            d for d, ok in kinds.items() if ok and d not in stored and outside.get(d, True)
        )
        if freely_set(self._ctx, self._holds):  # `setattr(args, k, v)`: any name, anything
            self._scalars = frozenset()
            return self._scalars
        self._scalars = self._scalars | self._stored_scalars(kinds, self._scalars)
        return self._scalars

    def _stored_scalars(self, declared: dict[str, bool], made: frozenset[str]) -> frozenset[str]:
        """The settings the file stores on objects, each store a number, string or bool
        (:mod:`~torchport.check.port._namespace_stores`): the largest set whose every store is
        plain given that its members are (``args.n = max(1, args.n)``) and those argparse alone
        makes (``made``); a setting argparse does not declare only where nothing outside the
        file may store on the namespace."""
        values = store_values(self._ctx)
        outside, told = self._outside()
        candidates = {d for d, ok in declared.items() if ok and (d in values or d in outside)}
        defaults = undeclared_defaults(self._ctx)
        if defaults is not None and not handed_out(self._ctx, self._holds, self._own_names(), told):
            stored = values.keys() | outside.keys()
            candidates |= {a for a in stored if a not in declared and a not in defaults}
        candidates = {a for a in candidates if outside.get(a, True)}
        scopes = self._ctx.scopes

        def setting(expr: ast.Attribute) -> bool:
            return (expr.attr in candidates or expr.attr in made) and self._reads_namespace(expr)

        def builtin(name: ast.Name) -> bool:
            return not scopes.bindings(name.id, name)

        seen: set[int] = set()

        def bound_plain(name: ast.Name) -> bool:
            """A name every binding of which is an assignment of a plain value (syntax only:
            the port's kinds are not asked while the settings are worked out)."""
            found = scopes.bindings(name.id, name)
            if not found or any(id(b) in seen or b.value is None for b in found):
                return False  # (a parameter, a loop's, a cycle: not told)
            seen.update(id(b) for b in found)
            try:
                return all(
                    b.value is not None and plain_value(b.value, setting, bound_plain, builtin)
                    for b in found
                )
            finally:
                seen.difference_update(id(b) for b in found)

        keep_plain(candidates, values, lambda v: plain_value(v, setting, bound_plain, builtin))
        return frozenset(candidates)

    def _outside(self) -> tuple[dict[str, bool], frozenset[int]]:
        """What the functions of other project modules the file hands the namespace to store
        on it (attribute: every store plain, in every such call), and those calls (by id)
        whose stores are told (:mod:`~torchport.check.port._namespace_callees`)."""
        if self._stores_outside is None:
            stored: dict[str, bool] = {}
            told: set[int] = set()
            own = self._own_names()
            for call in self._ctx.scopes.nodes_of(ast.Call):
                assert isinstance(call, ast.Call)
                if isinstance(call.func, ast.Name) and call.func.id in own:
                    continue  # the file's own function: read as the file
                given: list[int | str] = [
                    i for i, a in enumerate(call.args) if isinstance(a, ast.Name) and self._holds(a)
                ]
                given += [
                    k.arg
                    for k in call.keywords
                    if k.arg and isinstance(k.value, ast.Name) and self._holds(k.value)
                ]
                found = handed_stores(self._ctx, call, given) if given else None
                if found is not None:
                    told.add(id(call))
                    for attr, plain in found.items():
                        stored[attr] = stored.get(attr, True) and plain
                elif given:  # not told: what its module stores anywhere is no scalar
                    stored.update(dict.fromkeys(unread_stores(self._ctx, call), False))
            self._stores_outside = (stored, frozenset(told))
        return self._stores_outside

    def _reads_namespace(self, expr: ast.Attribute) -> bool:
        value = expr.value
        if not isinstance(value, ast.Name):
            return False
        found = self._ctx.scopes.bindings(value.id, value)
        return bool(found) and self._namespace(found, set())

    def _holds(self, name: ast.Name) -> bool:
        """Whether ``name`` may hold the namespace (by name, any scope: more, never fewer)."""
        return name.id in self._holders()

    def _holders(self) -> frozenset[str]:
        if self._holding is None:
            self._holding = namespace_holders(self._ctx)
        return self._holding

    def _own_names(self) -> frozenset[str]:
        """The functions the file defines (by name)."""
        scopes = self._ctx.scopes
        kinds = (ast.FunctionDef, ast.AsyncFunctionDef)  # (a class's `__init__` is not read)
        return frozenset(n.name for k in kinds for n in scopes.nodes_of(k) if isinstance(n, kinds))


def _dest(call: ast.Call) -> str | None:
    """The namespace attribute an ``add_argument`` call fills (None: not told)."""
    for k in call.keywords:
        if k.arg == "dest":
            return (
                k.value.value
                if isinstance(k.value, ast.Constant) and isinstance(k.value.value, str)
                else None
            )
    flags = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    if len(flags) != len(call.args) or not flags:
        return None
    long = [f for f in flags if f.startswith("--")]
    name = long[0] if long else flags[0]
    return name.lstrip("-").replace("-", "_") or None


def _scalar(call: ast.Call, constants: frozenset[str] = frozenset()) -> bool:
    """Whether what an ``add_argument`` call declares is a number, string or bool
    (``constants``: the module's names bound only to literals, see :func:`_constants`)."""
    words = {k.arg: k.value for k in call.keywords}
    if None in words:
        return False  # `**options`: the type is not told
    kind = words.get("type")
    if kind is not None and not (isinstance(kind, ast.Name) and kind.id in _SCALAR_TYPES):
        return False
    action = words.get("action")
    if action is not None and not (
        isinstance(action, ast.Constant) and action.value in _SCALAR_ACTIONS
    ):
        return False
    default = words.get("default")
    return (
        default is None
        or _literal(default)
        or (isinstance(default, ast.Name) and default.id in constants)
    )


def _literal(expr: ast.expr) -> bool:
    """A constant, or a negated one (``-1.0``)."""
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, (ast.USub, ast.UAdd)):
        expr = expr.operand
    return isinstance(expr, ast.Constant)


def _constants(tree: ast.Module) -> frozenset[str]:
    """Module-level names every store of which is ``NAME = <literal>`` at module level
    (``MEAN_REWARD = 19.5``, a default argparse hands over as it is, not through its
    ``type=``)."""
    literal: set[str] = set()
    plain: set[int] = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and _literal(stmt.value):
            target = stmt.targets[0]
            if isinstance(target, ast.Name):
                literal.add(target.id)
                plain.add(id(target))
    if not literal:
        return frozenset()  # nothing to take away from: the stores need no walk
    others = {
        n.id
        for n in ast.walk(tree)
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load) and id(n) not in plain
    }
    return frozenset(literal - others)


_FOLDERS: dict[str, dict[str, tuple[int, frozenset[str], frozenset[str], frozenset[str]]]] = {}


def _importer_scalars(path: str) -> frozenset[str]:
    """The scalar settings the modules beside ``path`` that import it declare (see the
    module docstring): each sibling read once per process and version."""
    if not path or path.startswith("<"):
        return frozenset()
    file = Path(path)
    folder, stem = file.parent, file.stem
    note(folder)  # what the check cache's answer rests on (check/_listing.py)
    try:
        names = os.listdir(folder)
    except OSError:
        return frozenset()
    seen = _FOLDERS.setdefault(str(folder), {})
    kinds: dict[str, bool] = {}
    stored: set[str] = set()
    for name in names:
        if not name.endswith(".py") or name == file.name:
            continue
        sibling = folder / name
        note(sibling)
        try:
            mtime = sibling.stat().st_ctime_ns
        except OSError:
            continue
        facts = seen.get(name)
        if facts is None or facts[0] != mtime:
            facts = seen[name] = (mtime, *_declared(sibling))
        _, imported, scalars, others = facts
        if stem not in imported:
            continue
        for dest in scalars:
            kinds[dest] = kinds.get(dest, True)
        for dest in others:
            kinds[dest] = False
        stored |= others
    return frozenset(d for d, ok in kinds.items() if ok and d not in stored)


def _declared(path: Path) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """(the modules ``path`` imports at its top, the settings it declares scalar, those it
    declares otherwise or stores on an object)."""
    try:
        source = path.read_text(encoding="utf-8", errors="surrogateescape")
        if "add_argument" not in source:
            return frozenset(), frozenset(), frozenset()
        tree = parsed_module(str(path), source)  # (its own port's parse, if kept; or kept)
    except (OSError, SyntaxError, ValueError):
        return frozenset(), frozenset(), frozenset()
    imported: set[str] = set()
    scalars: set[str] = set()
    others: set[str] = set()
    constants = _constants(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            imported.add(node.module.partition(".")[0])
        elif isinstance(node, ast.Import):
            imported.update(a.name.partition(".")[0] for a in node.names)
        elif isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
            others.add(node.attr)  # `args.max_action = float(...)`: not only argparse's
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "add_argument"
        ):
            dest = _dest(node)
            if dest is not None:
                (scalars if _scalar(node, constants) else others).add(dest)
    return frozenset(imported), frozenset(scalars - others), frozenset(others)
