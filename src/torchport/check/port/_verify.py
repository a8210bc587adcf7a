"""``torchport port --verify``: run the ported program on the simulated accelerator.

The port's static analysis says what it moved and what it could not; it cannot
promise that nothing is left on the CPU. A run can: the ported entry runs in a
child process as ``torchport run --device sim ENTRY ARGS`` (the simulated
accelerator: real values, CUDA's device rules), for at most ``timeout`` seconds,
twice: seen as a CUDA machine (CUDA redirected to ``sim``), then, when that run
verified, seen as an accelerator that is not CUDA (no redirect:
``torch.cuda.is_available()`` is False, as on MPS or XPU). A program that keeps
its own CUDA test (``if use_cuda: model.cuda()``) beside the port's ``device``
runs the first way and breaks the second. What the runs show becomes the port's
last word:

* it ran to its end: "verified on the simulated accelerator";
* it raised a device error (a mixed-device op, ``.numpy()`` of a device
  tensor, device lengths for ``pack_padded_sequence``): a finding at the
  user's ``file:line`` where it was raised (the run stops at the first one);
* it made, moved or cast a float64 tensor on the device (CUDA runs it; MPS has
  no float64): a finding at each such ``file:line``, whether or not it ran to
  its end (the child watches torch's calls; see ``torchport.cli._port_child``);
* it computed on the host in the user's code (host work: a model, a raw
  ``requires_grad`` tensor or a layer's weight left on the CPU, trained or run
  there; the rule is ``torchport.cli._host_watch``'s): a finding at each such
  ``file:line`` with its number of calls, worded as possibly deliberate where the
  program put those tensors on the CPU itself (``.cpu()``, ``.to("cpu")``), whether
  or not it ran to its end; the run is then never "verified";
* it raised something else, or ran past the time bound: what could not be
  verified, said as such; never "nothing left";
* it could not start: torch is not installed here, or the simulated
  accelerator cannot install (torch older than 2.7): said exactly so.

Nothing here imports torch (the child does).
"""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Float64Use", "HostWork", "Verification", "find_entry", "verify", "verify_entry"]

_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+)')
_DEVICE_WORDS = re.compile(
    r"same device|found at least two devices|device type|convert .* to numpy|"
    r"lengths.*(cpu|CPU)|Expected .* device|on device|"
    r"set_data.*incompatible tensor type|"  # `param.data = t` across devices
    r"got TensorOptions\(.*device=(?!cpu\b)",  # `torch.LongTensor(t)` of a device tensor
)


@dataclass(frozen=True, slots=True)
class Float64Use:
    """A place in the user's code where a float64 tensor reached the device."""

    path: str
    line: int
    call: str  # the torch call that made it: "to", "tensor", "double"

    def finding(self) -> str:
        return (
            f"{self.path}:{self.line}: verify: float64 tensor on the device (made by "
            f"`{self.call}`): MPS has no float64 and accelerators run it slowly; "
            "make it float32 before it moves (`.float()` first, or `dtype=torch.float32`)"
        )


_KINDS = {
    "grad": " that require grad (training on the host)",
    "backward": " (a backward whose graph is on the host)",
    "step": " (an optimizer step over host parameters)",
    "heavy": "",
}


