"""A rule's documentation, rendered from its docstring and its own examples.

``torchport check --explain TP101`` prints this. Nothing in it is written twice:
the examples come from the rule's ``invalid`` / ``valid`` tuples, the same ones
the test suite runs; the message is what ``check`` prints on those examples
(the engine's own output); and which command applies the fix is the sentence
:func:`~torchport.check._select.fix_command` builds from the same facts that
decide it. So the documentation cannot drift from what the rule does.
"""

from __future__ import annotations

import difflib
import inspect

from torchport.check._default_scope import BAR, KEPT_ON, LEFT_OFF, judged_sentence
from torchport.check._engine import check_source
from torchport.check._rule import FixSafety, Intent, Rule
from torchport.check._select import (
    BENCH,
    CODE,
    CONTEXTS,
    CUDA_NAMING,
    LEFT_FORMS,
    ONLY_FORMS,
    TEST,
    available_rules,
    fix_command,
)
from torchport.errors import ConfigError

__all__ = ["explain"]

_NAMES = {TEST: "test", BENCH: "benchmark"}  # "outside test and benchmark code"

_INTENTS = {
    Intent.DEVICE: "device (runs on any accelerator)",
    Intent.SAFETY: "safety (loading checkpoints)",
    Intent.SPEED: "speed (how fast data moves, not whether the program runs)",
    Intent.PORT: "port (CPU-only code to the accelerator)",
}


def explain(code: str) -> str:
    """The documentation of the rule named by ``code`` (``"TP101"``) or its name, as Markdown.

    Raises:
        ConfigError: no rule has that code or name; the message lists close matches.
    """
    wanted = code.strip()
    rules = available_rules()  # read now: this module may be imported while tests swap them
    for rule in rules:
        if wanted.upper() == rule.code or wanted.lower() == rule.name:
            return _render(rule)
    known = [rule.code for rule in rules] + [rule.name for rule in rules]
    close = difflib.get_close_matches(wanted.upper(), known, n=3, cutoff=0.5)
    close += difflib.get_close_matches(wanted.lower(), known, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(dict.fromkeys(close))}?" if close else ""
    raise ConfigError(
        f"unknown rule {code!r}{hint} (rules are {rules[0].code}..{rules[-1].code}; "
        "`torchport check --explain TP101` describes one)"
    )


def _default(rule: type[Rule]) -> str:
    """Where the rule is on by default, and the judged figures that decide it (_default_scope),
    and, for a rule that names CUDA, the code a default run leaves to it named."""
    where = _contexts(rule)
    if rule.default and rule.code in CUDA_NAMING:
        where += (
            f"; a default run leaves it out of code that needs CUDA anyway (a module importing "
            f"a CUDA-only package, its project's own CUDA-only extension, or compiling CUDA "
            f"sources, or surely importing a module of its project that does; code after such "
            f"an import in a block holding it; a module defining its own Triton kernel, though "
            f"Triton also runs on Intel XPUs), where "
            f"`--extend-select {rule.code}` runs it too"
        )
    if rule.default and rule.code in LEFT_FORMS:
        where += (
            "; a default run leaves out its CUDA defaults of parameters "
            '(`def f(device="cuda")`) and CUDA values of settings dicts (`{"device": "cuda"}`), '
            f"judged mostly not real, which `--extend-select {rule.code}` reports too"
        )
    if rule.default and rule.code in ONLY_FORMS:
        where += (
            "; a default run reports it only where the file loaded is a model's state: what "
            "is loaded reaches `load_state_dict(...)`, the load maps no file (`mmap=`), and "
            f"the module names a device; `--extend-select {rule.code}` reports every load"
        )
    if rule.default and (rule.code in CUDA_NAMING or rule.code in LEFT_FORMS):
        where += "; the summary of a default run counts what it leaves out there"
    return where


def _contexts(rule: type[Rule]) -> str:
    figures = judged_sentence(rule.code)
    why = f" ({figures})" if figures else ""
    if not rule.default and rule.code in LEFT_OFF:
        return (
            f"off by default{why}: {LEFT_OFF[rule.code]}; `--extend-select {rule.code}` "
            "(or `--select`) runs it everywhere"
        )
    if not rule.default and figures:
        return (
            f"off by default: under {BAR:.0%} real outside test code{why}; "
            f"`--extend-select {rule.code}` (or `--select`) runs it everywhere"
        )
    if not rule.default:
        return f"off by default (`--select {rule.code}`)"
    if rule.default_contexts == CONTEXTS:
        return f"on by default{why}"
    left = " and ".join(_NAMES[c] for c in sorted(CONTEXTS - rule.default_contexts, reverse=True))
    where = f"outside {left} code" if CODE in rule.default_contexts else "in test code only"
    if rule.code in KEPT_ON:
        return (
            f"on by default {where}{why}, under the {BAR:.0%} bar and kept on: "
            f"{KEPT_ON[rule.code]}; `--extend-select {rule.code}` (or `--select`) runs it "
            "everywhere"
        )
    return (
        f"on by default {where}{why}, where its judged findings are at least "
        f"{BAR:.0%} real; `--extend-select {rule.code}` (or `--select`) runs it everywhere"
    )


def _render(rule: type[Rule]) -> str:
    default = _default(rule)
    see = " (see Fix safety)" if rule.fix_safety is FixSafety.UNSAFE else ""
    findings = [
        f
        for example in rule.invalid
        for f in check_source(example.source, select=[rule.code])
        if f.code == rule.code
    ]
    messages = list(dict.fromkeys(f.message for f in findings)) or [rule.message]
    some_safe = any(f.fix is not None and f.fix.safety is FixSafety.SAFE for f in findings)
    lines = [f"# {rule.code} {rule.name}", ""]
    if len(messages) == 1:
        lines.append(f"Message: {messages[0]}")
    else:
        lines += ["Messages (what `check` prints on the examples below):"]
        lines += [f"- {m}" for m in messages]
    lines += [
        f"Fix: {fix_command(rule, some_safe=some_safe)}{see}. This rule is {default}.",
        f"Intent: {_INTENTS[rule.intent]}.",
        "",
        inspect.cleandoc(rule.__doc__ or ""),
    ]
    doc = rule.__doc__ or ""
    if not rule.default and judged_sentence(rule.code) and "## Why is it off" not in doc:
        lines += ["", "## Why is it off by default?", f"This rule is {default}."]
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
