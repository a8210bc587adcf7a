"""The methods ``__init__`` runs, and the words of a text: what ``builds_the_module`` reads.

Pure functions of a class and of a text (no Context): ``rules/_module_tensors.py`` keeps
their answers per class and per file.
"""

from __future__ import annotations

import ast
from collections import Counter

__all__ = ["init_chain", "words"]


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
