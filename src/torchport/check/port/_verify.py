"""``torchport port --verify``: run the ported program on the simulated accelerator.

The port's static analysis says what it moved and what it could not; it cannot
promise that nothing is left on the CPU. A run can: the ported entry runs in a
child process as ``torchport run --device sim ENTRY ARGS`` (the simulated
accelerator: real values, CUDA's device rules), for at most ``timeout`` seconds.
What the run shows becomes the port's last word:

* it ran to its end: "verified on the simulated accelerator";
* it raised a device error (a mixed-device op, ``.numpy()`` of a device
  tensor, device lengths for ``pack_padded_sequence``): a finding at the
  user's ``file:line`` where it was raised (the run stops at the first one);
* it raised something else, or ran past the time bound: what could not be
  verified, said as such; never "nothing left".

Nothing here imports torch (the child does).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Verification", "find_entry", "verify", "verify_entry"]

_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+)')
_DEVICE_WORDS = re.compile(
    r"same device|found at least two devices|device type|convert .* to numpy|"
    r"lengths.*(cpu|CPU)|Expected .* device|on device",
)


@dataclass(frozen=True, slots=True)
class Verification:
    """What a run of the ported entry on the simulated accelerator showed."""

    entry: str
    status: str  # "verified" | "device-error" | "error" | "timeout" | "not-run"
    seconds: float = 0.0
    path: str | None = None  # the user's file where the run stopped
    line: int | None = None
    message: str = ""

    @property
    def verified(self) -> bool:
        return self.status == "verified"

    def summary(self) -> str:
        """One sentence for the port's report."""
        where = f"{self.path}:{self.line}: " if self.path else ""
        if self.status == "verified":
            return (
                f"Verified on the simulated accelerator: {self.entry} ran to its end "
                f"({self.seconds:.0f} s)."
            )
        if self.status == "device-error":
            return (
                f"{where}verify: {self.message}\nNot verified: {self.entry} stopped on the "
                "simulated accelerator at a device error (above); move that value to `device`."
            )
        if self.status == "timeout":
            return (
                f"Not verified to the end: {self.entry} ran {self.seconds:.0f} s on the simulated "
                "accelerator without a device error and was stopped (raise --verify-timeout)."
            )
        if self.status == "error":
            return (
                f"{where}verify: {self.message}\nNot verified: {self.entry} raised on the "
                "simulated accelerator; not a device error, so whether data is left is unknown."
            )
        return f"Not verified by running: {self.message}"


def find_entry(paths: list[str]) -> tuple[Path | None, str]:
    """The file to run: the one file given, or a folder's one ``__main__`` script.

    Returns (entry, why not) where entry is None when there is no single entry.
    """
    if len(paths) == 1 and Path(paths[0]).is_file():
        return Path(paths[0]), ""
    candidates: list[Path] = []
    for p in paths:
        root = Path(p)
        if root.is_file():
            files = [root]
        elif root.is_dir():
            files = sorted(root.glob("*.py"))
        else:
            continue
        for f in files:
            try:
                text = f.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            if re.search(r"^if __name__ == ['\"]__main__['\"]", text, re.MULTILINE):
                candidates.append(f)
    if len(candidates) == 1:
        return candidates[0], ""
    named = [c for c in candidates if c.stem in ("train", "main")]
    if len(named) == 1:
        return named[0], ""
    if not candidates:
        return None, 'no script with `if __name__ == "__main__":` to run; pass one file'
    listed = ", ".join(str(c) for c in candidates[:5])
    return None, f"several scripts could be the entry ({listed}); pass one file"


def verify(entry: Path, args: list[str], *, timeout: float, roots: list[str]) -> Verification:
    """Run ``entry`` on the simulated accelerator in a child process (see the module docstring).

    ``roots``: the ported files and folders; the frame where the run stopped is
    the last traceback frame inside them.
    """
    command = [sys.executable, "-m", "torchport", "run", "--device", "sim", "--quiet"]
    command += [str(entry.resolve()), *args]
    env = {**os.environ, "TORCHPORT_DEVICE": "sim", "MPLBACKEND": "Agg"}
    start = time.perf_counter()
    try:
        done = subprocess.run(
            command,
            cwd=entry.resolve().parent,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return Verification(str(entry), "timeout", time.perf_counter() - start)
    seconds = time.perf_counter() - start
    if done.returncode == 0:
        return Verification(str(entry), "verified", seconds)
    path, line = _user_frame(done.stderr, roots)
    message = _last_line(done.stderr) or f"exit status {done.returncode}"
    status = "device-error" if _DEVICE_WORDS.search(message) else "error"
    return Verification(str(entry), status, seconds, path, line, message[:300])


def _user_frame(stderr: str, roots: list[str]) -> tuple[str | None, int | None]:
    resolved = [str(Path(r).resolve()) for r in roots]
    found: tuple[str | None, int | None] = (None, None)
    for text in stderr.splitlines():
        m = _FRAME.match(text)
        if m and any(m["path"].startswith(r) for r in resolved):
            try:
                shown = os.path.relpath(m["path"])
            except ValueError:  # another drive (Windows)
                shown = m["path"]
            found = (shown, int(m["line"]))
    return found


def _last_line(stderr: str) -> str:
    lines = [t for t in stderr.strip().splitlines() if t.strip()]
    return lines[-1].strip() if lines else ""


def verify_entry(paths: list[str], args: list[str], *, timeout: float) -> Verification:
    """Find the entry among ``paths`` (:func:`find_entry`) and :func:`verify` it with ``args``.

    A ``--`` first in ``args`` is dropped (``port --verify -- --epochs 1``).
    """
    if args[:1] == ["--"]:
        args = args[1:]
    entry, why = find_entry(paths or ["."])
    if entry is None:
        return Verification("", "not-run", message=why)
    return verify(entry, args, timeout=timeout, roots=paths or ["."])
