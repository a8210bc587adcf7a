"""How fast `torchport port` is, and how often a port of real CPU-only code runs right.

Two questions, one file:

* ``speed`` (default): ``torchport port`` on a tree of at least 10,000 lines.
  The tree mixes the tutorial scripts under ``tests/check/port/scripts`` (copied
  until half the lines: code with something to port in every file) with the
  installed torch's ``torch/nn/modules`` sources (large library files with
  nothing to port). Measured: ``port_paths(tree, diff=True)`` in this process
  (median of ``--repeat``), the CLI ``torchport port --check TREE`` as a user
  runs it (interpreter start included), and an in-place port of a fresh copy.
  Target: under 2 s.
* ``--real DIR...``: each DIR is ported whole, as one project (``port_paths``: a
  model imported from a sibling module is known where it is used), and ported a
  second time (idempotent: nothing changes); every ``*.py`` under DIR that imports
  torch and names no accelerator (no ``cuda``/``mps``/``xpu``/``accelerator`` in its
  text) then runs: the original and the port on the CPU (output compared), and the port on
  the simulated accelerator (``sim``: real values, CUDA's device rules, run to the
  script's end; every forward's parameters, buffers and inputs must be on it, in
  train and eval mode). The runner is
  ``tests/check/port/port_runner.py`` (one process per mode, ``--timeout`` seconds per
  script, ``MPLBACKEND=Agg``, ``plt.pause``/``show`` do nothing). Code fetched
  for this stays outside the repository.

* ``--against-check TREE``: ``torchport port --diff TREE --jobs 1 -q`` against
  ``torchport check TREE --no-cache --jobs 1 -q --exit-zero`` on the same tree
  (issue 31: the port at most 1.5x check's CPU). Whole-process CPU (user+sys of the
  child, interpreter start included), in interleaved rounds (one of each
  per round, so the machine's load falls on both alike); ``--base SRC`` adds a third
  command, the port of another checkout's ``src`` (``PYTHONPATH=SRC``), and
  ``--same`` compares the two ports' output (stdout and the findings) byte for byte.
  ``--ideal-gate`` adds the port of only the files the tree's port changes or reports
  in (read from its output, before the rounds): what a file gate that skipped every
  other file before parsing would cost at best (their modules are still read where a
  ported file imports them, as the project view does); its output is compared with
  the whole tree's.

Run: ``.venv/bin/python benchmarks/bench_port.py [--repeat 3]``
     ``.venv/bin/python benchmarks/bench_port.py --real /tmp/real/some-repo ...``
     ``.venv/bin/python benchmarks/bench_port.py --against-check TREE [--rounds 3] [--base SRC]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from torchport.check.port._rewrite import port_paths
from torchport.check.port._verify import verify_entry

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "tests" / "check" / "port" / "scripts"
RUNNER = ROOT / "tests" / "check" / "port" / "port_runner.py"
_DEVICE_AWARE = re.compile(r"cuda|mps|xpu|accelerator")
_ADDRESS = re.compile(r"0x[0-9a-f]{6,}")
# A file the port's `--diff -q` output names: a diff's new-file line, or a finding's location
# (a notebook's `nb.ipynb:cell 3:4:1: TP...`).
_LOCATED = re.compile(rb"^(.+?:\d+:\d+: TP\d{3}) ", re.M)
_OUTPUT_FILE = re.compile(rb"^(?:\+\+\+ b/(.+)|(.+?)(?::cell \d+)?:\d+:\d+: TP\d{3} .*)$", re.M)


def _lines(path: Path) -> int:
    return path.read_text(encoding="utf-8", errors="replace").count("\n")


def build_tree(root: Path, target: int = 10_000) -> int:
    """Fill ``root`` with at least ``target`` lines (half tutorial scripts); returns the count."""
    total = 0
    scripts = sorted(SCRIPTS.glob("*.py"))
    copy = 0
    while total < target // 2:
        for script in scripts:
            dest = root / "scripts" / f"c{copy:02d}" / script.name
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(script, dest)
            total += _lines(script)
        copy += 1
    modules = Path(torch.__file__).parent / "nn" / "modules"
    for source in sorted(modules.glob("*.py")):
        if total >= target:
            break
        dest = root / "library" / source.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, dest)
        total += _lines(source)
    return total


def speed(repeat: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "tree"
        lines = build_tree(tree)
        files = len(list(tree.rglob("*.py")))
        times, cpu = [], []
        result = None
        for _ in range(repeat):
            start, start_cpu = time.perf_counter(), time.process_time()
            result = port_paths([tree], diff=True)
            times.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
        assert result is not None
        ported = len(result.changed)
        cli = []
        for _ in range(repeat):
            start = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "torchport", "port", "--check", str(tree)],
                capture_output=True,
                check=False,
            )
            cli.append(time.perf_counter() - start)
        fresh = Path(tmp) / "fresh"
        shutil.copytree(tree, fresh)
        start = time.perf_counter()
        port_paths([fresh])
        in_place = time.perf_counter() - start
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores; python {platform.python_version()}"
    )
    print(f"tree: {files} files, {lines} lines; {ported} files need porting")
    print(f"load average before: {', '.join(f'{v:.1f}' for v in os.getloadavg())}")
    print(
        f"port_paths(diff=True), median of {repeat}: {statistics.median(times):.2f} s wall, "
        f"{statistics.median(cpu):.2f} s CPU"
    )
    cli_median = statistics.median(cli)
    print(f"torchport port --check (CLI, process start included), median: {cli_median:.2f} s")
    print(f"torchport port in place on a fresh copy: {in_place:.2f} s")
    print("target: under 2 s")


def _run_all(jobs: dict[str, list[dict[str, str]]], timeout: int) -> dict[str, dict[str, Any]]:
    """Each mode's jobs in one runner process (the two modes side by side)."""
    env = {
        **os.environ,
        "MPLBACKEND": "Agg",
        "PORT_RUNNER_NO_PAUSE": "1",
        "PORT_RUNNER_TIMEOUT": str(timeout),
    }
    out: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        procs = []
        for mode, todo in jobs.items():
            path, done = Path(tmp) / f"{mode}.json", Path(tmp) / f"{mode}.out.json"
            path.write_text(json.dumps(todo))
            command = [sys.executable, str(RUNNER), mode, str(path), str(done)]
            procs.append((mode, subprocess.Popen(command, env=env), done))
        for mode, proc, done in procs:
            proc.wait(timeout=timeout * (len(jobs[mode]) + 2))
            for result in json.loads(done.read_text()):
                out[f"{mode}:{result['name']}"] = result
    return out


