"""Every checker rule, one per module, named after the rule.

Importing this package imports no rule: a check gets each rule's metadata from
``check/_catalog.py`` and imports a rule's module when the walk first hands it a
node. ``RULES`` (every shipped rule class, sorted by code) imports them all, on
first use; ``SHIPPED`` is the same tuple, kept when a test swaps ``RULES``.
"""

from __future__ import annotations

import importlib

from torchport.check._rule import Rule

__all__ = ["RULES", "SHIPPED"]

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    RULES: tuple[type[Rule], ...]
    SHIPPED: tuple[type[Rule], ...]


def _load() -> tuple[type[Rule], ...]:
    from torchport.check._catalog import ENTRIES

    found: list[type[Rule]] = []
    for entry in ENTRIES:
        rule = getattr(importlib.import_module(f"{__name__}.{entry.module}"), entry.class_name)
        if not (isinstance(rule, type) and issubclass(rule, Rule)):
            raise TypeError(f"{entry.module}.{entry.class_name} is not a rule (check/_catalog.py)")
        found.append(rule)
    return tuple(found)


def __getattr__(name: str) -> tuple[type[Rule], ...]:
    if name not in ("RULES", "SHIPPED"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    rules = _load()
    globals().setdefault("SHIPPED", rules)
    return globals().setdefault("RULES", rules)  # type: ignore[no-any-return]
