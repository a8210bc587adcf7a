"""Byte counts as people read them: ``1.5 GiB`` out, ``"1.50 GiB"`` back in.

Every report, error message and benchmark label formats sizes here, so one size
reads the same everywhere: binary units, at most two decimals, trailing zeros
dropped (``512 B``, ``4 KiB``, ``1.5 MiB``, ``79.11 GiB``), as PyTorch's own
messages round them.

The parser accepts what PyTorch's allocators print (``c10::CachingAllocator::format_size``
writes ``bytes``/``KiB``/``MiB``/``GiB``; the MPS allocator writes ``KB``/``MB``/``GB`` with the
same 1024 base), so one parser reads every backend's out-of-memory message.
"""

from __future__ import annotations

import re

__all__ = ["format_bytes", "parse_size"]

_UNITS = ("KiB", "MiB", "GiB", "TiB")

# Both spellings mean powers of 1024 in PyTorch's messages.
_FACTORS: dict[str, int] = {
    "b": 1,
    "byte": 1,
    "bytes": 1,
    "kib": 1024,
    "kb": 1024,
    "mib": 1024**2,
    "mb": 1024**2,
    "gib": 1024**3,
    "gb": 1024**3,
    "tib": 1024**4,
    "tb": 1024**4,
}

# Not tried inside a run of digits, possessive: linear on any text
# (tests/diagnose/test_oom_backtracking.py).
SIZE_PATTERN = r"(?<!\d)\d++(?:\.\d++)?\s*+(?:bytes?|[KMGT]i?B|B)"
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]+)\s*$")


def format_bytes(n: float | None) -> str:
    """Format a byte count with a binary unit, at most two decimals (``"1.5 GiB"``).

    Args:
        n: Number of bytes; ``None`` (unknown) formats as ``"n/a"``.

    Returns:
        The human-readable size.
    """
    if n is None:
        return "n/a"
    sign = "-" if n < 0 else ""
    value = float(abs(n))
    if round(value) < 1024:
        return f"{sign}{round(value)} B"
    for unit in _UNITS:
        value /= 1024
        if round(value, 2) < 1024 or unit == _UNITS[-1]:
            number = f"{value:.2f}".rstrip("0").rstrip(".")
            return f"{sign}{number} {unit}"
    raise AssertionError("unreachable")  # pragma: no cover


def parse_size(text: str) -> int:
    """Parse a size such as ``"20.00 MiB"``, ``"512 bytes"`` or ``"9.06 GB"`` into bytes.

    Args:
        text: A number followed by a unit.

    Returns:
        The size in bytes, rounded to the nearest byte.

    Raises:
        ValueError: The text is not a number with a known unit.
    """
    match = _SIZE_RE.match(text)
    factor = _FACTORS.get(match.group(2).lower()) if match else None
    if match is None or factor is None:
        raise ValueError(f"not a size: {text!r}; expected a number and a unit such as '1.5 GiB'")
    return round(float(match.group(1)) * factor)