@dataclass(frozen=True, slots=True)
class HostWork:
    """A place in the user's code where the run computed on the host (CPU)."""

    path: str
    line: int
    call: str  # the torch call named there: "torch.mm", "torch.nn.functional.linear"
    calls: int  # how many host-work calls the run made there
    kind: str  # "grad" | "backward" | "step" | "heavy"
    chosen: bool = False  # the program put these tensors on the host itself
    # only where CUDA is missing: the run seen as CUDA had no host work here, so the
    # program's own CUDA test (`torch.cuda.is_available()`) chose the CPU
    cuda_test: bool = False

    def finding(self, choices: Sequence[str] = ()) -> str:
        """The line for the report; ``choices``: where the port left the program's
        CUDA-or-CPU choices (TP109's ``path:line``), named when the CUDA test chose here."""
        head = (
            f"{self.path}:{self.line}: verify: host work: `{self.call}` on host tensors"
            f"{_KINDS.get(self.kind, '')} ({self.calls} call{'s' if self.calls != 1 else ''}): "
        )
        if self.cuda_test:
            at = f" at {', '.join(choices)}" if choices else ""
            return head + (
                "this runs on the CPU only where CUDA is missing (seen as a CUDA machine, the "
                "run put it on the device): the program's own CUDA-or-CPU choice"
                f"{at} (`torch.cuda.is_available()`) picked the CPU; to run on any "
                "accelerator (MPS, XPU), pick the device with `torch.accelerator` or "
                "`torchport.pick_device()`"
            )
        if self.chosen:
            return head + (
                "this runs on the CPU, where the program put these tensors itself (`.cpu()`, "
                '`.to("cpu")`, `device="cpu"`): it may be deliberate; if not, move them to the '
                "device, or say why with a comment"
            )
        return (
            head + "this runs on the CPU; move its inputs to the device, or say why with a comment"
        )


@dataclass(frozen=True, slots=True)
class Verification:
    """What a run of the ported entry on the simulated accelerator showed."""

    entry: str
    # "verified" | "device-error" | "error" | "timeout" | "not-run" | "no-runtime" | "no-simulator"
    status: str
    seconds: float = 0.0
    path: str | None = None  # the user's file where the run stopped
    line: int | None = None
    message: str = ""
    float64: tuple[Float64Use, ...] = ()
    # How the run saw the simulated accelerator: "cuda" (CUDA redirected to it) or
    # "accelerator" (no redirect: an accelerator that is not CUDA).
    seen_as: str = "cuda"
    host_work: tuple[HostWork, ...] = ()
    # storages the run put on the simulated accelerator (-1: not told); 0 on a run that
    # ended means nothing it computed ran there: no proof of anything
    on_device: int = -1

    @property
    def verified(self) -> bool:
        return (
            self.status == "verified"
            and not self.float64
            and not self.host_work
            and self.on_device != 0
        )

    def summary(self, left: int = 0, choices: Sequence[str] = ()) -> str:
        """What the run showed, for the port's report: findings first, then one sentence.

        ``left`` is what the port itself left (its report's "N left"): a run that ran to its
        end says those did not stop it, never that nothing is left. ``choices``: as for
        :meth:`HostWork.finding`.
        """
        uses = [u.finding() for u in self.float64]
        uses += [w.finding(choices) for w in self.host_work]
        sentence = self._sentence()
        if self.verified and left:
            sentence = sentence[:-1] + (
                f"; the {left} finding{'s' * (left != 1)} left above did not stop this run, "
                "and may on inputs or paths it did not take."
            )
        return "\n".join([*uses, sentence])

    def _sentence(self) -> str:
        where = f"{self.path}:{self.line}: " if self.path else ""
        if self.status == "verified" and (self.float64 or self.host_work):
            found = [
                f"{len(self.float64)} float64 use(s) on the device" if self.float64 else "",
                f"{len(self.host_work)} place(s) of host work" if self.host_work else "",
            ]
            return (
                f"Not verified: {self.entry} ran to its end on the simulated accelerator "
                f"({self.seconds:.0f} s), with {' and '.join(f for f in found if f)} (above)."
            )
        if self.status == "verified" and self.on_device == 0:
            seen = "" if self.seen_as == "cuda" else f" {_NOT_CUDA}"
            return (
                f"Not verified: {self.entry} ran to its end on the simulated accelerator{seen} "
                f"({self.seconds:.0f} s) but put no tensor on it: everything it computed stayed "
                "on the CPU (the port places models, what meets them and tensors that require "
                "grad: this run made none); move its tensors to `device` yourself if "
                "they should run there."
            )
        if self.status == "verified":
            return (
                f"Verified on the simulated accelerator: {self.entry} ran to its end, seen as "
                "a CUDA machine and as an accelerator that is not CUDA "
                f"({self.seconds:.0f} s in all)."
            )
        seen = "" if self.seen_as == "cuda" else f" {_NOT_CUDA}"
        if self.status == "device-error":
            return (
                f"{where}verify: {self.message}\nNot verified: {self.entry} stopped on the "
                f"simulated accelerator{seen} at a device error (above); move that value to "
                "`device`."
            )
        if self.status == "timeout":
            return (
                f"Not verified to the end: {self.entry} ran {self.seconds:.0f} s on the simulated "
                f"accelerator{seen} without a device error and was stopped (raise "
                "--verify-timeout)."
            )
        if self.status == "error":
            return (
                f"{where}verify: {self.message}\nNot verified: {self.entry} raised on the "
                f"simulated accelerator{seen}; not a device error, so whether data is left is "
                "unknown."
            )
        if self.status == "no-runtime":
            return (
                "Not verified: --verify runs the program, and torch does not import in this "
                f"environment ({self.message}); install it (`pip install 'torchport[torch]'`)."
            )
        if self.status == "no-simulator":
            return (
                "Not verified: the simulated accelerator --verify runs on cannot install here: "
                f"{self.message}."
            )
        return f"Not verified by running: {self.message}"


