"""TP301 leaves a load from a file object opened as a temporary file: this run wrote it.

Sample N (ClassyVision's ``broadcast_object``): ``with tempfile.TemporaryFile("r+b") as
f: f.write(data); f.seek(0); obj = torch.load(f)``. A temporary file has no name anyone
else can open; the bytes in it are this process's (low value). Generated programs draw
how the file object is opened (a temporary file, spelled through the module or imported;
a named file, a compressed file, a project's own opener) and what else the ``with``
holds. The oracle, written here: left exactly when the opener is one of
``tempfile``'s temporary files.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

OPENERS = {
    'tempfile.TemporaryFile("r+b")': True,
    "tempfile.NamedTemporaryFile()": True,
    "tempfile.SpooledTemporaryFile(max_size=10)": True,
    "TemporaryFile()": True,
    'open(path, "rb")': False,
    "gzip.open(path)": False,
    "io.open(path, mode='rb')": False,
    "store.open_blob(path)": False,
}
OTHERS = ("", "torch.no_grad(), ", "lock, ")


@given(
    opener=st.sampled_from(sorted(OPENERS)),
    other=st.sampled_from(OTHERS),
    name=st.sampled_from(("f", "handle", "fh")),
)
def test_a_load_from_a_temporary_file_is_left(opener: str, other: str, name: str) -> None:
    source = "\n".join(
        [
            "import gzip",
            "import io",
            "import tempfile",
            "from tempfile import TemporaryFile",
            "",
            "import torch",
            "",
            "",
            "def receive(data, path, store, lock):",
            f"    with {other}{opener} as {name}:",
            f"        {name}.write(data)",
            f"        {name}.seek(0)",
            f"        obj = torch.load({name})",
            "    return obj",
            "",
        ]
    )
    found = check_text(source, "lib/sync.py", ruleset_for(["TP301"], None)).findings
    assert bool(found) != OPENERS[opener], (source, found)
