"""Names only module-level imports bind: their meaning needs no scope pass.

:meth:`~torchport.check.semantic.ScopeMap.qualname` answers what ``th.cuda.x``
means by building every scope of the file. For a name that module-level imports
bind and nothing else binds anywhere in the file, the answer is the same at every
read: the imports' one target (``import torch as th`` -> ``torch``). This module
finds those names cheaply: the statements (imports only), and the text.

Why the text suffices: every way to bind a name (assignment, parameter, ``def``,
``class``, ``for``, ``with ... as``, ``except ... as``, ``:=``, ``global``, ``del``,
``match`` captures, type parameters, an import with ``as``) writes the name followed
by something other than a dot, ``(`` or ``[``, except ``import a.b`` (which binds
``a``) and ``def name(``, ``class name(`` / ``class name[`` and ``type name[`` (a word
before the name says so), and the statement walk sees every import. So a name whose
other occurrences (``name.attr``, ``name(...)``, ``name[...]``) are left out, and whose
remaining occurrences are exactly its module-level imports, is bound by nothing else
(nor does a binding come after ``->`` or before a backtick: those are left out too). Occurrences in
strings and comments only make a name fail the test (the scope pass then answers).
A file that is not ASCII is left to the scope pass (identifiers are NFKC-normalised,
so the text may spell a name otherwise). ``tests/check/semantic/test_module_imports.py``
holds the answers to the scope pass's on generated programs.
"""

from __future__ import annotations

import ast

from torchport.check.semantic._binding import StatementFacts, statement_facts

__all__ = ["ModuleImports", "module_bound", "module_import_targets"]


class ModuleImports:
    """The names of one file that only module-level imports bind, asked name by name."""

    def __init__(self, facts: StatementFacts, source: str, tree: ast.Module) -> None:
        self.source = source
        self.tree = tree  # the module the facts are of
        self.facts = facts
        self.ascii = source.isascii()  # else every answer is None: the scope pass decides
        self._answers: dict[str, str | None] = {}
        self._only: dict[str, bool] = {}  # only_imports' answers
        self._at_module: dict[str, bool] = {}  # only_at_module's answers
        # module_bound's answer (None: not known), read on first use
        self._bound: frozenset[str] | None = None
        self._bound_read = False

    def target(self, name: str, *, at_module: bool = False) -> str | None:
        """The one dotted target of ``name``'s imports, or None: ask the scope pass.

        ``at_module``: for a read in the module's own scope (no function, class body,
        lambda or comprehension holds it), where the scope pass resolves a name only
        module-level imports bind there (:meth:`only_at_module`) to their one target, read
        from the statements where the text declines; ``""`` for a relative import's (the
        pass's answer: no dotted name).
        """
        if at_module:
            told = self.target(name)
            if told is None:  # (a function's own import binds only there)
                targets = self.facts.module_imports.get(name)
                if targets is not None and len(targets) == 1 and self.only_at_module(name):
                    (only,) = targets
                    told = "" if only is None else only
            return told
        if name in self._answers:
            return self._answers[name]
        facts = self.facts
        found = facts.module_imports.get(name)
        answer: str | None = None
        if (
            self.ascii
            and found is not None
            and len(found) == 1
            and name not in facts.nested_imports
        ):
            (only,) = found
            if only is not None and _occurrences(self.source, name) == facts.written.get(name, 0):
                answer = only  # relative imports (None) are left to the pass
        self._answers[name] = answer
        return answer

    def only_at_module(self, name: str) -> bool:
        """Whether module-level imports bind ``name`` and nothing else at module level does
        (a function or class may bind it for itself): the scope pass's module-level bindings
        of ``name`` are imports only. Read from the text (:meth:`only_imports`), else from the
        statements (:func:`module_bound`). False: ask the scope pass."""
        found = self._at_module.get(name)
        if found is None:
            found = self.only_imports(name)
            if not found and name in self.facts.module_imports:
                if not self._bound_read:  # (once per file, and only where the text declines)
                    self._bound_read = True
                    # `:=` binds in the enclosing function or module from inside any
                    # expression (a comprehension's too): not read from the statements
                    source = self.source
                    self._bound = None if ":=" in source else module_bound(self.tree, source)
                found = self._bound is not None and name not in self._bound
            self._at_module[name] = found
        return found

    def only_imports(self, name: str) -> bool:
        """Whether module-level imports bind ``name`` and nothing else anywhere in the file
        does (relative imports too): the scope pass's module-level bindings of ``name`` are
        those imports and nothing else. False: ask the scope pass."""
        found = self._only.get(name)
        if found is None:
            facts = self.facts
            found = self._only[name] = (
                self.ascii
                and name in facts.module_imports
                and name not in facts.nested_imports
                and _occurrences(self.source, name) == facts.written.get(name, 0)
            )
        return found


