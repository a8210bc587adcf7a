"""Parsing a file, and saying which Python it needs when this one cannot read it.

The checker parses with the ``ast`` of the Python it runs on. A file written for
a newer Python (a ``type`` alias or ``def f[T]`` of 3.12, an f-string reusing
its quotes, a ``t"..."`` template string of 3.14) is then a syntax error whose
message ("invalid syntax") sends the user looking for a typo that is not there.
:func:`parse_source` keeps the error, and when the line it points at holds
syntax of a newer Python, says which Python that is and what to do.
"""

from __future__ import annotations

import ast
import re
import sys
from collections import OrderedDict

from torchport.check._listing import real_path
from torchport.check._patterns import lazy_pattern

__all__ = [
    "NewerSyntaxError",
    "adopt_scopes",
    "keep_checked",
    "keep_parsed",
    "kept_for",
    "offer_scopes",
    "parse_source",
    "parsed_module",
    "retain_checked",
    "syntax_needs",
]
# Sources this long or longer are parsed in pieces (check/_chunked_parse.py's CHUNKED_FROM,
# held equal by tests/check/test_chunked_parse.py); shorter ones whole, its module unimported.
_PIECES_FROM = 512 * 1024

# (pattern on the line the error points at, the Python it needs, what it is). Possessive and
# atomic pieces keep each search linear in the line (tests/check/test_syntax_backtracking.py).
_NEWER: tuple[tuple[re.Pattern[str], tuple[int, int], str], ...] = (
    (
        lazy_pattern(r"^\s*+type\s++[A-Za-z_]\w*+\s*+(\[[^\]]*+\])?+\s*+="),
        (3, 12),
        "a `type` alias statement (PEP 695)",
    ),
    (
        lazy_pattern(r"^\s*(async\s+def|def|class)\s+[A-Za-z_]\w*\s*\["),
        (3, 12),
        "type parameters on a `def` or `class` (PEP 695)",
    ),
    (
        lazy_pattern(r"""(?<![\w'"])[rRbB]?[fF][rR]?(?P<q>["'])(?>[^"'\n]*\{)[^}\n]*?(?P=q)"""),
        (3, 12),
        "an f-string that reuses its quotes inside `{}` (PEP 701)",
    ),
    (
        lazy_pattern(r"""(?<![\w'"])[rR]?[fF][rR]?["'](?>[^"'\n]*\{)[^}\n\\]*+\\"""),
        (3, 12),
        "a backslash inside an f-string's `{}` (PEP 701)",
    ),
    (
        lazy_pattern(r"""(?<![\w'"])[rR]?[tT][rR]?["']"""),
        (3, 14),
        'a template string `t"..."` (PEP 750)',
    ),
    (
        lazy_pattern(r"^\s*+except\*?\s++(?>[^():\n]+,)[^:\n]*+:"),
        (3, 14),
        "`except A, B:` without parentheses (PEP 758)",
    ),
)


class NewerSyntaxError(SyntaxError):
    """A file that uses syntax of a newer Python than the one torchport runs on.

    Not the file's mistake: its message says which Python can read it.
    """


def syntax_needs(source: str, error: SyntaxError) -> tuple[str, str] | None:
    """The Python (``"3.12"``) and the feature on the line ``error`` points at, if newer.

    None when that line holds no syntax newer than the running Python: a plain
    syntax error.
    """
    if not error.lineno:
        return None
    lines = source.splitlines()
    if not 0 < error.lineno <= len(lines):
        return None
    line = lines[error.lineno - 1]
    for pattern, version, feature in _NEWER:
        if sys.version_info[:2] < version and pattern.search(line):
            return f"{version[0]}.{version[1]}", feature
    return None


# Files another pass parsed before their own turn came (the port reads a project's sibling
# modules for their facts): real path -> (text, tree, the Context a project view made of it
# (check/_file_context.py) or None). The file's own parse takes the tree when the text is the
# same, and its walk that Context, so a file is parsed and scoped once per run, not per role.
# Bounded: a tree nobody takes (another worker's file, a file changed since) costs memory
# only until it is pushed out.
_KEPT: OrderedDict[str, tuple[str, ast.Module, object | None]] = OrderedDict()
_KEPT_MAX = 256
# What was kept with the tree parse_source handed out last (kept alive with it, so the id
# names that tree): the walk of that tree adopts it (adopt_scopes, _file_context).
_ADOPT: list[tuple[ast.Module, object]] = []


def keep_parsed(path: str, source: str, tree: ast.Module, scopes: object | None) -> None:
    """Offer ``tree`` (and what was built on it: a Context, a scope map) to the file's own
    parse later.

    ``tree`` must be ``ast.parse(source)`` unchanged, and ``scopes`` built on it
    from the tree alone: whoever takes them gets what its own parse would have made.
    ``scopes`` is handed over: the caller keeps no use of it (``_project.module_facts``'s
    facts hold none of its objects). What no parse takes (pushed out, replaced, left
    unadopted, its text changed) is released here (:func:`_drop`): no cycle of its
    bindings and scopes is left for the collector.
    """
    key = real_path(path)
    old = _KEPT.get(key)
    _KEPT[key] = (source, tree, scopes)
    _KEPT.move_to_end(key)
    if old is not None and old[2] is not scopes:
        _drop(old[2])
    while len(_KEPT) > _KEPT_MAX:
        _drop(_KEPT.popitem(last=False)[1][2])


