"""The documentation builds, warnings as errors, and says what the code does.

The build is CI's docs build (``.ci/run`` runs the test suite): Sphinx, offline
(no intersphinx), into a temporary folder, from a copy of ``docs/`` so that the
pages it generates never land in the working tree.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("docs")
    source = work / "docs"
    shutil.copytree(ROOT / "docs", source, ignore=shutil.ignore_patterns("_build", "reference"))
    out = work / "html"
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-E", "-q", "-b", "html",
         str(source), str(out)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return out


@pytest.mark.slow  # a Sphinx build of every page
def test_the_docs_build_without_a_warning(built: Path) -> None:
    assert (built / "index.html").is_file()


@pytest.mark.slow  # reads the Sphinx build
def test_every_public_name_and_every_rule_has_its_page(built: Path) -> None:
    import torchport
    import torchport.check
    from torchport.check import RULES

    api = (built / "reference" / "api.html").read_text(encoding="utf-8")
    for module in (torchport, torchport.check):
        for name in module.__all__:
            if not name.startswith("__"):
                assert f'id="{module.__name__}.{name}"' in api, name
    for rule in RULES:
        page = (built / "reference" / "rules" / f"{rule.code}.html").read_text(encoding="utf-8")
        assert rule.name in page and "What it does" in page


def test_the_json_format_page_lists_the_keys_the_report_has(tmp_path: Path) -> None:
    from torchport.check import check_paths, render

    (tmp_path / "a.py").write_text("import torch\nx = torch.zeros(3).cuda()\n")
    (tmp_path / "b.py").write_text("def (:\n")
    result = check_paths([tmp_path], select=["TP101"])  # off by default: named
    items = json.loads(render("json", result.findings, result.rules, result.errors))
    assert {item["kind"] for item in items} == {"finding", "error"}
    page = (ROOT / "docs" / "json-format.md").read_text(encoding="utf-8")
    tables = re.findall(r"^\| `(\w+)` \|", page, re.M)
    fix_keys = {"safety", "edits", "changes"}
    assert set(tables) == set(items[0]) | fix_keys
    fix = next(i["fix"] for i in items if i["fix"])
    assert set(fix) == fix_keys


# The README's pictures are checked fresh in tests/docs/test_pictures.py.