def _verified(script: Path, timeout: int) -> str:
    """What ``torchport port --verify`` says of the ported script (its run on ``sim``)."""
    found = verify_entry([str(script)], [], timeout=timeout)
    uses = f", {len(found.float64)} float64 line(s) reported" if found.float64 else ""
    where = f" at {Path(found.path).name}:{found.line}" if found.path else ""
    host = ", ".join(
        f"{Path(w.path).name}:{w.line} {w.call}{' (chosen)' if w.chosen else ''}"
        for w in found.host_work[:4]
    )
    if found.host_work:
        uses += f", host work at {len(found.host_work)} place(s) ({host})"
    return f"--verify: {found.status}{where}{uses}"


def real(dirs: list[str], timeout: int, verify: bool = False) -> None:
    """Port each DIR whole (one project), then run its CPU-only scripts three ways."""
    rows: dict[str, str] = {}
    ported: dict[str, tuple[list[str], bool]] = {}
    jobs: dict[str, list[dict[str, str]]] = {"cpu": [], "sim": []}
    idempotent: dict[str, bool] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for d in dirs:
            project = Path(d).name
            orig_root, port_root = Path(tmp) / "orig" / project, Path(tmp) / "ported" / project
            shutil.copytree(d, orig_root)
            shutil.copytree(d, port_root)
            result = port_paths([port_root], jobs=1)
            idempotent[project] = not port_paths([port_root], jobs=1).changed
            left_by_file: dict[str, set[str]] = {}
            for f in result.remaining:
                left_by_file.setdefault(str(Path(f.path).resolve()), set()).add(f.code)
            for path in sorted(orig_root.rglob("*.py")):
                text = path.read_text(encoding="utf-8", errors="replace")
                if "import torch" not in text:
                    continue
                rel = path.relative_to(orig_root)
                name = f"{project}/{rel}"
                if _DEVICE_AWARE.search(text):
                    rows[name] = "skipped: already names an accelerator"
                    continue
                twin = port_root / rel
                after = twin.read_text(encoding="utf-8", errors="replace")
                left = sorted(left_by_file.get(str(twin.resolve()), set()))
                ported[name] = (left, after == text)
                for kind, script in (("orig", path), ("ported", twin)):
                    for mode in ("cpu", "sim") if kind == "ported" else ("cpu",):
                        job = {"name": f"{kind}:{name}", "script": str(script)}
                        jobs[mode].append({**job, "workdir": str(script.parent)})
        results = _run_all(jobs, timeout)
        for name, (left, unchanged) in ported.items():
            rows[name] = _verdict(
                results[f"cpu:orig:{name}"],
                results[f"cpu:ported:{name}"],
                results[f"sim:ported:{name}"],
                left,
                unchanged,
            )
            # a program the port did not change is verified too: "nothing to port" may
            # be a whole program left on the CPU
            if verify and not results[f"cpu:orig:{name}"].get("error"):
                rows[name] += "; " + _verified(Path(tmp) / "ported" / name, timeout)
    width = max(len(n) for n in rows)
    for name in sorted(rows):
        print(f"{name:<{width}}  {rows[name]}")
    ok = sum(v.startswith("OK") for v in rows.values())
    tried = sum(not v.startswith("skipped") for v in rows.values())
    silent = sum(v.startswith("FAIL") and "port said nothing" in v for v in rows.values())
    print(f"\n{ok} of {tried} CPU-only scripts ran correctly ported ({len(rows) - tried} skipped)")
    print(f"left on the CPU without a word: {silent}")
    for project, same in idempotent.items():
        print(f"{project}: a second port {'changes nothing' if same else 'CHANGES FILES'}")


