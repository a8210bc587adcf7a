"""The methods ``__init__`` runs, and the words of a text: what ``builds_the_module`` reads.

Pure functions of a class and of a text (no Context): ``rules/_module_tensors.py`` keeps
their answers per class and per file.
"""

from __future__ import annotations

import ast
from collections import Counter

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "base_init_may_call",
    "init_chain",
    "may_hold_weights",
    "returns_a_built_module",
    "self_calls_of_init",
    "words",
]


def init_chain(
    cls: ast.ClassDef,
) -> tuple[dict[str, ast.FunctionDef], dict[int, str], Counter[str]]:
    """``__init__`` of ``cls`` and the methods it calls on ``self``, through one another, by
    name; the ``self.<name>`` of each call made on the way (by id: its name); and how many
    of those there are of each name."""
    methods = {s.name: s for s in cls.body if isinstance(s, ast.FunctionDef)}
    found: dict[str, ast.FunctionDef] = {}
    inside: dict[int, str] = {}
    todo = ["__init__"]
    while todo:
        name = todo.pop()
        if name in found or name not in methods:
            continue
        found[name] = methods[name]
        for c in ast.walk(methods[name]):
            if (
                isinstance(c, ast.Call)
                and isinstance(c.func, ast.Attribute)
                and isinstance(c.func.value, ast.Name)
                and c.func.value.id == "self"
            ):
                inside[id(c.func)] = c.func.attr
                todo.append(c.func.attr)
    return found, inside, Counter(inside.values())


def words(source: str, name: str) -> int | None:
    """How often ``source`` writes ``name`` as a whole word (None: ``source`` is not ASCII).

    ``name`` is an identifier, never a keyword: valid Python never writes one right after a
    digit, so a word character on either side means a longer word, not ``name``.
    """
    if not source.isascii():
        return None
    count = 0
    size = len(name)
    at = source.find(name)
    while at >= 0:
        end = at + size
        if not (at and _word_char(source[at - 1])) and not (
            end < len(source) and _word_char(source[end])
        ):
            count += 1
        at = source.find(name, end)
    return count


def _word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


def base_init_may_call(
    name: str,
    cls: ast.ClassDef,
    classes: dict[str, ast.AST],
    qualname: Callable[[ast.expr], str | None],
    hook: bool,
    seen: set[int] | None = None,
) -> bool:
    """Whether the ``__init__`` of a base class of ``cls`` may call ``self.<name>(...)``.

    A base's ``__init__`` runs where ``cls`` has none of its own, or where its own calls
    ``super().__init__(...)`` or ``Base.__init__(self, ...)``. A base among ``classes`` (the
    file's, by name) answers by its ``__init__`` chain and its own bases; torch's classes,
    ``object``, ``ABC`` and mixins call no method of a subclass; any other base (another
    file's: ``from .base import BaseAutoencoder``) is not seen: ``hook`` answers for it (a
    method the file never calls that builds a module for its caller, ``_build_encoder``).
    ``seen``: the classes already asked (a cycle of bases ends there).
    """
    seen = set() if seen is None else seen
    if id(cls) in seen:
        return False
    seen.add(id(cls))
    init = next(
        (s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None
    )
    if init is not None and not _calls_a_base_init(init):
        return False
    for base in cls.bases:
        full = qualname(base) or ""
        if full.startswith("torch.") or not may_hold_weights(base, full):
            continue  # torch's, `object`, `ABC`, a mixin: calls no method of the subclass
        shown = classes.get(base.id) if isinstance(base, ast.Name) else None
        if isinstance(shown, ast.ClassDef) and shown is not cls:
            if name in init_chain(shown)[2] or base_init_may_call(
                name, shown, classes, qualname, hook, seen
            ):
                return True
            continue
        if hook:
            return True  # a base not shown here: its `__init__` may call the hook
    return False


def _calls_a_base_init(init: ast.FunctionDef) -> bool:
    """``super().__init__(...)`` or ``Base.__init__(self, ...)`` in ``init``."""
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "__init__"
        for n in ast.walk(init)
    )


_NO_WEIGHTS = frozenset({"torch.nn.Module", "abc.ABC", "typing.Generic", "object"})


def may_hold_weights(base: ast.expr, name: str | None) -> bool:
    """Whether an ``__init__`` inherited from ``base`` may build weights."""
    tail = str(getattr(base, "id", None) or getattr(base, "attr", ""))
    return name not in _NO_WEIGHTS and tail not in ("object", "ABC") and not tail.endswith("Mixin")


def self_calls_of_init(cls: ast.ClassDef) -> frozenset[str]:
    """The names ``self.<name>(...)`` the first ``__init__`` in ``cls``'s body calls."""
    for stmt in cls.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == "__init__":
            return frozenset(
                n.func.attr
                for n in ast.walk(stmt)
                if isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and isinstance(n.func.value, ast.Name)
                and n.func.value.id == "self"
            )
    return frozenset()


def returns_a_built_module(method: ast.FunctionDef, builds: Callable[[ast.Call], bool]) -> bool:
    """Whether ``method`` returns what it builds: one of its ``return`` statements gives a call
    ``builds`` answers for (``return nn.Sequential(nn.Linear(n, 3))``), not a value that
    merely holds one (``return {"loss": loss, "n": torch.tensor(2)}``, a step's result)."""
    return any(
        isinstance(r, ast.Return) and isinstance(r.value, ast.Call) and builds(r.value)
        for r in ast.walk(method)
    )
