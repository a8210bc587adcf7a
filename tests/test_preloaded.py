"""The preloaded server's children against fresh interpreters (the oracle): the same exit code,
stdout and stderr for what the suite's children do (print, exit, raise, run threads and atexit
handlers, read arguments and stdin, change directory)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.preloaded import run_python

_ENDINGS = [
    "",
    "raise SystemExit(3)",
    "raise SystemExit('bad')",
    "sys.exit()",
    "raise ValueError('no')",
    "def f():\n    raise KeyError(1)\nf()",
    "os.chdir('/')\nprint(os.getcwd())",
    "print(sys.stdin.read() == '', sys.argv, __name__)",
    "import atexit\natexit.register(print, 'at exit')",
    "import threading, time\n"
    "threading.Thread(target=lambda: (time.sleep(0.2), print('thread'))).start()",
    "print('partial', end='', flush=False)",
]


def _fresh(source: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", source, *args], capture_output=True, text=True, check=False
    )


@given(
    st.lists(st.sampled_from(["print('out')", "print('err', file=sys.stderr)"]), max_size=3),
    st.sampled_from(_ENDINGS),
    st.lists(st.text("ab-", min_size=1, max_size=3), max_size=2),
)
def test_a_forked_child_says_and_ends_as_a_fresh_interpreter(
    lines: list[str], ending: str, args: list[str]
) -> None:
    source = "\n".join(["import os, sys", *lines, ending])
    forked, fresh = run_python(source, *args), _fresh(source, *args)
    assert (forked.returncode, forked.stdout, forked.stderr) == (
        fresh.returncode,
        fresh.stdout,
        fresh.stderr,
    )


def test_a_forked_child_reads_its_input_as_a_fresh_interpreter_does() -> None:
    source = "import sys; print(repr(sys.stdin.read()), sys.argv[1:])"
    forked = run_python(source, "x", input="héllo\n2")
    fresh = subprocess.run(
        [sys.executable, "-c", source, "x"], input="héllo\n2", capture_output=True, text=True,
        check=False,
    )  # fmt: skip
    assert (forked.returncode, forked.stdout, forked.stderr) == (0, fresh.stdout, "")


def test_a_child_past_its_timeout_is_killed_and_the_next_one_runs() -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        run_python("import time; time.sleep(60)", timeout=1)
    assert run_python("print(6 * 7)").stdout == "42\n"


_SAYS = "import os, sys; print('torch' in sys.modules, os.environ.get('PYTEST_CURRENT_TEST'))"


def test_each_test_s_children_are_forked_with_its_own_environment() -> None:
    # (a fresh interpreter has not imported torch when it starts; a forked child has)
    done = run_python(_SAYS)
    assert done.stdout == f"True {os.environ['PYTEST_CURRENT_TEST']}\n", done.stderr


def test_another_environment_gets_a_server_of_its_own(tmp_path: Path) -> None:
    (tmp_path / "own_module.py").write_text("NAME = 'found'\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = run_python("import own_module; print(own_module.NAME)\n" + _SAYS, env=env)
    assert done.stdout == f"found\nTrue {os.environ['PYTEST_CURRENT_TEST']}\n", done.stderr
    done = run_python("import own_module", env=dict(os.environ))  # the suite's own again
    assert "No module named 'own_module'" in done.stderr
