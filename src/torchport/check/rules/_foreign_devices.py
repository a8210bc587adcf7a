"""A device string whose every use is another library's device, never torch's (TP101, TP109).

Issue 34 item 5 (held-out sample AI: 20 of its 41 rows not real were faster-whisper's
CTranslate2 device, CPU or CUDA only). The invariant, as for a fix: **a device string whose
every use goes to a library that is not torch is not a torch device**, so choosing torch's
accelerator for it is no advice; TP101 and TP109 leave it alone. Any doubt keeps the finding.

The value is followed from where it is written, in its file and the project's modules:

* a plain name it is bound to (``device = "cuda"``, ``device = "cuda" if ok else "cpu"``):
  every read of the name in the function binding it (nested code included), or, bound at the
  module's top, in the whole file, with no other text file of its repository naming it as a
  word (``rules/_project_calls.repository_texts``; no repository found: kept);
* a command-line option's default (``p.add_argument("--device", default="cuda")``): every
  read of ``args.device`` where ``args = p.parse_args()``, on ``rules/_unread_options``'s
  terms (the parser kept in one function, every namespace a plain name read only as
  ``args.attr``, no ``parse_known_args``/``__dict__``/``Namespace`` spelled in the file);
* an argument of a function the module defines once at its top, named nowhere but as a
  callee and undecorated (by keyword, or by position with no ``*args`` before it; not into
  ``*args``/``**kwargs``): every read of that parameter in the function, three calls deep;
  the same for a function of another module of the project, where the file binds its name
  only by one module-level ``from M import f``, ``M`` is found as Python finds it
  (``port/_module_files.find_module``) and defines ``f`` so, and calls no ``eval``/``exec``/
  ``globals``/``locals``/``vars``; its reads are resolved through its own imports (a name
  bound only by imports).

Each read must be **another library's** (an argument of a call whose callee resolves through
the file's imports into ``libraries``, ``_cuda_choice.NOT_TORCH``) or **idle** (an operand of
a comparison, or an argument of ``print`` or of a method named as a logging call's, alone or
in an f-string), and one at least another library's. Anything else keeps the finding: a torch
call, a call of anything else (a class of the project, an unknown callee), a return, an
attribute store (``self.device = device``), an alias (``d = device``), a container, an
f-string used otherwise, a ``global``/``nonlocal`` of the name, a file calling
``eval``/``exec``/``globals``/``locals``/``vars`` or spelling a read of a module as an object
(``sys.modules``, ``import __main__``, ``import_module(``, ``__import__(``). Not followed, so
kept: class fields and attributes (a project's config class passing ``config.device`` on:
slower-whisper's ``TranscriptionConfig``), a module reached as ``mod.f`` or re-exported by a
package, a user class's own ``.to(str)``.

``_cuda_choice.NOT_TORCH`` holds libraries whose device parameters name their own devices:
CTranslate2 and faster-whisper (``"cpu"``, ``"cuda"``, ``"auto"``), XGBoost, LightGBM (the
``device=`` keyword's list, ``OWN_DEVICE_LIBRARIES``), ONNX Runtime, TensorFlow, JAX, CuPy,
Numba. Keras is not listed (Keras 3 may run on torch).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

from torchport.check._context import Context
from torchport.check._match import cuda_choice, method_name
from torchport.check.rules._unread_options import (
    _destination,
    _kept_in,
    _module_functions,
    _namespaces,
)

__all__ = ["only_foreign_uses"]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_Function = ast.FunctionDef | ast.AsyncFunctionDef
_SCOPES = (*_FUNCTIONS, ast.ClassDef, ast.Lambda)
_INTROSPECTION = ("eval(", "exec(", "globals(", "locals(", "vars(")
# the module read as an object (its globals as attributes: breaker c34am)
_SELF_READS = ("sys.modules", "import __main__", "import_module(", "__import__(")
_INTROSPECTED = frozenset({"eval", "exec", "globals", "locals", "vars"})
_LOGS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "log"})
_DEPTH = 3
# spelled anywhere: a namespace read otherwise than `args.attr` of `args = p.parse_args()`
# (a `getattr(args, ...)`, `vars(args)` hand the name on, which keeps the finding anyway)
_OTHER_NAMESPACES = ("parse_known_args", "parse_intermixed_args", "__dict__", "Namespace")
_FOREIGN, _IDLE, _KEPT = "foreign", "idle", "kept"


def only_foreign_uses(node: ast.AST, ctx: Context, libraries: frozenset[str]) -> bool:
    """Whether the device value at ``node`` (an assignment or annotated one to a plain name,
    a conditional bound to one, an ``add_argument`` option, a call of a module function
    given it) reaches only other libraries (the module docstring)."""
    if any(w in ctx.source for w in (*_INTROSPECTION, *_SELF_READS)):
        return False
    flow = _Flow(ctx, libraries)
    if isinstance(node, ast.IfExp):
        parent = ctx.parent
        if isinstance(parent, ast.keyword):
            call = ctx.ancestors[-2] if len(ctx.ancestors) > 1 else None
            return isinstance(call, ast.Call) and flow.given(call, node, 0) == _FOREIGN
        if not isinstance(parent, ast.Assign):
            return False
        node = parent
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if len(targets) != 1 or not isinstance(targets[0], ast.Name):
            return False
        scope = next((a for a in reversed(ctx.ancestors) if isinstance(a, _SCOPES)), None)
        if isinstance(scope, ast.ClassDef):
            return False  # a class field
        return flow.name(targets[0].id, scope, 0) == _FOREIGN
    if isinstance(node, ast.Call):
        if method_name(node) == "add_argument":
            return flow.option(node, 0) == _FOREIGN
        given = [*node.args, *(k.value for k in node.keywords)]
        kinds = [flow.given(node, g, 0) for g in given if cuda_choice(g, ctx) is not None]
        return _joined(kinds) == _FOREIGN  # each CUDA value given
    return False


class _Flow:
    """The reads of one file: the checked one (``names`` None: its ``ctx.qualname``), or a
    project module a value was handed to (``names``: its imports, :func:`_imports`)."""

    def __init__(
        self,
        ctx: Context,
        libraries: frozenset[str],
        tree: ast.Module | None = None,
        path: str | None = None,
        names: dict[str, str] | None = None,
    ) -> None:
        self.ctx = ctx
        self.libraries = libraries
        self.tree = tree if tree is not None else ctx.tree
        self.path = path if path is not None else ctx.path
        self.names = names
        tree = self.tree
        self.parents = {id(c): p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
        self.functions = _module_functions(tree)

    def qualname(self, expr: ast.expr) -> str | None:
        """What ``expr`` names through the file's imports (None: not an import's)."""
        if self.names is None:
            return self.ctx.qualname(expr)
        if isinstance(expr, ast.Attribute):
            outer = self.qualname(expr.value)
            return None if outer is None else f"{outer}.{expr.attr}"
        return self.names.get(expr.id) if isinstance(expr, ast.Name) else None

    def name(self, name: str, holder: ast.AST | None, depth: int) -> str:
        """Every read of ``name`` in ``holder`` (None: the module, and no other file)."""
        scope = holder if holder is not None else self.tree
        for n in ast.walk(scope):
            if isinstance(n, (ast.Global, ast.Nonlocal)) and name in n.names:
                return _KEPT
        if holder is None and not self._file_alone(name):
            return _KEPT
        reads = [
            n
            for n in ast.walk(scope)
            if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
        ]
        return _joined(self.read(r, depth) for r in reads)

    def option(self, call: ast.Call, depth: int) -> str:
        """Every read of the option's ``args.<dest>``."""
        dest = _destination(call)
        parser = call.func.value if isinstance(call.func, ast.Attribute) else None
        if dest is None or not isinstance(parser, ast.Name):
            return _KEPT
        if self.names is not None or any(w in self.ctx.source for w in _OTHER_NAMESPACES):
            return _KEPT  # (an option only in the checked file)
        holder = self.parents.get(id(call))
        while holder is not None and not isinstance(holder, _FUNCTIONS):
            holder = self.parents.get(id(holder))
        if holder is None or not _kept_in(parser.id, holder):
            return _KEPT
        namespaces = _namespaces(self.ctx.tree)
        if not namespaces:
            return _KEPT
        reads: list[ast.expr] = []
        for n in ast.walk(self.ctx.tree):
            if not isinstance(n, ast.Name) or n.id not in namespaces:
                continue
            if isinstance(n.ctx, ast.Store) and id(n) in namespaces[n.id]:
                continue
            use = self.parents.get(id(n))
            if not isinstance(use, ast.Attribute) or use.value is not n:
                return _KEPT  # the namespace handed on
            if use.attr == dest:
                if not isinstance(use.ctx, ast.Load):
                    return _KEPT
                reads.append(use)
        return _joined(self.read(r, depth) for r in reads)

    def read(self, expr: ast.expr, depth: int) -> str:
        """Where one read of the value goes."""
        parent = self.parents.get(id(expr))
        if isinstance(parent, ast.Compare):
            return _IDLE
        if isinstance(parent, ast.FormattedValue):
            text = self.parents.get(id(parent))
            if not isinstance(text, ast.JoinedStr):
                return _KEPT
            call = self.parents.get(id(text))
            return _IDLE if isinstance(call, ast.Call) and self._says(call, text) else _KEPT
        if isinstance(parent, ast.keyword):
            parent = self.parents.get(id(parent))
        if isinstance(parent, ast.Call) and parent.func is not expr:
            return self.given(parent, expr, depth)
        return _KEPT

    def given(self, call: ast.Call, value: ast.expr, depth: int) -> str:
        """Where ``value``, an argument of ``call``, goes."""
        name = self.qualname(call.func)
        if name is not None and name.partition(".")[0] in self.libraries:
            return _FOREIGN
        if self._says(call, value):
            return _IDLE
        add = method_name(call) == "add_argument"
        if add and any(k.arg == "default" and k.value is value for k in call.keywords):
            return self.option(call, depth + 1) if depth < _DEPTH else _KEPT
        if depth >= _DEPTH or not isinstance(call.func, ast.Name):
            return _KEPT
        flow: _Flow | None = self
        func = self.functions.get(call.func.id)
        if func is None:
            flow, func = self._imported(call.func.id)
        if flow is None or func is None or func.decorator_list:
            return _KEPT
        param = _parameter(func, call, value)
        return _KEPT if param is None else flow.name(param, func, depth + 1)

    def _imported(self, name: str) -> tuple[_Flow | None, _Function | None]:
        """The function ``name`` is, where the file binds it only by one module-level
        ``from <project module> import f`` and that module defines ``f`` once at its top,
        naming it nowhere but as a callee, with the module's own flow."""
        from torchport.check.port._module_files import find_module, parse_file  # on first use

        binding = _only_import(self.tree, name)
        if binding is None:
            return None, None
        stmt, original = binding
        found = find_module(Path(self.path), stmt.module, stmt.level)
        tree = parse_file(found) if found is not None and found.suffix == ".py" else None
        if found is None or tree is None or _introspects(tree):
            return None, None
        func = _module_functions(tree).get(original)
        if func is None:
            return None, None
        return _Flow(self.ctx, self.libraries, tree, str(found), _imports(tree)), func

    def _says(self, call: ast.Call, value: ast.AST) -> bool:
        """``print(value)``, ``logger.info(value)``: the value only shown."""
        if value not in call.args:
            return False
        if isinstance(call.func, ast.Name):
            return call.func.id == "print" and "print" not in self.functions
        return isinstance(call.func, ast.Attribute) and call.func.attr in _LOGS

    def _file_alone(self, name: str) -> bool:
        """No other text file of the repository names ``name`` as a word."""
        from torchport.check.rules._project_calls import (  # on first use
            file_in_repository,
            repository_texts,
            whole_word,
        )

        found = file_in_repository(self.path)
        texts = repository_texts(found[0]) if found is not None else None
        if found is None or texts is None:
            return False
        word = whole_word(name)
        return not any(path != found[1] and word.search(data) for path, data in texts)


