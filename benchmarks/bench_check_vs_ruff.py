"""CPU of ``torchport check`` on whole trees against ``ruff check --select ALL``, in turn.

Issue 34's throughput figure: within 1.5x Ruff's CPU time on 50k-300k-line trees. Each
round runs, one after the other, ``ruff check --no-cache --select ALL --exit-zero -q
TREE``, then ``python -m torchport check --no-cache --exit-zero -q -j 1 TREE`` for each
checkout given (``--base DIR``: another checkout's ``src``, run with ``PYTHONPATH``; the
installed one last, as "branch"), so the machine's drift hits all alike. The figure is
user+sys CPU of each child (``resource.getrusage(RUSAGE_CHILDREN)`` deltas): medians
over ``--rounds`` after one warm-up run each, the ratio to Ruff taken round by round
(median of the per-round ratios), the minima, the median wall time of each, and the load
average seen. ``--jobs N`` runs torchport with ``-j N`` (default 1), ``--jobs default`` with
no ``-j`` (what a user's run does; Ruff always runs with its own default threads).

Bytecode: where ``PYTHONDONTWRITEBYTECODE`` is set (this project's sessions set it),
every ``python -m torchport`` run compiles torchport's ~150 modules from source, as no
installed copy does (``pip install`` writes the ``.pyc`` files): 0.06 s of a 3-line
file's start-up, 0.15-0.2 s of a run over Lightning. So the ``src`` folders run are
compiled first (``compileall``, into their ``__pycache__``), unless ``--no-compile``.

Usage: python benchmarks/bench_check_vs_ruff.py [--rounds 3] [--base /tmp/main/src]
[--no-compile] [--jobs N|default] TREE [TREE ...]
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torchport


def _cpu(argv: list[str], env: dict[str, str], cwd: str) -> tuple[float, float]:
    """(user+sys CPU, wall time) of one run, in seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    quiet = subprocess.DEVNULL
    subprocess.run(argv, env=env, cwd=cwd, stdout=quiet, stderr=quiet, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--base", action="append", default=[], help="another checkout's src")
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--jobs", default="1", help="torchport's -j (default: no -j given)")
    args = parser.parse_args()
    jobs = [] if args.jobs == "default" else ["-j", args.jobs]
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        raise SystemExit("ruff is not installed: pip install ruff")
    own_src = str(Path(torchport.__file__).resolve().parents[1])
    srcs = [*args.base, own_src]
    if not args.no_compile:
        for src in srcs:
            compileall.compile_dir(src, quiet=1)
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    runs: dict[str, tuple[list[str], dict[str, str]]] = {}
    for tree in args.trees:
        tree = os.path.abspath(tree)
        runs = {
            "ruff": (
                [ruff, "check", "--no-cache", "--select", "ALL", "--exit-zero", "-q", tree],
                env,
            )
        }
        for i, src in enumerate(srcs):
            name = "branch" if src == own_src else (f"base{i}" if len(args.base) > 1 else "base")
            argv = [sys.executable, "-m", "torchport", "check", "--no-cache", "--exit-zero", "-q"]
            runs[name] = ([*argv, *jobs, tree], {**env, "PYTHONPATH": src})
        cwd = os.path.dirname(tree)
        for argv, run_env in runs.values():
            _cpu(argv, run_env, cwd)  # warm-up: the files in the page cache
        times: dict[str, list[float]] = {name: [] for name in runs}
        walls: dict[str, list[float]] = {name: [] for name in runs}
        loads: list[float] = []
        for _ in range(args.rounds):
            for name, (argv, run_env) in runs.items():
                cpu, wall = _cpu(argv, run_env, cwd)
                times[name].append(cpu)
                walls[name].append(wall)
            loads.append(os.getloadavg()[0])
        parts = [f"{os.path.basename(tree)}:"]
        for name, values in times.items():
            parts.append(
                f"{name} {statistics.median(values):.2f} s (min {min(values):.2f}, "
                f"wall {statistics.median(walls[name]):.2f})"
            )
        for name, values in times.items():
            if name != "ruff":
                ratio = statistics.median(v / r for v, r in zip(values, times["ruff"], strict=True))
                parts.append(f"{name}/ruff {ratio:.2f}x")
        if "base" in times:
            ratio = statistics.median(
                b / m for b, m in zip(times["branch"], times["base"], strict=True)
            )
            parts.append(f"branch/base {ratio:.3f}")
        parts.append(f"load {min(loads):.1f}-{max(loads):.1f}")
        print(" | ".join(parts), flush=True)


if __name__ == "__main__":
    main()
