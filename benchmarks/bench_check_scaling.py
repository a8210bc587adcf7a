"""How `torchport check` grows with one file: time per finding, memory per byte of source.

Questions (one file, one process):

* **Time against the number of findings.** Files with N findings, N doubling from
  2,000 to 32,000, of two kinds: ``one-line`` (``xN = torch.ones(1).cuda()``, two
  findings a line) and ``mixed`` (every rule's own invalid examples, repeated, half
  of them inside functions, so that guards, scopes, flow and the port's analysis
  are all asked for each finding). Linear growth doubles the time with N; the
  quadratic checker this replaced took 1.2 s for 2,000 findings and 150 s for
  32,000. Target: 32,000 findings in at most 5 s.
* **Memory against file size.** Peak RSS of a fresh process checking one file,
  above the interpreter's own, per byte of source, for clean and for finding-rich
  files; and the refusal of a file over ``MAX_SOURCE_BYTES``.

Strategies compared in the same run, on the same files:

* ``parse only``   ``ast.parse`` of the text: the floor every ast-based checker pays;
* ``ruff``         ``ruff check --select ALL --no-cache`` on the same file (an
  outside checker, written in Rust, different rules: for scale, not a race);
* ``torchport``    ``check_paths([file], jobs=1)`` with every default rule, and with
  ``--select ALL`` (the port rules too).

Times are process CPU seconds (``time.process_time`` in the timed process), medians
of ``--repeat`` runs, each in a fresh subprocess so no cache carries over.

Run: ``.venv/bin/python benchmarks/bench_check_scaling.py [--repeat 3] [--max 32000]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

_CHILD = r"""
import ast, json, resource, sys, time
mode, path, select = sys.argv[1], sys.argv[2], sys.argv[3]
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
if mode != "parse":
    from torchport.check import check_paths
src = open(path, encoding="utf-8").read()
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.process_time()
if mode == "parse":
    ast.parse(src)
    found, errors = 0, []
else:
    result = check_paths([path], jobs=1, select=None if select == "-" else [select])
    found, errors = len(result.findings), [e.message for e in result.errors]
