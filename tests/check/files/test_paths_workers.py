"""Killing a parallel `check` leaves no worker process behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def children(pid: int) -> set[int]:
    """Processes whose parent is ``pid``."""
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.add(int(entry))
    return found


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_for(predicate: object, seconds: float = 60.0) -> bool:
    """Poll ``predicate`` until it is true or ``seconds`` pass (a deadline, not a timing check)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_workers_die_with_the_parent(tmp_path: Path, sig: signal.Signals) -> None:
    # Enough work that the run is still going when the signal arrives.
    body = "".join(f"v{i} = x{i}.cuda()\nfor a in b:\n    y{i}.item()\n" for i in range(400))
    for i in range(64):
        (tmp_path / f"m{i}.py").write_text(body)
    proc = subprocess.Popen(
        [sys.executable, "-m", "torchport", "check", "--jobs", "2", str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert wait_for(lambda: len(children(proc.pid)) >= 2), "workers never started"
        workers = children(proc.pid)
        proc.send_signal(sig)
        proc.wait(timeout=120)
        assert wait_for(lambda: not any(alive(w) for w in workers)), (
            f"workers {sorted(w for w in workers if alive(w))} outlived the parent after {sig!r}"
        )
    finally:
        if proc.poll() is None:
            proc.kill()
        for w in children(proc.pid):
            os.kill(w, signal.SIGKILL)


def _slow_chunk(chunk: int) -> list[int]:
    time.sleep(0.2)
    return [chunk]


def test_ctrl_c_ends_the_workers_quietly(capfd: pytest.CaptureFixture[str]) -> None:
    """The user sees no traceback of the pool's own threads, and no worker outlives the run."""
    from torchport.check.files._paths import _map

    def interrupt(done: int, total: int) -> None:
        raise KeyboardInterrupt

    # (children started before, such as the preloaded server of tests/preloaded.py, stay)
    before = children(os.getpid())
    for _ in range(2):
        with pytest.raises(KeyboardInterrupt):
            _map(_slow_chunk, list(range(12)), 3, interrupt)
    assert wait_for(lambda: children(os.getpid()) <= before)
    assert "Traceback" not in capfd.readouterr().err
