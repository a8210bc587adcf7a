"""Findings of a dry-run fix, placed in the file on disk (an oracle written apart: line texts)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from torchport.check._rule import Finding
from torchport.check.files._remap import to_original

_LINES = st.lists(st.sampled_from(["a", "b", "c = 1", "", "flag", "x.cuda()"]), max_size=12)


@st.composite
def _edited(draw: st.DrawFn) -> tuple[list[str], list[str]]:
    """Lines, and the same lines with some replaced, inserted or removed (as fixes do)."""
    original = draw(_LINES)
    fixed: list[str] = []
    for line in original:
        action = draw(st.sampled_from(["keep", "keep", "keep", "replace", "insert", "drop"]))
        if action == "keep":
            fixed.append(line)
        elif action == "replace":
            fixed.append(line + "  # fixed")
        elif action == "insert":
            fixed += ["device = 'cpu'", line]
    return original, fixed


@given(_edited(), st.data())
def test_a_placed_finding_names_the_same_text_on_disk(
    edited: tuple[list[str], list[str]], data: st.DataObject
) -> None:
    original, fixed = edited
    if not fixed:
        return
    new, old = "\n".join(fixed) + "\n", "\n".join(original) + "\n"
    for n in data.draw(st.lists(st.integers(1, len(fixed)), min_size=1, max_size=5)):
        placed, unplaced = to_original([Finding("t.py", n, 1, n, 2, "TP9", "x", "m")], new, old)
        assert len(placed) + unplaced == 1
        if placed:  # the line it names on disk holds the very text it was found in
            assert original[placed[0].line - 1] == fixed[n - 1]
            assert placed[0].col == 1 and placed[0].end_line == placed[0].line
        if fixed[n - 1] not in original:  # a line only the fix wrote has no place on disk
            assert unplaced == 1
        if fixed == original:
            assert placed[0].line == n


def test_fix_diff_reports_what_is_left_at_lines_of_the_file_on_disk(tmp_path: Path) -> None:
    from torchport.check import check_paths, fix_paths

    path = tmp_path / "t.py"
    source = "import torch\nx = torch.zeros(3).cuda()\ntorch.cuda.synchronize()\ny = 1\n"
    path.write_text(source)
    result = fix_paths([path], diff=True, select=["TP1", "TP4"], unsafe=False)
    on_disk = source.splitlines()
    before = {(f.line, f.code) for f in check_paths([path], select=["TP1", "TP4"]).findings}
    for f in result.remaining:  # every one names a line of the file as it is
        assert f.line <= len(on_disk) and (f.line, f.code) in before
    assert path.read_text() == source
