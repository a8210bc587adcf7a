"""Every checker rule, one per module, named after the rule."""

from __future__ import annotations

from torchport.check._rule import Rule

RULES: tuple[type[Rule], ...] = ()
