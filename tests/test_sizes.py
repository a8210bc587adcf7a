"""Byte counts: one format everywhere, and the parser reads every backend's spelling back."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from torchport._sizes import format_bytes, parse_size

FORMAT = re.compile(r"^-?(0|[1-9]\d*)(\.\d?[1-9])? (B|KiB|MiB|GiB|TiB)$")


@given(st.integers(min_value=-(2**50), max_value=2**50))
def test_one_shape_and_the_value_reads_back(n: int) -> None:
    text = format_bytes(n)
    assert FORMAT.match(text), text  # at most two decimals, no trailing zeros
    number = float(text.split()[0])
    assert abs(number) < 1024 or text.endswith("TiB")  # the largest unit that keeps it < 1024
    assert parse_size(text.lstrip("-")) == pytest.approx(abs(n), rel=5e-3, abs=1)


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (1024, "1 KiB"),
        (1536 * 1024, "1.5 MiB"),
        (int(79.11 * 2**30), "79.11 GiB"),
        (2**30 - 1, "1 GiB"),  # rounds up into the next unit, never "1024 MiB"
        (None, "n/a"),
    ],
)
def test_examples(n: int | None, text: str) -> None:
    assert format_bytes(n) == text


def test_parse_size_reads_every_backend_and_rejects_junk() -> None:
    assert parse_size("512 bytes") == 512 and parse_size("1.5 GB") == 3 * 2**29
    assert parse_size("20.00 MiB") == 20 * 2**20
    with pytest.raises(ValueError, match="expected a number and a unit"):
        parse_size("lots")
