"""Which torch first has each API a fix may write, and the gate that keeps fixes within a target.

Ruff has ``target-version`` for Python; torchport has ``target-torch`` for torch.
A fix that writes ``torch.accelerator.memory_allocated()`` is right on torch 2.8
and an ``AttributeError`` on torch 2.7, so every API a fix may *introduce* is
listed in :data:`SINCE` with the first torch release that has it, and
:func:`within_target` drops the fix of any finding whose edits write a name the
target lacks: the finding stays a report, its message saying which name needs
which torch. A name the fix only keeps (it was in the replaced text already) is
not the fix's doing and is not judged.

Names are matched as written: any dotted ``<any name>.<api>`` whose ``<api>`` (or a
prefix of it) the table lists, so a file that imports torch under another name is
judged the same. A name of ``accelerator``/``amp`` or ``get_device_module``,
``Stream``, ``Event`` missing from the table is taken to need the newest torch the
table knows (the gate fails closed); a test holds every torch name the shipped
rules' fixes write to the table or to a list of names every torch 2 has.

This module imports nothing but the standard library.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from torchport.check._patterns import lazy_pattern
from torchport.check._records import replace
from torchport.check._rule import Edit, Finding

__all__ = [
    "ARGUMENT_SINCE",
    "FLOOR",
    "KEYWORD_SINCE",
    "SINCE",
    "TorchVersion",
    "format_version",
    "parse_version",
    "within_target",
]

TorchVersion = tuple[int, int]

# The oldest torch torchport's runtime supports (the `torch>=` of pyproject's `torch`
# extra; a test holds the two equal): the default target when a project names none.
FLOOR: TorchVersion = (2, 6)

# The one table: each API a fix may write (the part after `torch.`), and the first torch
# release that has it. Sources: torch's docs per release (docs.pytorch.org/docs/2.N/) and
# the PRs that added them (torch.accelerator memory APIs: pytorch#152932, in 2.8).
SINCE: dict[str, TorchVersion] = {
    # torch.accelerator appeared in 2.6 with these
    "accelerator.is_available": (2, 6),
    "accelerator.current_accelerator": (2, 6),
    "accelerator.device_count": (2, 6),
    "accelerator.set_stream": (2, 6),
    "accelerator.current_stream": (2, 6),
    "accelerator.synchronize": (2, 6),
    "accelerator.set_device_idx": (2, 6),
    "accelerator.current_device_idx": (2, 6),
    # 2.7 renamed the index functions (the old names deprecated)
    "accelerator.set_device_index": (2, 7),
    "accelerator.current_device_index": (2, 7),
    # 2.8: a context manager, and the device-generic memory functions
    "accelerator.device_index": (2, 8),
    "accelerator.empty_cache": (2, 8),
    "accelerator.memory_allocated": (2, 8),
    "accelerator.memory_reserved": (2, 8),
    "accelerator.max_memory_allocated": (2, 8),
    "accelerator.max_memory_reserved": (2, 8),
    "accelerator.memory_stats": (2, 8),
    "accelerator.reset_peak_memory_stats": (2, 8),
    "accelerator.reset_accumulated_memory_stats": (2, 8),
    # torch.amp: autocast(device_type) since 1.10; GradScaler(device) since 2.3;
    # custom_fwd/custom_bwd(device_type=) since 2.4
    "amp.autocast": (1, 10),
    "amp.autocast_mode": (1, 10),
    "amp.GradScaler": (2, 3),
    "amp.grad_scaler": (2, 3),
    "amp.custom_fwd": (2, 4),
    "amp.custom_bwd": (2, 4),
    "get_device_module": (2, 4),
    # the autocast state by device type: 2.4 (in use by pytorch#125103, April 2024, before
    # 2.4's branch cut; torch 2.6, the floor, has them and the device-type argument: checked)
    "get_autocast_dtype": (2, 4),
    "set_autocast_dtype": (2, 4),
    # torch.distributed's device-to-backend map (pytorch#140536, in 2.6)
    "distributed.get_default_backend_for_device": (2, 6),
    "Stream": (2, 2),
    "Event": (2, 5),
}

# Keywords a fix may add to a call, by the call's last name: the first torch whose
# function takes them. `weights_only=` of load_state_dict_from_url (and model_zoo's
# load_url, the same function): pytorch#98479, in 2.1; of torch.load: 1.13.
KEYWORD_SINCE: dict[tuple[str, str], TorchVersion] = {
    ("load_state_dict_from_url", "weights_only"): (2, 1),
    ("load_url", "weights_only"): (2, 1),
    ("load", "weights_only"): (1, 13),
}

# Functions older than their device-type argument: a fix that gives one the argument
# (`torch.is_autocast_enabled()` -> `torch.is_autocast_enabled(device.type)`) keeps the
# name, so the table cannot see it; these patterns find the call with the argument.
ARGUMENT_SINCE: dict[str, tuple[str, TorchVersion]] = {
    "is_autocast_enabled(device_type)": (r"\.is_autocast_enabled\((?!\s*\))", (2, 4)),
    "set_autocast_enabled(device_type)": (r"\.set_autocast_enabled\([^,()]*,", (2, 4)),
}

_NEWEST: TorchVersion = max(SINCE.values())
# Any dotted name a fix writes (`torch.distributed.get_default_backend_for_device`): the
# table is asked for each prefix of what follows the first name, so an API outside the
# namespaces below is judged as soon as the table lists it.
_CHAIN = lazy_pattern(r"(?<![\w.])[A-Za-z_]\w*((?:\.[A-Za-z_]\w*)+)")
# Names of these namespaces are gated even when the table lacks them (the newest torch).
_NAMESPACES = ("accelerator", "amp")
_CLASSES = ("get_device_module", "Stream", "Event")
_VERSION = lazy_pattern(r"^\s*(\d+)\.(\d+)(?:\.\d+)?\s*$")


def parse_version(text: str) -> TorchVersion | None:
    """``"2.7"`` or ``"2.7.1"`` as ``(2, 7)``; None when ``text`` is no such version."""
    match = _VERSION.match(text)
    return None if match is None else (int(match[1]), int(match[2]))


def format_version(version: TorchVersion) -> str:
    return f"{version[0]}.{version[1]}"


def needs(api: str) -> TorchVersion:
    """The first torch with ``api`` (``accelerator.empty_cache``); unknown ones: the newest."""
    return SINCE.get(api, _NEWEST)


def written_apis(text: str) -> set[str]:
    """The gated APIs ``text`` names (``accelerator.empty_cache``, ``amp.GradScaler`` ...)."""
    found = set()
    for match in _CHAIN.finditer(text):
        parts = match[1][1:].split(".")
        for end in range(len(parts), 0, -1):
            if ".".join(parts[:end]) in SINCE:
                found.add(".".join(parts[:end]))
                break
        else:
            if parts[0] in _NAMESPACES and len(parts) > 1:
                found.add(".".join(parts[:2]))
            elif parts[0] in _CLASSES:
                found.add(parts[0])
    return found


_KEYWORD = lazy_pattern(r"(?:^|[(,])\s*(?P<name>[A-Za-z_]\w*)\s*=(?!=)")


def _called_at(source: str, at: int) -> str | None:
    """The last name of the call whose open parenthesis encloses offset ``at``, if any."""
    depth = 0
    for i in range(min(at, len(source)) - 1, -1, -1):
        char = source[i]
        if char in ")]}":
            depth += 1
        elif char in "([{":
            if depth == 0:
                return _name_before(source, i) if char == "(" else None
            depth -= 1
    return None


def _name_before(source: str, end: int) -> str | None:
    r"""``re.search(r"([A-Za-z_]\w*)\s*$", source[:end])[1]``, reading back from ``end`` only.

    The search itself copies and scans the text from its start: once per finding,
    that made a file's check quadratic in its length.
    """
    stop = end
    while stop > 0 and _SPACE.fullmatch(source[stop - 1]):
        stop -= 1
    start = stop
    while start > 0 and _WORD.fullmatch(source[start - 1]):
        start -= 1
    while start < stop and not _FIRST.fullmatch(source[start]):
        start += 1
    return source[start:stop] if start < stop else None


_SPACE = lazy_pattern(r"\s")
_WORD = lazy_pattern(r"\w")
_FIRST = lazy_pattern(r"[A-Za-z_]")


def _added_keywords(edit_text: str, replaced: str, source: str, at: int) -> set[str]:
    """``call(weights_only=)`` entries of :data:`KEYWORD_SINCE` that an edit adds."""
    if "=" not in edit_text:  # no keyword written (the pattern compiled only when one may be)
        return set()
    new = {m["name"] for m in _KEYWORD.finditer(edit_text)} - {
        m["name"] for m in _KEYWORD.finditer(replaced)
    }
    called = _called_at(source, at) if new else None
    return {f"{called}({name}=)" for name in new if (called, name) in KEYWORD_SINCE}


def _keyword_needs(api: str) -> TorchVersion:
    called, _, rest = api.partition("(")
    return KEYWORD_SINCE[(called, rest.rstrip("=)"))]


def _missing(
    finding: Finding, source: str, target: TorchVersion
) -> tuple[str, TorchVersion] | None:
    """The first API the fix writes that ``target`` lacks, with the torch that has it."""
    if finding.fix is None:
        return None
    return _missing_in(finding.fix.edits, source, target)


def writes_within(edits: Iterable[Edit], source: str, target: TorchVersion | None) -> bool:
    """Whether ``edits`` write only APIs ``target`` has (a fix :func:`within_target` keeps)."""
    return target is None or _missing_in(edits, source, target) is None


def _missing_in(
    edits: Iterable[Edit], source: str, target: TorchVersion
) -> tuple[str, TorchVersion] | None:
    for edit in edits:
        if not edit.text or edit.start < 0:
            continue
        replaced = source[edit.start : edit.end]
        new = written_apis(edit.text) - written_apis(replaced)
        lacking = sorted((needs(api), api) for api in new if needs(api) > target)
        lacking += [
            (version, api)
            for api, (pattern, version) in ARGUMENT_SINCE.items()
            if version > target
            and re.search(pattern, edit.text)
            and not re.search(pattern, replaced)
        ]
        keywords = _added_keywords(edit.text, replaced, source, edit.start)
        lacking += sorted(
            (_keyword_needs(api), api) for api in keywords if _keyword_needs(api) > target
        )
        lacking.sort()
        if lacking:
            version, api = lacking[-1]
            return api, version
    return None


def within_target(
    findings: Iterable[Finding], source: str, target: TorchVersion | None
) -> list[Finding]:
    """``findings`` with the fixes that write an API ``target`` lacks dropped (None: no limit).

    The finding stays, reported without a fix; its message says why.
    """
    if target is None:
        return list(findings)
    out = []
    for finding in findings:
        missing = _missing(finding, source, target)
        if missing is not None:
            api, version = missing
            called, _, keyword = api.partition("(")
            written = f"`{keyword.rstrip(')')}` in `{called}(...)`" if keyword else f"`torch.{api}`"
            finding = replace(
                finding,
                fix=None,
                message=(
                    f"{finding.message} (no fix: it would write {written}, which needs "
                    f"torch >= {format_version(version)}, and target-torch is "
                    f"{format_version(target)}; raise target-torch, or the torch floor in "
                    f"your requirements, to get the fix)"
                ),
            )
        out.append(finding)
    return out