def module_import_targets(tree: ast.Module, source: str) -> dict[str, str]:
    """``{name: dotted target}`` for every name only module-level imports bind, one target each."""
    facts = statement_facts(tree)
    imports = ModuleImports(facts, source, tree)
    found = {name: imports.target(name) for name in facts.module_imports}
    return {name: target for name, target in found.items() if target is not None}


# Statements that bind nothing themselves and hold no statements.
_BINDS_NOTHING = (
    ast.Import,
    ast.ImportFrom,
    ast.Nonlocal,
    ast.Expr,
    ast.Return,
    ast.Raise,
    ast.Assert,
    ast.Pass,
    ast.Break,
    ast.Continue,
)


def module_bound(tree: ast.Module, source: str | None = None) -> frozenset[str] | None:
    """The names module-level statements bind otherwise than by an import, as the scope
    pass records them in the module's scope: a ``def``'s or ``class``'s name, the names of
    an assignment's (augmented, annotated with a value), a ``for``'s, a ``with``'s or a
    ``del``'s targets, an ``except``'s name; in the blocks of module-level ``if``, ``for``,
    ``while``, ``with`` and ``try`` too, never in a function's or class's body (their own
    scopes). And every name a ``global`` statement declares, anywhere: a function may bind
    it for the module. None where statements alone cannot say: a module-level ``match``
    (its captures), a type alias or type parameters, a statement of a kind not listed here.
    The caller leaves out ``:=``, which binds from inside an expression
    (``ModuleImports.only_at_module``). ``source``: the tree's text, where given; a text
    without the word ``global`` holds no ``global`` statement: its functions and classes
    are not walked for one.
    """
    found: set[str] = set()
    todo: list[ast.stmt] = list(tree.body)
    inner: list[ast.AST] = []  # the bodies of functions and classes: their `global`s only
    while todo:
        stmt = todo.pop()
        if isinstance(stmt, ast.Global):
            found.update(stmt.names)
        elif isinstance(stmt, _BINDS_NOTHING):
            continue
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if getattr(stmt, "type_params", None):
                return None
            found.add(stmt.name)
            inner.extend(stmt.body)
        elif isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                _target_names(target, found)
        elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
            if not isinstance(stmt, ast.AnnAssign) or stmt.value is not None:
                _target_names(stmt.target, found)  # (`x: int` alone binds nothing)
        elif isinstance(stmt, ast.Delete):
            for target in stmt.targets:
                _target_names(target, found)
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            _target_names(stmt.target, found)
            todo.extend(stmt.body + stmt.orelse)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                if item.optional_vars is not None:
                    _target_names(item.optional_vars, found)
            todo.extend(stmt.body)
        elif isinstance(stmt, (ast.If, ast.While)):
            todo.extend(stmt.body + stmt.orelse)
        elif isinstance(stmt, (ast.Try, ast.TryStar)):
            todo.extend(stmt.body + stmt.orelse + stmt.finalbody)
            for handler in stmt.handlers:
                if handler.name:
                    found.add(handler.name)
                todo.extend(handler.body)
        else:
            return None  # `match`, `type X = ...`, or a statement this walk does not know
    if source is not None and "global" not in source:
        inner.clear()  # (no `global` anywhere in the text: none in a body)
    while inner:  # every statement of every function and class body, nested ones too
        node = inner.pop()
        if isinstance(node, ast.Global):
            found.update(node.names)
        for field in _BLOCKS:
            block = getattr(node, field, None)
            if block.__class__ is list:
                inner.extend(block)
    return frozenset(found)


