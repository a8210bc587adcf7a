"""The pre-commit hooks, run as users run them: ``pre-commit try-repo`` and a pinned ``rev:``.

Each builds the hook's environment from this working tree (pre-commit pip-installs
the repository root into a fresh virtualenv), so these tests need ``git``,
``pre-commit`` (the ``test`` extra) and PyPI for the build backend. The second one
also pins what the hook costs a user: no torch in its environment, under 50 MB.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
MAX_HOOK_ENV_BYTES = 50 * 1024 * 1024

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

HARD_CODED = "import torch\nx = torch.zeros(3).cuda()\n"


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    out = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout


def _user_repo(path: Path) -> Path:
    """A small project as a user has it: one file with hard-coded CUDA, one clean."""
    path.mkdir()
    _git(path, "init", "-q")
    (path / "train.py").write_text(HARD_CODED)
    (path / "clean.py").write_text("x = 1\n")
    _git(path, "add", ".")
    _git(path, "commit", "-q", "-m", "init")
    return path


def _pre_commit(cwd: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never"}
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args], cwd=cwd, env=env, capture_output=True,
        text=True, timeout=300,
    )  # fmt: skip


@pytest.mark.slow  # pip-installs the hook into a fresh environment
def test_try_repo_runs_both_hooks_on_a_small_repository(tmp_path: Path) -> None:
    repo = _user_repo(tmp_path / "project")
    done = _pre_commit(repo, tmp_path / "home", "try-repo", str(ROOT), "--all-files")
    assert done.returncode == 1, done.stdout + done.stderr  # findings, and a file fixed
    assert "train.py:2:5: TP101" in done.stdout
    assert "clean.py" not in done.stdout.split("torchport fix")[0]
    fixed = (repo / "train.py").read_text()
    assert ".cuda()" not in fixed and ".to(device)" in fixed  # the fix hook wrote it
    compile(fixed, "train.py", "exec")
    assert (repo / "clean.py").read_text() == "x = 1\n"


def _snapshot(path: Path) -> str:
    """This working tree (committed or not, less what git ignores) as a repository; its rev."""
    path.mkdir()
    _git(path, "init", "-q")
    listed = _git(ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            (path / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, path / name)
    _git(path, "add", "-A")
    _git(path, "commit", "-q", "-m", "snapshot")
    return _git(path, "rev-parse", "HEAD").strip()


def _size(folder: Path) -> int:
    return sum(p.lstat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


@pytest.mark.slow  # pip-installs the hook into a fresh environment
def test_a_pinned_hook_installs_no_torch_and_stays_small(tmp_path: Path) -> None:
    rev = _snapshot(tmp_path / "torchport")
    repo = _user_repo(tmp_path / "project")
    (repo / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {tmp_path / 'torchport'}\n    rev: {rev}\n"
        "    hooks:\n      - id: torchport-check\n"
    )
    home = tmp_path / "home"
    done = _pre_commit(repo, home, "run", "--all-files")
    assert done.returncode == 1 and "train.py:2:5: TP101" in done.stdout, done.stdout
    (env,) = home.glob("repo*/py_env-*")
    packages = {p.name.split("-")[0].lower() for p in env.glob("lib/python*/site-packages/*")}
    assert "torchport" in packages
    assert not packages & {"torch", "numpy", "optree", "rich", "triton"}, packages
    size = _size(env)
    assert size < MAX_HOOK_ENV_BYTES, f"the hook's environment is {size / 2**20:.1f} MiB"
