"""The OOM message's size patterns read any text in one pass (no quadratic backtracking).

The old spellings are kept as oracles: on short generated texts the new ones match the same
spans with the same groups.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport._sizes import SIZE_PATTERN
from torchport.diagnose import _oom

_OLD_SIZE = r"\d+(?:\.\d+)?\s*(?:bytes?|[KMGT]i?B|B)"
_OLD_CAPACITY = rf"GPU\s*(\d*)\s+has a total capac\w* of ({_OLD_SIZE})"
_FLAGS = re.IGNORECASE | re.DOTALL
_N = 200_000


def test_a_long_run_of_digits_or_spaces_is_read_in_one_pass() -> None:
    # Each took minutes under the old spellings (every digit a new start, rescanning the run).
    for text in ("1" * _N, "1" * _N + " allowed;", "1." * _N, "GPU" + " " * _N + "x"):
        _oom._ALLOWED.search(text)
        _oom._CAPACITY.search(text)
        re.search(SIZE_PATTERN, text)


def test_the_capacity_sentence_is_still_read() -> None:
    match = _oom._CAPACITY.search("GPU 0 has a total capacity of 15.51 GiB of which")
    assert match is not None and match.groups() == ("0", "15.51 GiB")
    match = _oom._CAPACITY.search("GPU has a total capacty of 8 GiB")
    assert match is not None and match.groups() == ("", "8 GiB")


_TEXT = st.text(alphabet="GPU 0123.4 hasotlcpyfMiBKbytes;\n", max_size=30)


@settings(max_examples=800, deadline=None)
@given(_TEXT)
def test_the_size_pattern_matches_what_the_old_one_did(text: str) -> None:
    for old, new in ((_OLD_SIZE, SIZE_PATTERN), (_OLD_CAPACITY, _oom._CAPACITY.pattern)):
        before = [(m.span(), m.groups()) for m in re.finditer(old, text, _FLAGS)]
        after = [(m.span(), m.groups()) for m in re.finditer(new, text, _FLAGS)]
        assert before == after, (old, text)
