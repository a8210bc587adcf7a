"""Rules a test probes as if on by default everywhere, whatever the default set is now.

The default set is data (``check/_default_scope.py``: a rule goes off where its judged
findings miss the bar), so a test of what a default run leaves out (the CUDA-naming rules in
code that needs CUDA anyway) must not hang on which rules are on today: it swaps
``torchport.check.rules.RULES`` for the shipped rules with its probes turned on everywhere
(a subclass each, same code and checks), as ``check/_select.swapped_rules`` allows.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

import torchport.check.rules as rules_pkg
from torchport.check._rule import Rule
from torchport.check._select import CONTEXTS


def _on(rule: type[Rule]) -> type[Rule]:
    attrs = {"default": True, "default_contexts": CONTEXTS, "__doc__": rule.__doc__}
    return type(rule.__name__, (rule,), attrs)


@contextmanager
def on_by_default(*codes: str) -> Iterator[None]:
    """The shipped rules, ``codes`` on by default in every context, for the ``with`` block."""
    shipped = rules_pkg.RULES
    assert set(codes) <= {rule.code for rule in shipped}, codes
    swapped = tuple(_on(rule) if rule.code in codes else rule for rule in shipped)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rules_pkg, "RULES", swapped)
        yield