def _parameter(
    func: ast.FunctionDef | ast.AsyncFunctionDef, call: ast.Call, value: ast.AST
) -> str | None:
    """The parameter of ``func`` that ``value`` (an argument of ``call``) is given to."""
    for kw in call.keywords:
        if kw.value is value:
            names = {p.arg for p in (*func.args.args, *func.args.kwonlyargs)}
            return kw.arg if kw.arg in names else None
    if value not in call.args:
        return None
    position = call.args.index(value)
    if any(isinstance(a, ast.Starred) for a in call.args[: position + 1]):
        return None
    positional = [p.arg for p in (*func.args.posonlyargs, *func.args.args)]
    return positional[position] if position < len(positional) else None


def _joined(kinds: Iterable[str]) -> str:
    """Another library's when every read is that or idle and one is that; else kept."""
    seen = set(kinds)
    if _KEPT in seen:
        return _KEPT
    return _FOREIGN if _FOREIGN in seen else (_IDLE if seen else _KEPT)


def _only_import(tree: ast.Module, name: str) -> tuple[ast.ImportFrom, str] | None:
    """``(from M import x as name, x)`` where that module-level statement is the file's only
    binding of ``name`` (no other import, definition, assignment, parameter, ``del``)."""
    found: list[tuple[ast.ImportFrom, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                bound = alias.asname or alias.name.partition(".")[0]
                if bound != name:
                    continue
                if not isinstance(node, ast.ImportFrom) or node not in tree.body:
                    return None
                found.append((node, alias.name))
        elif name in _bound_by(node):
            return None  # bound otherwise too
    return found[0] if len(found) == 1 else None


def _bound_by(node: ast.AST) -> tuple[str, ...]:
    """The names ``node`` binds but by an import (a definition, a store, a parameter,
    a ``global``/``nonlocal``)."""
    if isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
        return (node.name,)
    if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
        return (node.id,)
    if isinstance(node, ast.arg):
        return (node.arg,)
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return tuple(node.names)
    return ()


def _imports(tree: ast.Module) -> dict[str, str]:
    """What each name a module binds only by imports stands for (``import a.b as c``: ``c``
    is ``a.b``; ``from .m import f``: ``.m.f``, a project's); a name bound twice or also
    otherwise (an assignment, a definition, a parameter) is left out."""
    names: dict[str, str | None] = {}
    others: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.asname or alias.name.partition(".")[0]
                value = alias.name if alias.asname else bound
                names[bound] = value if names.get(bound, value) == value else None
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                bound = alias.asname or alias.name
                value = "." * node.level + f"{node.module or ''}.{alias.name}".lstrip(".")
                names[bound] = value if names.get(bound, value) == value else None
        else:
            others.update(_bound_by(node))
    return {k: v for k, v in names.items() if v is not None and k not in others}


def _introspects(tree: ast.Module) -> bool:
    """The module calls ``eval``/``exec``/``globals``/``locals``/``vars``."""
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in _INTROSPECTED
        for n in ast.walk(tree)
    )
