"""A check with no cache records nothing for it (``Chunk.reads``): the same findings, no reads.

``Report.reads`` (what a file's check read besides the file: a sibling module, a folder
listed) is the check cache's, which replays an answer only while those files hold still.
A run without the cache records none of it; the answers kept in memory (a project
module's facts) keep their own record, so a second check in the same process sees a
sibling's edit either way.
"""

from __future__ import annotations

from pathlib import Path

from torchport.check._select import select_rules
from torchport.check.files import check_paths
from torchport.check.files._work import Chunk, check_chunk

LOADER = (
    "import torch\n\n\nclass Net(torch.nn.Module):\n    @classmethod\n"
    "    def load_from_file(cls, path, map_location=None):\n"
    "        return torch.load(path, map_location=map_location)\n"
)
MAIN = (
    "import torch\nfrom model import Net\n\n"
    "net = Net.load_from_file('n.pt')\nx = torch.ones(2).cuda()\n"
)


def _project(root: Path) -> Path:
    (root / "model.py").write_text(LOADER)
    main = root / "main.py"
    main.write_text(MAIN)
    return main


def test_a_chunk_without_reads_records_none_and_finds_the_same(tmp_path: Path) -> None:
    main = _project(tmp_path)
    rules = select_rules(["ALL"])
    kept = check_chunk(Chunk(rules=rules, files=((str(main), ()),)))
    bare = check_chunk(Chunk(rules=rules, files=((str(main), ()),), reads=False))
    assert [f.code for f in kept[0].findings] == [f.code for f in bare[0].findings]
    assert "TP310" in [f.code for f in bare[0].findings]
    assert any(path.endswith("model.py") for path in kept[0].reads)
    assert bare[0].reads == {}


def test_a_sibling_edited_between_checks_is_seen_without_the_cache(tmp_path: Path) -> None:
    main = _project(tmp_path)
    first = check_paths([str(main)], select=["TP310"], cache=False)
    assert [f.code for f in first.findings] == ["TP310"]
    (tmp_path / "model.py").write_text(LOADER.replace("map_location=None", 'map_location="cpu"'))
    second = check_paths([str(main)], select=["TP310"], cache=False)
    assert second.findings == []