def _verdict(
    original: dict[str, Any],
    ported: dict[str, Any],
    on_sim: dict[str, Any],
    left: list[str],
    unchanged: bool,
) -> str:
    if original.get("error"):
        first = str(original["error"]).splitlines()[0][:90]
        return f"original does not run here: {first}"
    if unchanged:
        return "nothing to port (no model or batch found)"
    if ported.get("error"):
        return f"FAIL port raises on the CPU: {str(ported['error']).splitlines()[0][:90]}"
    if _ADDRESS.sub("0x?", ported.get("stdout") or "") != _ADDRESS.sub(
        "0x?", original.get("stdout") or ""
    ):  # `<AddBackward0 object at 0x7f...>`: an address differs from run to run
        return "FAIL port prints differently on the CPU"
    said = f"; port said: {', '.join(left)}" if left else "; port said nothing"
    if on_sim.get("error"):
        return f"FAIL on the accelerator: {str(on_sim['error']).splitlines()[0][:90]}{said}"
    forwards = on_sim.get("forwards", {})
    if on_sim.get("off_device"):
        return f"FAIL off the accelerator: {on_sim['off_device'][0]}{said}"
    if not forwards.get("train") and not forwards.get("eval"):
        # No nn.Module ran (a hand-trained model): the run to the end on `sim`, where a
        # mixed-device op raises, is the check.
        note = f"; left for the user: {', '.join(left)}" if left else ""
        return f"OK (same output; ran to its end on sim, no nn.Module forward{note})"
    modes = "+".join(m for m in ("train", "eval") if forwards.get(m))
    note = f"; left for the user: {', '.join(left)}" if left else ""
    same = "same output" if original.get("stdout") else "no output to compare"
    return f"OK ({same}; {modes} forwards on the accelerator{note})"


def _child_cost(command: list[str], env: dict[str, str]) -> tuple[float, bytes, bytes]:
    """(user+sys CPU seconds, stdout, stderr) of one child process.

    (No peak RSS: a forked child's counts this process's pages before its exec;
    ``/usr/bin/time -f %M`` measures that.)
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(command, stdout=out, stderr=err, env=env)
        _, _, usage = os.wait4(proc.pid, 0)
        proc.returncode = 0  # reaped by wait4
        out.seek(0)
        err.seek(0)
        return usage.ru_utime + usage.ru_stime, out.read(), err.read()


def _output_files(out: bytes, err: bytes) -> list[str]:
    """The files a port's ``--diff -q`` output (stdout, stderr) names, in order, once each."""
    found = (m.group(1) or m.group(2) for m in _OUTPUT_FILE.finditer(out + b"\n" + err))
    return list(dict.fromkeys(os.fsdecode(f) for f in found))