def _drop(scopes: object | None) -> None:
    """Release ``scopes``, kept here and taken by no parse (its ``release()``: a Context's).

    Invariant: whatever reaches this was held by these stores alone (keep_parsed's contract;
    tests/check/test_syntax_kept.py holds that nothing else refers to it when it is dropped).
    """
    release = getattr(scopes, "release", None)
    if release is not None:
        release()


# Trees of files already checked in this run, newest last, for a project view that reads
# them later as modules (detectron2's model_zoo.py's view reaches 120 of its modules checked
# before it: parsed again, a tenth of the run). Kept once the process has built a project
# view (retain_checked; a tree whose files ask for none keeps nothing), up to _CHECKED_CHARS
# characters of their texts (a tree takes 30-40 bytes of memory per character of its text:
# ~50 MB at most); the oldest make room.
_CHECKED: OrderedDict[str, tuple[str, ast.Module]] = OrderedDict()
_CHECKED_CHARS = 1_500_000
_checked = [False, 0]  # whether trees are kept, the characters _CHECKED holds


def retain_checked() -> None:
    """From now on :func:`keep_checked` keeps what it is offered (a project view was built)."""
    _checked[0] = True


def keep_checked(path: str, source: str, tree: ast.Module) -> None:
    """Offer ``tree``, ``ast.parse(source)`` that a check has read and left unchanged, to a
    later :func:`parsed_module` of the same file and text (a project view's)."""
    if not _checked[0] or len(source) > _CHECKED_CHARS // 4:
        return  # no project view yet; or one large file, that would push out many
    key = real_path(path)
    old = _CHECKED.pop(key, None)
    if old is not None:
        _checked[1] -= len(old[0])
    _CHECKED[key] = (source, tree)
    _checked[1] += len(source)
    while _checked[1] > _CHECKED_CHARS:
        _checked[1] -= len(_CHECKED.popitem(last=False)[1][0])


def parsed_module(path: str, source: str) -> ast.Module:
    """``ast.parse(source)``, the text of the file at ``path``, parsed once for its readers.

    A tree :func:`keep_parsed` kept for the same file and text is returned, and left
    there for the file's own parse; a tree parsed here is kept for the next reader (the
    port reads a sibling module for its star imports, its names, its facts: one parse).
    Its readers only read it.

    Raises:
        SyntaxError, ValueError: ``source`` does not parse (as ``ast.parse``).
    """
    key = real_path(path)
    for store in (_KEPT, _CHECKED):
        kept = store.get(key)
        if kept is not None and kept[0] == source:
            return kept[1]
    tree = ast.parse(source)
    keep_parsed(path, source, tree, None)
    return tree


def kept_for(tree: ast.Module) -> object | None:
    """What :func:`adopt_scopes` of ``tree`` would give (left for it)."""
    return _ADOPT[0][1] if _ADOPT and _ADOPT[0][0] is tree else None


def offer_scopes(tree: ast.Module, scopes: object) -> None:
    """Hand ``scopes``, built on ``tree``, to the next :func:`adopt_scopes` of it."""
    while _ADOPT:
        _drop(_ADOPT.pop()[1])
    _ADOPT.append((tree, scopes))


def adopt_scopes(tree: ast.Module) -> object | None:
    """The scope map kept with ``tree`` when parse_source took it from :func:`keep_parsed`."""
    if _ADOPT and _ADOPT[0][0] is tree:
        return _ADOPT.pop()[1]
    return None


def parse_source(source: str, path: str = "<string>") -> ast.Module:
    """``ast.parse`` of ``source``, whose syntax error names the Python a newer file needs.

    A tree :func:`keep_parsed` kept for the same file and text is returned
    instead of parsing again (taken once).

    Raises:
        SyntaxError: ``source`` does not parse. A :class:`NewerSyntaxError`
            when the failing line uses syntax of a newer Python: its message says
            which feature, which Python, and what to do (run torchport under it).
    """
    while _ADOPT:
        _drop(_ADOPT.pop()[1])  # offered, and not adopted by the walk of its tree
    if _KEPT and not path.startswith("<"):
        kept = _KEPT.pop(real_path(path), None)
        if kept is not None and kept[0] == source:
            if kept[2] is not None:
                _ADOPT.append((kept[1], kept[2]))
            return kept[1]
        if kept is not None:
            _drop(kept[2])  # the file's text changed since
    try:
        if len(source) < _PIECES_FROM:
            return ast.parse(source, filename=path)
        from torchport.check._chunked_parse import parse_in_pieces  # (large files only)

        return parse_in_pieces(source, path)  # `ast.parse`'s tree and errors, in less memory
    except SyntaxError as exc:
        need = syntax_needs(source, exc)
        if need is None:
            raise
        version, feature = need
        running = f"{sys.version_info[0]}.{sys.version_info[1]}"
        message = (
            f"this line uses {feature}, which needs Python {version} or newer, and torchport "
            f"runs on Python {running}; run torchport under Python {version}+ to check this file"
        )
        details = (exc.filename, exc.lineno, exc.offset, exc.text, exc.end_lineno, exc.end_offset)
        raise NewerSyntaxError(message, details) from exc
