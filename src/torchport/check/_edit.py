"""A text edit: the record both the engine's fixes and the semantic model build.

It imports only ``_records``, so ``check/semantic/`` can build edits without importing the
engine (``tests/test_layers.py::test_semantic_imports_no_engine_module`` holds that).
"""

from __future__ import annotations

from torchport.check._records import record

__all__ = ["NO_FIX", "Edit"]


@record(frozen=True, order=True)
class Edit:
    """Replace ``source[start:end]`` (character offsets) with ``text``; ``start == end`` inserts."""

    start: int
    end: int
    text: str


# An edit no fix can apply: a fix holding it is dropped (reported without a fix). Legacy
# Context helpers return it when no safe edit exists; new code returns None instead.
NO_FIX = Edit(-1, -1, "")