def find_entry(paths: list[str]) -> tuple[Path | None, str]:
    """The file to run: the one file given, or a folder's one entry script.

    A folder's scripts are its files that run something: an ``if __name__ ==
    "__main__":`` block, or module-level code (a call, a loop, a ``with``);
    ``setup.py``, ``conftest.py``, ``noxfile.py`` and a package's
    ``__init__.py``/``__main__.py`` are never one. The entry is the single script no
    other file of the folder imports (``model.py`` with a self-test, beside the
    ``train.py`` importing it, is a module), ``train.py`` or ``main.py`` among
    several. Returns (entry, why not) where entry is None when there is no single
    entry: several candidates are named, never chosen between.
    """
    if len(paths) == 1 and Path(paths[0]).is_file():
        return Path(paths[0]), ""
    texts: dict[Path, str] = {}
    for p in paths:
        root = Path(p)
        files = [root] if root.is_file() else sorted(root.glob("*.py")) if root.is_dir() else []
        for f in files:
            try:
                texts[f] = f.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
    scripts, imported = _scripts(texts)
    candidates = [f for f in scripts if f.stem not in imported] or scripts
    if len(candidates) == 1:
        return candidates[0], ""
    named = [c for c in candidates if c.stem in ("train", "main")]
    if len(named) == 1:
        return named[0], ""
    if not candidates:
        return None, (
            'no script with `if __name__ == "__main__":` or code at its top level to run; '
            "pass one file"
        )
    listed = ", ".join(str(c) for c in candidates[:5])
    return None, (
        f"several scripts could be the entry ({listed}); name the script to run first: "
        f"`torchport port {shlex.quote(str(candidates[0]))} --verify`"
    )


_MAIN_GUARD = re.compile(r"^if __name__ == ['\"]__main__['\"]", re.MULTILINE)
# files run by other tools, never a folder's program
_NOT_ENTRIES = frozenset({"setup.py", "conftest.py", "__init__.py", "__main__.py", "noxfile.py"})
_RUNS = (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith)


def _runs(statement: ast.stmt) -> bool:
    """A module-level statement that does work: a call or other expression, a loop, a ``with``."""
    if isinstance(statement, ast.Expr):
        return not isinstance(statement.value, ast.Constant)  # a docstring or a string "comment"
    return isinstance(statement, _RUNS)


def _scripts(texts: dict[Path, str]) -> tuple[list[Path], set[str]]:
    """The files that run something (see :func:`find_entry`), and the names the files import."""
    imported: set[str] = set()
    runs: list[Path] = []
    for f, text in texts.items():
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                imported.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                imported.add(node.module.split(".")[0])
            elif isinstance(node, ast.ImportFrom):  # `from . import model`, `from .model import`
                imported.update([node.module.split(".")[0]] if node.module else [])
                imported.update(a.name for a in node.names)
        if f.name not in _NOT_ENTRIES and (
            _MAIN_GUARD.search(text) or any(_runs(s) for s in tree.body)
        ):
            runs.append(f)
    return runs, imported


_NOT_CUDA = (
    "seen as an accelerator that is not CUDA (as MPS and XPU are: "
    "`torch.cuda.is_available()` False; as a CUDA machine it ran to its end)"
)


