"""Rules a file's text shows cannot report there, skipped before the walk: a sound prefilter.

Some rules report only a string constant that starts with a word (``"cuda"``,
``"cuda:0"``, ``"cuda:{}"``) or a name or attribute equal to it (``x.cuda()``,
a keyword ``weights_only=``).
Such a rule is asked of every call of every file, yet most files never hold the
word: the engine drops the rule for a file whose text cannot make it.

The invariant: a rule is skipped only when no string constant of the parsed file
can start with (or contain) the word and no identifier can equal (or contain) it.
The text alone decides, so every way Python builds a constant or an identifier
from other characters turns the prefilter off for that file:

* an escape that makes a character (``"\\x63uda"``, ``"\\u0063"``, ``"\\N{...}"``,
  octal ``"\\143"``) or a backslash-newline (inside a string it is dropped);
* implicit concatenation that splits the word (``"cu" "da"``, also across lines,
  comments and string prefixes): a piece ending in a proper prefix of the word
  followed by another literal;
* a file that is not ASCII (identifiers are NFKC-normalised: a fullwidth ``cuda`` is ``cuda``).

Other escapes (``\\n``, ``\\t``, ``\\\\``, ``\\'`` ...) make no letter, so they cannot
hide one. ``tests/check/test_prefilter.py`` holds the invariant against the parsed
tree on generated sources, and the findings with and without the prefilter.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection

from torchport.check._patterns import lazy_pattern

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check._context import Context

__all__ = ["NEEDS", "PORT_GATED", "absent_rules", "may_hold", "port_gated", "port_may_report"]

# code -> the word without which the rule reports nothing (see the module docstring:
# the rule reports only constants starting with it or identifiers equal to it).
NEEDS: dict[str, str] = {
    "TP101": "cuda",  # `.cuda()`, "cuda" / "cuda:N" device literals
    "TP113": "cuda",  # device_type="cuda"
    "TP115": "cuda",  # f"cuda:{i}", "cuda:%d" % i, "cuda:" + str(i)
    # `weights_only=False`, or a key of a `**{...}` dict: what the rule judges, and
    # without it the rule reports nothing (its `check` ends at once)
    "TP302": "weights_only",
    # the variable's name as a string (a subscript, a setter's argument or dict key) or
    # as a keyword of `os.environ.update(...)`
    "TP306": "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD",
    "TP310": "load",  # a call of a method whose name holds it (`Net.load_from_file(...)`)
    "TP407": "allow_tf32",  # the attribute `....matmul.allow_tf32 = ...` assigned
}

_ESCAPES = lazy_pattern(r"\\[xuUN0-7\r\n]")


def _escapes(source: str) -> bool:
    # the pattern is compiled only for a text with a backslash, which it needs (start-up)
    return "\\" in source and _ESCAPES.search(source) is not None


# Where a word may be split (``"cu" "da"``): a literal ends in a proper prefix of the word
# and another literal follows. Per word (:func:`_ends`): its first character, then word
# characters up to a proper prefix's length, taken whole (possessive: a longer run fails
# at once), then a quote; then, looked at without being taken, what may stand between
# two literals, also taken whole and never given back: a comment runs to its line's end,
# as Python reads it (backtracking there split a comment of n `#` into 2^(n-1) ways: a
# `####...` banner line after a string ending in "a" hung the check), and the next
# literal's quote. Which prefix the run ends in is read after (:func:`_split`): with the
# prefixes nested in the pattern ("w(?:e(?:i)?)?" for "weig"), sre took up to 0.5 ms to
# compile a word (the 32 letters of TP306's), most of a small file's check after the imports.
_ENDS: dict[str, re.Pattern[str]] = {}


def _ends(word: str) -> re.Pattern[str]:
    found = _ENDS.get(word)
    if found is None:
        found = _ENDS[word] = re.compile(
            rf"{re.escape(word[0])}\w{{0,{len(word) - 2}}}+[\"']"
            r"(?=(?:\s|#[^\r\n]*+|\\\r?\n)*+[rRbBuUfF]{0,2}[\"'])"
        )
    return found


def _split(source: str, word: str) -> bool:
    """Whether a literal of ``source`` ends in a proper prefix of ``word`` before another.

    The words are ASCII identifiers (tests/check/test_prefilter.py), and ``source`` is
    ASCII here: a prefix is a run of word characters that ends at the quote.
    """
    if len(word) < 2 or ('"' not in source and "'" not in source):  # no literal to split
        return False
    for match in _ends(word).finditer(source):
        start, quote = match.start(), match.end() - 1
        if any(source.endswith(word[:size], start, quote) for size in range(1, len(word))):
            return True
    return False


def may_hold(source: str, word: str) -> bool:
    """Whether the parsed ``source`` may hold ``word`` in a string constant or an identifier.

    False only when it certainly holds none (see the module docstring).
    """
    if word in source or not source.isascii() or _escapes(source):
        return True
    return _split(source, word)


def absent_rules(source: str, codes: Collection[str]) -> frozenset[str]:
    """The codes among ``codes`` whose rules cannot report anything in ``source``."""
    # NEEDS's few codes asked of ``codes`` (a rule set's frozenset), not each selected
    # code of NEEDS: once per file, over every rule of the set, that was the larger part
    words = {word for code, word in NEEDS.items() if code in codes}
    # may_hold, word by word, with the whole-text scans done once for all the words
    missing = {word for word in words if word not in source}
    if not missing or not source.isascii() or _escapes(source):
        return frozenset()
    missing = {word for word in missing if not _split(source, word)}
    return frozenset(code for code, word in NEEDS.items() if word in missing and code in codes)


# The port's rules (`port`'s selection: TP5xx, TP201, TP301) the port's file gate was shown
# for, rule by rule (``port/_gate.py``): a rule set of these alone, TP502 among them, walks
# no file the gate says none of them can report in. A rule added to the port joins the set
# only with its own reason there (until then a set holding it is not gated). TP109, which
# the port reports only (a kept CUDA-or-CPU choice), and TP120: see ``port/_gate.py``.
PORT_GATED = frozenset(
    {"TP109", "TP120", "TP201", "TP301", "TP501", "TP502", "TP503", "TP504", "TP505", "TP506",
     "TP507", "TP508", "TP509", "TP510", "TP511", "TP520", "TP521", "TP522", "TP523"}
)  # fmt: skip


@functools.cache
def port_gated(codes: frozenset[str]) -> bool:
    """Whether the file gate applies to a rule set of ``codes`` (see :data:`PORT_GATED`)."""
    return "TP502" in codes and codes <= PORT_GATED


def port_may_report(ctx: Context) -> bool:
    """:func:`torchport.check.port._gate.may_report` (imported on first use: a port's)."""
    from torchport.check.port._gate import may_report

    return may_report(ctx)