# The fields that hold statements (of a statement, an `except` handler, a `match` case).
_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")


def _target_names(target: ast.expr, found: set[str]) -> None:
    """The names a target binds: itself, or inside a tuple, list or starred target (an
    attribute's or subscript's names are read)."""
    if isinstance(target, ast.Name):
        found.add(target.id)
    elif isinstance(target, (ast.Tuple, ast.List)):
        for item in target.elts:
            _target_names(item, found)
    elif isinstance(target, ast.Starred):
        _target_names(target.value, found)


def _occurrences(source: str, name: str) -> int:
    """How often ``source`` writes ``name`` as a whole word that may bind it.

    Left out: a name followed by a dot (``name.attr``), one followed by ``(`` or
    ``[`` (a call or a subscript: a read) unless ``def``, ``class`` or ``type`` comes
    before it (``def name(``, ``class name[T]``, ``type name[T] = ...`` bind it), one
    after ``->`` (a return annotation) and one followed by a backtick (no Python code
    writes one: a docstring's or a comment's).
    """
    count = 0
    size = len(name)
    at = source.find(name)
    while at >= 0:
        end = at + size
        before = source[at - 1] if at else " "
        after = source[end] if end < len(source) else " "
        word = not (before.isalnum() or before == "_" or after.isalnum() or after == "_")
        if word and not (
            _attribute_follows(source, end)
            or _read_follows(source, at, end)
            or _annotates_a_return(source, at)
            or source.startswith("`", end)  # `name` in a docstring: no code writes a backtick
        ):
            count += 1
        at = source.find(name, end)
    return count


def _attribute_follows(source: str, end: int) -> bool:
    """Whether ``.identifier`` follows position ``end`` (spaces and line ends skipped).

    A dot followed by a digit or a dot is not an attribute: after a line end it
    starts a statement of its own (``global x`` then ``.5`` or ``...``).
    """
    size = len(source)
    rest = end
    while rest < size and source[rest] in " \t\f\r\n\\":
        rest += 1
    if rest == size or source[rest] != ".":
        return False
    rest += 1
    while rest < size and source[rest] in " \t\f\r\n\\":
        rest += 1
    return rest < size and (source[rest].isalpha() or source[rest] == "_")


def _annotates_a_return(source: str, at: int) -> bool:
    """Whether ``->`` comes before position ``at`` on its line: a return annotation reads."""
    i = at
    while i > 0 and source[i - 1] in " \t\f":
        i -= 1
    return source[i - 2 : i] == "->"


def _read_follows(source: str, at: int, end: int) -> bool:
    """Whether a call or subscript of the name at ``at`` follows on the same line."""
    size = len(source)
    rest = end
    while rest < size and source[rest] in " \t\f":
        rest += 1
    return rest < size and source[rest] in "([" and not _after_keyword(source, at)


# Words after which a name followed by `(` or `[` is bound (`def f(`, `class C[T]`,
# `type A[T] =`); taken for one whenever the text shows them, even as a soft keyword.
_BINDING_WORDS = frozenset({"def", "class", "type"})


def _after_keyword(source: str, at: int) -> bool:
    """Whether the word before position ``at`` may bind the name there (True if unsure)."""
    i = at
    while i > 0 and source[i - 1] in " \t\f":
        i -= 1
    if i > 0 and source[i - 1] in "\r\n":
        j = i - 2 if source[i - 2 : i] == "\r\n" else i - 1
        return j > 0 and source[j - 1] == "\\"  # a line join: unsure; else a new line
    start = i
    while start > 0 and (source[start - 1].isalnum() or source[start - 1] == "_"):
        start -= 1
    return source[start:i] in _BINDING_WORDS