def verify(entry: Path, args: list[str], *, timeout: float, roots: list[str]) -> Verification:
    """Run ``entry`` on the simulated accelerator in child processes (see the module docstring).

    ``roots``: the ported files and folders; the frame where a run stopped is
    the last traceback frame inside them. ``timeout``: seconds for each run.
    """
    first = _run_once(entry, args, timeout=timeout, roots=roots, seen_as="cuda")
    if first.status != "verified":
        return first
    second = _run_once(entry, args, timeout=timeout, roots=roots, seen_as="accelerator")
    found = {(u.path, u.line): u for u in (*first.float64, *second.float64)}
    host: dict[tuple[str, int], HostWork] = {}
    for w in (*first.host_work, *second.host_work):  # the same program twice: the most calls
        known = host.get((w.path, w.line))
        host[(w.path, w.line)] = w if known is None or w.calls > known.calls else known
    as_cuda = {(w.path, w.line) for w in first.host_work}
    for key, w in host.items():  # host work only where CUDA is missing: the CUDA test chose
        if key not in as_cuda:
            host[key] = dataclasses.replace(w, cuda_test=True)
    float64 = tuple(found.values())
    host_work = tuple(sorted(host.values(), key=lambda w: (w.path, w.line)))
    if second.status != "verified":
        return dataclasses.replace(second, float64=float64, host_work=host_work)
    seconds = first.seconds + second.seconds
    idle = second if second.on_device == 0 and first.on_device != 0 else first  # the run to name
    return dataclasses.replace(idle, seconds=seconds, float64=float64, host_work=host_work)


def _run_once(
    entry: Path, args: list[str], *, timeout: float, roots: list[str], seen_as: str
) -> Verification:
    """One run of ``entry`` on ``sim``, seen as ``seen_as`` ("cuda" or "accelerator")."""
    with tempfile.TemporaryDirectory(prefix="torchport-verify-") as tmp:
        report_path = Path(tmp) / "report.json"
        listed = os.pathsep.join(str(Path(r).resolve()) for r in roots)
        command = [sys.executable, "-m", "torchport.cli._port_child", str(report_path), listed]
        command += ["redirected" if seen_as == "cuda" else "plain", str(entry.resolve()), *args]
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
            return Verification(str(entry), "timeout", time.perf_counter() - start, seen_as=seen_as)
        seconds = time.perf_counter() - start
        report = _read_report(report_path)
    setup = report.get("setup")
    if setup in ("no-runtime", "no-simulator"):
        return Verification(str(entry), str(setup), message=str(report.get("message", "")))
    float64 = tuple(
        Float64Use(_shown(str(path)), int(line), str(call))
        for path, line, call in report.get("float64", [])
    )
    host = tuple(
        sorted(
            (
                HostWork(_shown(str(p)), int(n), str(call), int(calls), str(kind), bool(chosen))
                for p, n, call, calls, kind, chosen in report.get("host_work", [])
            ),
            key=lambda w: (w.path, w.line),
        )
    )
    if done.returncode == 0:
        on_device = int(report.get("on_device", -1))
        return Verification(
            str(entry), "verified", seconds, float64=float64, seen_as=seen_as, host_work=host,
            on_device=on_device,
        )  # fmt: skip
    path, line = _user_frame(done.stderr, roots)
    message = _last_line(done.stderr) or f"exit status {done.returncode}"
    status = "device-error" if _DEVICE_WORDS.search(message) else "error"
    return Verification(
        str(entry), status, seconds, path, line, message[:300], float64, seen_as, host
    )


def _read_report(path: Path) -> dict[str, Any]:
    """The child's report; empty when it wrote none (it died before its end)."""
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _shown(path: str) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return path


def _user_frame(stderr: str, roots: list[str]) -> tuple[str | None, int | None]:
    resolved = [str(Path(r).resolve()) for r in roots]
    found: tuple[str | None, int | None] = (None, None)
    for text in stderr.splitlines():
        m = _FRAME.match(text)
        if m and any(m["path"].startswith(r) for r in resolved):
            found = (_shown(m["path"]), int(m["line"]))
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
