"""``torchport run`` keeps the user's PYTHONPATH, however torchport itself was launched.

Under ``python -m torchport`` the package takes the working folder off ``sys.path`` (a checked
project's own ``typing.py`` must never run), and ``run`` puts the script's folder in
``sys.path[0]``, as ``python script.py`` does. Before 2026-11-30 the first left the slot
empty, so the second overwrote PYTHONPATH's first entry: a script importing a module from
it failed under ``python -m torchport run`` and ran under ``torchport run``. The oracle is
``python script.py`` itself: the script prints the search path after its own folder.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = """import sys
import helper_on_pythonpath
print(helper_on_pythonpath.X)
print([p for p in sys.path[1:] if p.startswith({root!r})])
"""

_COMMAND = shutil.which("torchport", path=os.path.dirname(sys.executable))
LAUNCHERS = {
    "python -m": [sys.executable, "-m", "torchport"],
    "python -P -m": [sys.executable, "-P", "-m", "torchport"],
    "torchport": [_COMMAND] if _COMMAND else None,
}


@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
def test_run_keeps_every_pythonpath_entry(tmp_path: Path, launcher: str) -> None:
    command = LAUNCHERS[launcher]
    if command is None:
        pytest.skip("no `torchport` command beside this python")
    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (first, second):
        folder.mkdir()
    (first / "helper_on_pythonpath.py").write_text("X = 42\n")
    project = tmp_path / "project"
    project.mkdir()
    (project / "script.py").write_text(SCRIPT.format(root=str(tmp_path)))
    given = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]  # CI's src
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(first), str(second), *given])}
    plain = subprocess.run(
        [sys.executable, "script.py"], cwd=project, env=env, capture_output=True, text=True
    )
    ours = subprocess.run(
        [*command, "run", "-q", "--device", "cpu", "script.py"],
        cwd=project, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert plain.returncode == 0, plain.stderr
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout == plain.stdout
