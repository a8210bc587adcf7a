"""TP108 leaves a float64 test that a ``conftest.py`` above it skips on MPS by its name.

Sample M (kornia's root ``conftest.py``: ``if "gradcheck" in item.name.lower() and
"[mps" in item.nodeid: item.add_marker(skip_mps_gradcheck)``): its gradient checks never
run on MPS, so their float64 never reaches it (noise). Generated projects draw where the
``conftest.py`` sits (the test's folder, the root, a sibling folder, above the
checkout's root), the hook's condition (the word and MPS, either alone, joined by
``or``, MPS negated), whether its arm adds a marker, and the test's name. The oracle,
written here: left exactly when the ``conftest.py`` is on the test's folder chain within
the checkout, its condition joins ``"<word>" in item.name...`` and an MPS test with
``and``, its arm adds a marker, and the test's name holds the word.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

WHERE = {"tests/unit": True, ".": True, "tests": True, "docs": False, "..": False}
CONDITIONS = {
    '"gradcheck" in item.name.lower() and "[mps" in item.nodeid': True,
    '"[mps" in item.nodeid and "gradcheck" in item.originalname': True,
    '"gradcheck" in item.name.lower() or "[mps" in item.nodeid': False,
    '"gradcheck" in item.name.lower() and "[cuda" in item.nodeid': False,
    '"gradcheck" in item.name.lower()': False,
    '"gradcheck" in words and "[mps" in item.nodeid': False,  # not the test's name
}
NAMES = {"test_gradcheck": True, "test_gradcheck_batch": True, "test_forward": False}
TEST = (
    "import pytest\nimport torch\n\n\n"
    '@pytest.mark.parametrize("device", ["cpu", "mps"])\n'
    "def {name}(device):\n"
    "    x = torch.ones(3, dtype=torch.float64, device=device)\n"
    "    assert x.sum() == 3\n"
)


def _drawn(data: st.DataObject, table: dict[str, bool], kept: bool) -> str:
    return data.draw(st.sampled_from(sorted(k for k, v in table.items() if v == kept)))


@settings(max_examples=60, deadline=None)
@given(
    broken=st.sampled_from(("", "where", "condition", "marks", "name")),
    data=st.data(),
)
def test_a_conftest_skip_on_mps_is_followed(broken: str, data: st.DataObject) -> None:
    """One part at a time is drawn absent (or none), each spelled at random."""
    where = _drawn(data, WHERE, broken != "where")
    condition = _drawn(data, CONDITIONS, broken != "condition")
    marks = broken != "marks"
    name = _drawn(data, NAMES, broken != "name")
    arm = "item.add_marker(skip)" if marks else "print(item)"
    conftest = (
        "import pytest\n\n\n"
        "def pytest_collection_modifyitems(config, items, words=()):\n"
        '    skip = pytest.mark.skip(reason="no float64 on MPS")\n'
        "    for item in items:\n"
        f"        if {condition}:\n"
        f"            {arm}\n"
    )
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        (root / ".git").mkdir(parents=True)
        (root / "tests" / "unit").mkdir(parents=True)
        (root / "docs").mkdir()
        (root / where / "conftest.py").write_text(conftest)
        test = root / "tests" / "unit" / "test_ops.py"
        source = TEST.format(name=name)
        test.write_text(source)
        found = check_text(source, str(test), ruleset_for(["TP108"], None)).findings
    left = WHERE[where] and CONDITIONS[condition] and marks and NAMES[name]
    assert bool(found) != left, (where, conftest, source, found)
