"""TP302 leaves ``weights_only=False`` in test code, which loads the fixtures it made.

The standard is TP109's (``rules/_test_code.py``): a file in a ``test``/``tests``
folder, a ``conftest.py``, or a ``test*`` function or ``Test*`` class in a file that
imports ``pytest`` or ``unittest``. Paths, imports, the enclosing definition and the
spelling of ``False`` are drawn at random; outside test code the load stays reported.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

FOLDERS = ("src", "tests", "test", "examples", "testing")
FILES = ("conftest.py", "test_save.py", "io.py")
IMPORTS = {"": False, "import pytest": True, "import unittest": True, "import numpy": False}
PLACES = {  # header lines of the enclosing definition, and whether it is a test's
    "module": ((), False),
    "def test_roundtrip():": (("def test_roundtrip():",), True),
    "def restore():": (("def restore():",), False),
    "class TestSave: def check(self):": (("class TestSave:", "    def check(self):"), True),
}
FALSES = ("False", "0", "not True")


@given(
    folders=st.lists(st.sampled_from(FOLDERS), max_size=2),
    file=st.sampled_from(FILES),
    imports=st.sampled_from(sorted(IMPORTS)),
    place=st.sampled_from(sorted(PLACES)),
    false=st.sampled_from(FALSES),
)
def test_weights_only_false_is_reported_outside_test_code_only(
    folders: list[str], file: str, imports: str, place: str, false: str
) -> None:
    headers, in_test = PLACES[place]
    load = f'm = torch.load("model_dir/wd_model.pt", weights_only={false})'
    source = "\n".join(("import torch", imports, "", *headers, "    " * len(headers) + load, ""))
    test_code = (
        file == "conftest.py"
        or bool({"test", "tests"} & set(folders))
        or (in_test and IMPORTS[imports])
        or (file == "test_save.py" and IMPORTS[imports])  # a module pytest collects
        or ("testing" in folders and IMPORTS[imports])  # a project's test helpers
    )
    found = check_text(source, "/".join((*folders, file)), ruleset_for(["TP302"], None)).findings
    assert bool(found) != test_code, source
