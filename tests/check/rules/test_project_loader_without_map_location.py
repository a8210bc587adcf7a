"""TP310: a call of the project's own loader that hands ``map_location=None`` to ``torch.load``.

Recall round 5b (chemprop): ``MPNN.load_from_file(path)``, a classmethod of another module
whose ``map_location=None`` goes to ``torch.load``; also through a subclass a third module
defines. Hypothesis draws the loader (class or static method, where ``map_location`` sits,
its default, how it reaches ``torch.load``), the module chain and the call; the oracle is
the drawn program's own description, written apart from the rule: a finding exactly where
the call leaves ``map_location`` to a None default that ``torch.load`` is given.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from torchport.check import check_paths

KINDS = ("classmethod", "staticmethod", "instance")
DEFAULTS = ("None", '"cpu"')
HANDED = ("keyword", "second", "not")
PASSED = ("none", "keyword", "position")


def _project(
    kind: str, keyword_only: bool, default: str, handed: str, subclass: bool, passed: str
) -> tuple[dict[str, str], bool]:
    """The files of a drawn project, and whether the call in ``use.py`` must be reported."""
    first = {"classmethod": "cls, ", "staticmethod": "", "instance": "self, "}[kind]
    params = (
        f"{first}path, *, map_location={default}"
        if keyword_only
        else f"{first}path, map_location={default}, strict=True"
    )
    load = {
        "keyword": "torch.load(path, map_location=map_location)",
        "second": "torch.load(path, map_location)",
        "not": 'torch.load(path, map_location="cpu")',
    }[handed]
    decorator = f"    @{kind}\n" if kind != "instance" else ""
    models = (
        "import torch\n\n\nclass Net(torch.nn.Module):\n"
        f"{decorator}    def load_from_file({params}):\n        return {load}\n"
    )
    files = {"models.py": models}
    if subclass:
        files["multi.py"] = "from models import Net\n\n\nclass Big(Net):\n    pass\n"
    name, module = ("Big", "multi") if subclass else ("Net", "models")
    args = {
        "none": '"net.pt"',
        "keyword": '"net.pt", map_location="cpu"',
        "position": '"net.pt", "cpu"',
    }[passed]
    files["use.py"] = f"from {module} import {name}\n\nnet = {name}.load_from_file({args})\n"
    position_reaches = passed == "position" and not keyword_only
    expected = (
        kind != "instance"
        and default == "None"
        and handed != "not"
        and passed != "keyword"
        and not position_reaches
    )
    return files, expected


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    kind=st.sampled_from(KINDS),
    keyword_only=st.booleans(),
    default=st.sampled_from(DEFAULTS),
    handed=st.sampled_from(HANDED),
    subclass=st.booleans(),
    passed=st.sampled_from(PASSED),
)
@example(
    kind="classmethod",
    keyword_only=False,
    default="None",
    handed="keyword",
    subclass=True,
    passed="position",
)  # passed second: not reported
@example(
    kind="staticmethod",
    keyword_only=False,
    default="None",
    handed="second",
    subclass=False,
    passed="position",
)
@example(
    kind="classmethod",
    keyword_only=True,
    default="None",
    handed="keyword",
    subclass=False,
    passed="position",
)  # keyword-only: reported
def test_a_call_that_leaves_the_loaders_map_location_to_none_is_reported(
    kind: str,
    keyword_only: bool,
    default: str,
    handed: str,
    subclass: bool,
    passed: str,
    tmp_path: Path,
) -> None:
    files, expected = _project(kind, keyword_only, default, handed, subclass, passed)
    root = Path(tempfile.mkdtemp(dir=tmp_path))  # one folder per drawn project
    for name, text in files.items():
        (root / name).write_text(text)
    found = [
        (Path(f.path).name, f.line) for f in check_paths([root], select=["TP310"], jobs=1).findings
    ]
    assert found == ([("use.py", 3)] if expected else []), files