cpu = time.process_time() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"cpu": cpu, "extra_kb": peak - base, "findings": found, "errors": errors}))
"""


def one_line_file(findings: int) -> str:
    lines = ["import torch\n"]
    lines += [f"x{i} = torch.ones(1).cuda()\n" for i in range(findings // 2)]  # TP101 + TP905
    return "".join(lines)


def _examples() -> list[str]:
    from torchport.check._select import available_rules

    out = []
    for rule in available_rules():
        for example in rule.invalid:
            body = "".join(
                line
                for line in example.source.splitlines(True)
                if not line.startswith(("import ", "from "))
            )
            out.append(body)
    return out


def mixed_file(blocks: int) -> str:
    parts = ["import numpy as np\nimport torch\nimport torch.nn as nn\n"]
    parts.append("from torch.utils.data import DataLoader\n")
    examples = _examples()
    for i in range(blocks):
        body = examples[i % len(examples)]
        if i % 2:
            indented = "".join(
                "    " + line if line.strip() else line for line in body.splitlines(True)
            )
            body = f"def f{i}():\n{indented}    pass\n"
        parts.append(body)
    return "\n".join(parts)


def run_child(mode: str, path: Path, select: str = "-") -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, mode, str(path), select],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_ruff(path: Path) -> float | None:
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    if not Path(ruff).exists():
        return None
    code = (
        "import resource, subprocess, sys\n"
        "subprocess.run(sys.argv[1:], capture_output=True)\n"
        "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "print(u.ru_utime + u.ru_stime)\n"
    )
    cmd = [ruff, "check", "--select", "ALL", "--no-cache", "--isolated", str(path)]
    out = subprocess.run([sys.executable, "-c", code, *cmd], capture_output=True, text=True)
    return float(out.stdout.strip())


def median(values: list[float]) -> float:
    return statistics.median(values)


def time_table(folder: Path, repeat: int, top: int) -> None:
    print("## Time against findings (CPU s, median of", repeat, "runs)\n")
    print("| file | findings | parse only | ruff | torchport (default) | torchport ALL |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    sizes = []
    n = 2000
    while n <= top:
        sizes.append(n)
        n *= 2
    for kind in ("one-line", "mixed"):
        previous = None
        for n in sizes:
            text = one_line_file(n) if kind == "one-line" else _mixed_with_findings(n)
            path = folder / f"{kind}_{n}.py"
            path.write_text(text, encoding="utf-8")
            parse = median([float(run_child("parse", path)["cpu"]) for _ in range(repeat)])
            ruff_runs = [run_ruff(path) for _ in range(repeat)]
            ruff = median([r for r in ruff_runs if r is not None]) if all(ruff_runs) else None
            default = [run_child("check", path) for _ in range(repeat)]
            everything = [run_child("check", path, "ALL") for _ in range(repeat)]
            found = everything[0]["findings"]
            t_default = median([float(r["cpu"]) for r in default])
            t_all = median([float(r["cpu"]) for r in everything])
            growth = f" ({t_all / previous:.2f}x the half)" if previous else ""
            previous = t_all
            ruff_text = f"{ruff:.2f}" if ruff is not None else "n/a"
            print(
                f"| {kind} {n} | {found} | {parse:.2f} | {ruff_text} | {t_default:.2f} | "
                f"{t_all:.2f}{growth} |"
            )
            sys.stdout.flush()


_MIXED_CACHE: dict[int, str] = {}


def _mixed_with_findings(target: int) -> str:
    """A mixed file with at least ``target`` findings under ``--select ALL`` (found by search)."""
    blocks = max(target // 2, 50)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "probe.py"
        while True:
            text = mixed_file(blocks)
            path.write_text(text, encoding="utf-8")
            found = int(run_child("check", path, "ALL")["findings"])
            if found >= target:
                return text
            blocks = int(blocks * target / max(found, 1) * 1.05) + 1


def memory_table(folder: Path) -> None:
    from torchport.check.files._reading import MAX_SOURCE_BYTES

    print("\n## Peak memory above the interpreter, per byte of source\n")
    print("| file | MiB | parse only | torchport (default) | torchport ALL |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for label, make in (
        (
            "clean",
            lambda n: "".join(
                f"def f{i}(x, y):\n    z = x * {i} + y  # a comment\n    return torch.relu(z)\n\n"
                for i in range(n)
            ),
        ),
        ("findings", lambda n: "".join(f"x{i} = torch.ones(1).cuda()\n" for i in range(n))),
    ):
        for mib in (0.5, 1.0, 2.0, 3.5):
            text = "import torch\n" + make(1)
            unit = len(make(1))
            text = "import torch\n" + make(int(mib * 2**20 / unit))
            path = folder / f"mem_{label}_{mib}.py"
            path.write_text(text, encoding="utf-8")
            size = path.stat().st_size
            ratios = []
            for mode, select in (("parse", "-"), ("check", "-"), ("check", "ALL")):
                r = run_child(mode, path, select)
                ratios.append(float(r["extra_kb"]) * 1024 / size)
            print(
                f"| {label} | {size / 2**20:.2f} | {ratios[0]:.0f}x | {ratios[1]:.0f}x | "
                f"{ratios[2]:.0f}x |"
            )
            sys.stdout.flush()
    big = folder / "over_limit.py"
    big.write_text("x = 1\n" * (MAX_SOURCE_BYTES // 6 + 10), encoding="utf-8")
    r = run_child("check", big)
    print(f"\nOver the limit ({big.stat().st_size / 2**20:.1f} MiB): {r['errors'][0]}")
    print(f"(peak above the interpreter: {float(r['extra_kb']) / 1024:.0f} MiB)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--max", type=int, default=32000, help="most findings in one file")
    parser.add_argument("--skip-memory", action="store_true")
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        time_table(folder, args.repeat, args.max)
        if not args.skip_memory:
            memory_table(folder)


if __name__ == "__main__":
    main()
