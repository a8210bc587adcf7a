"""A rule's documentation, rendered from its docstring and its own examples.

``torchport check --explain TP101`` prints this. The examples come from the
rule's ``invalid`` / ``valid`` tuples, the same ones the test suite runs, so
the documentation cannot drift from what the rule does.
"""

from __future__ import annotations

import difflib
import inspect

from torchport.check._rule import FixSafety, Intent, Rule
from torchport.check.rules import RULES
from torchport.errors import ConfigError

__all__ = ["explain"]

_FIXES = {
    FixSafety.NONE: "no automatic fix",
    FixSafety.SAFE: "`torchport fix` applies it",
    FixSafety.UNSAFE: "unsafe: `torchport fix --unsafe` applies it (see Fix safety)",
}

_INTENTS = {
    Intent.DEVICE: "device (runs on any accelerator): a plain `torchport fix` applies its fix",
    Intent.SAFETY: "safety (loading checkpoints): a plain `torchport fix` applies its fix",
    Intent.SPEED: "speed: its fix applies with `torchport fix --speed` or when you select "
    "this rule by code or prefix",
    Intent.PORT: "port (CPU-only code to the accelerator): run by `torchport port`",
}


def explain(code: str) -> str:
    """The documentation of the rule named by ``code`` (``"TP101"``) or its name, as Markdown.

    Raises:
        ConfigError: no rule has that code or name; the message lists close matches.
    """
    wanted = code.strip()
    for rule in RULES:
        if wanted.upper() == rule.code or wanted.lower() == rule.name:
            return _render(rule)
    known = [rule.code for rule in RULES] + [rule.name for rule in RULES]
    close = difflib.get_close_matches(wanted.upper(), known, n=3, cutoff=0.5)
    close += difflib.get_close_matches(wanted.lower(), known, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(dict.fromkeys(close))}?" if close else ""
    raise ConfigError(
        f"unknown rule {code!r}{hint} (rules are {RULES[0].code}..{RULES[-1].code}; "
        "`torchport check --explain TP101` describes one)"
    )


def _render(rule: type[Rule]) -> str:
    default = "on by default" if rule.default else f"off by default (`--select {rule.code}`)"
    lines = [
        f"# {rule.code} {rule.name}",
        "",
        f"Message: {rule.message}",
        f"Fix: {_FIXES[rule.fix_safety]}. This rule is {default}.",
        f"Intent: {_INTENTS[rule.intent]}.",
        "",
        inspect.cleandoc(rule.__doc__ or ""),
    ]
    for i, example in enumerate(rule.invalid):
        title = "## Example" if len(rule.invalid) == 1 else f"## Example {i + 1}"
        lines += ["", title, "", *_block(example.source)]
        if example.fixed is not None:
            lines += ["", "Fixed:", "", *_block(example.fixed)]
        elif rule.fix_safety is not FixSafety.NONE:
            lines += ["", "(reported, not fixed)"]
    if rule.valid:
        lines += ["", "## Not reported", ""]
        for source in rule.valid:
            lines += [*_block(source), ""]
        lines.pop()
    return "\n".join(lines) + "\n"


def _block(source: str) -> list[str]:
    return ["```python", *source.rstrip("\n").split("\n"), "```"]
