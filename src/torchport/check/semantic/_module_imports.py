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

__all__ = ["ModuleImports", "module_import_targets"]


class ModuleImports:
    """The names of one file that only module-level imports bind, asked name by name."""

    def __init__(self, facts: StatementFacts, source: str) -> None:
        self.source = source
        self.facts = facts
        self.ascii = source.isascii()  # else every answer is None: the scope pass decides
        self._answers: dict[str, str | None] = {}
        self._only: dict[str, bool] = {}  # only_imports' answers

    def target(self, name: str) -> str | None:
        """The one dotted target of ``name``'s imports, or None: ask the scope pass."""
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
    imports = ModuleImports(facts, source)
    found = {name: imports.target(name) for name in facts.module_imports}
    return {name: target for name, target in found.items() if target is not None}


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
