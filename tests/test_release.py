"""One version everywhere a user meets it: the package, the CLI, the changelog, `rev:` examples."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import torchport

ROOT = Path(__file__).parents[1]


def test_the_version_is_written_once_and_read_everywhere() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in pyproject["project"] and "version" in pyproject["project"]["dynamic"]
    attr = pyproject["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert attr == "torchport.__version__"
    assert re.fullmatch(r"\d+\.\d+\.\d+", torchport.__version__)
    out = subprocess.run(
        [sys.executable, "-m", "torchport", "--version"], capture_output=True, text=True
    )
    assert out.stdout.strip() == f"torchport {torchport.__version__}"


def test_changelog_and_rev_examples_name_the_current_version() -> None:
    version = torchport.__version__
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    first = re.search(r"^## \[(\d+\.\d+\.\d+)\]", changelog, re.M)
    assert first is not None and first[1] == version
    for name in ("README.md", ".pre-commit-hooks.yaml", "docs/cli.md"):
        revs = re.findall(r"rev: (\S+)", (ROOT / name).read_text(encoding="utf-8"))
        assert revs and set(revs) == {f"v{version}"}, name


def test_the_hooks_the_readme_names_exist() -> None:
    hooks = (ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    ids = set(re.findall(r"^- id: (\S+)", hooks, re.M))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    named = set(re.findall(r"- id: (\S+)", readme))
    assert named and named <= ids


def test_the_license_is_the_apache_2_text() -> None:
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["license"] == "Apache-2.0"
    assert pyproject["project"]["license-files"] == ["LICENSE"]
    assert set(pyproject["project"]["urls"]) >= {"Homepage", "Documentation", "Changelog"}


def test_the_checker_needs_nothing_and_the_runtime_extra_holds_what_it_imports() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["dependencies"] == []  # the pre-commit hook's whole install
    runtime = {
        re.split(r"[<>=!~ ]", d)[0] for d in pyproject["project"]["optional-dependencies"]["torch"]
    }
    from torchport.errors import RUNTIME_PACKAGES

    # numpy too: without it torch warns "Failed to initialize NumPy" on every import
    assert runtime == set(RUNTIME_PACKAGES) == {"torch", "optree", "rich", "numpy"}