def _compared(one: tuple[bytes, bytes], other: tuple[bytes, bytes]) -> str:
    """``same``; ``same diff and findings, messages differ`` (a finding's location and code
    alike, its words not: a file given by name finds its target torch where its folder did
    not, and says why a fix was left out); else ``DIFFERS``."""
    if one == other:
        return "same"
    located = [_LOCATED.findall(out + b"\n" + err) for out, err in (one, other)]
    if one[0] == other[0] and located[0] == located[1]:
        return "same diff and findings, messages differ"
    return "DIFFERS"


def against_check(
    tree: str, rounds: int, base: str | None, same: bool, ideal: bool = False
) -> None:
    """The port's CPU against check's on ``tree``, interleaved rounds (see the docstring)."""
    python = sys.executable
    port = [python, "-m", "torchport", "port", "--diff", tree, "--jobs", "1", "-q"]
    check = [python, "-m", "torchport", "check", tree, "--no-cache", "--jobs", "1", "-q"]
    check.append("--exit-zero")
    env = dict(os.environ)
    commands: dict[str, tuple[list[str], dict[str, str]]] = {"port": (port, env)}
    if base is not None:
        commands["base"] = (port, {**env, "PYTHONPATH": base})
    if ideal:
        files = _output_files(*_child_cost(port, env)[1:])
        print(f"ideal gate: {len(files)} files of the tree have port output")
        ideal = bool(files)  # (none: nothing to port, no bound to measure)
        if ideal:
            commands["ideal"] = ([*port[:5], *files, *port[6:]], env)
    commands["check"] = (check, env)
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores; python {platform.python_version()}"
    )
    print(f"tree: {tree}; commands: {' '.join(port)} | {' '.join(check)}")
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    for i in range(rounds):
        load = os.getloadavg()[0]
        row = []
        outputs = {}
        for name, (command, child_env) in commands.items():
            seconds, out, err = _child_cost(command, child_env)
            cpu[name].append(seconds)
            outputs[name] = (out, err)
            row.append(f"{name} {seconds:.2f} s")
        ratio = cpu["port"][-1] / cpu["check"][-1]
        extra = f", base/check {cpu['base'][-1] / cpu['check'][-1]:.2f}" if base else ""
        if base and same:
            extra += ", output " + ("same" if outputs["port"] == outputs["base"] else "DIFFERS")
        if ideal:
            extra += f", ideal/check {cpu['ideal'][-1] / cpu['check'][-1]:.2f}, ideal output "
            extra += _compared(outputs["port"], outputs["ideal"])
        print(f"round {i + 1}, load {load:.1f}: {'; '.join(row)}; port/check {ratio:.2f}{extra}")
    median = {name: statistics.median(v) for name, v in cpu.items()}
    ratios = [p / c for p, c in zip(cpu["port"], cpu["check"], strict=True)]
    print(
        f"median CPU: {', '.join(f'{n} {v:.2f} s' for n, v in median.items())}; "
        f"port/check median of the rounds' ratios {statistics.median(ratios):.2f} (target 1.5)"
    )
    if ideal:
        bound = [i / c for i, c in zip(cpu["ideal"], cpu["check"], strict=True)]
        print(f"ideal/check median of the rounds' ratios {statistics.median(bound):.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against-check", metavar="TREE")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--base", metavar="SRC", help="with --against-check: another src")
    parser.add_argument(
        "--same", action="store_true", help="with --base: compare the two ports' output"
    )
    parser.add_argument(
        "--ideal-gate",
        action="store_true",
        help="with --against-check: also port only the files with port output (a bound)",
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--real", nargs="+", metavar="DIR")
    parser.add_argument("--timeout", type=int, default=120, help="seconds per script run")
    parser.add_argument(
        "--verify", action="store_true", help="with --real: also `port --verify` each port"
    )
    args = parser.parse_args()
    if args.against_check:
        against_check(args.against_check, args.rounds, args.base, args.same, args.ideal_gate)
    elif args.real:
        real(args.real, args.timeout, args.verify)
    else:
        speed(args.repeat)


if __name__ == "__main__":
    main()
