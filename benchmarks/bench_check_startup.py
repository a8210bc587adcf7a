"""Start-up of ``torchport check`` on a 3-line file, against Ruff's and the bare interpreter's.

Strategies compared, each a whole process run in turn (A B C A B C ...) so that the
machine's drift hits all alike: ``python -m torchport check --no-cache tiny.py`` (the
default command, which an editor or a pre-commit hook runs per file),
``ruff check --no-cache --select ALL tiny.py`` and ``python -c pass``. The figure is
user+sys CPU of each child (``resource.getrusage(RUSAGE_CHILDREN)`` deltas), median
over ``--rounds``, and the ratio to Ruff taken pair by pair (median of the per-round
ratios). ``--torchport-path`` runs another checkout's ``src`` (``PYTHONPATH``) to set
two versions side by side. Compile the bytecode first (``python -m compileall -q src``)
where ``PYTHONDONTWRITEBYTECODE`` is set, or every run pays for compiling.

Usage: python benchmarks/bench_check_startup.py [--rounds 31] [--torchport-path DIR]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

TINY = "import torch\nx = torch.zeros(3).cuda()\nprint(x)\n"


def _cpu(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    quiet = subprocess.DEVNULL
    subprocess.run(argv, cwd=cwd, env=env, stdout=quiet, stderr=quiet, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=31)
    parser.add_argument("--torchport-path", action="append", default=[], metavar="SRC")
    args = parser.parse_args()
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        raise SystemExit("ruff is not installed: pip install ruff")
    env = dict(os.environ)
    commands: dict[str, tuple[list[str], dict[str, str]]] = {
        "torchport": ([sys.executable, "-m", "torchport", "check", "--no-cache", "tiny.py"], env),
        "ruff": ([ruff, "check", "--no-cache", "--select", "ALL", "tiny.py"], env),
        "python -c pass": ([sys.executable, "-c", "pass"], env),
    }
    for src in args.torchport_path:
        commands[f"torchport ({src})"] = (commands["torchport"][0], {**env, "PYTHONPATH": src})
    with tempfile.TemporaryDirectory() as folder:
        cwd = Path(folder)
        (cwd / "tiny.py").write_text(TINY)
        for argv, cmd_env in commands.values():  # warm-up: file caches, not counted
            _cpu(argv, cwd, cmd_env)
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.rounds):
            for name, (argv, cmd_env) in commands.items():
                times[name].append(_cpu(argv, cwd, cmd_env))
    load = os.getloadavg()
    print(f"{args.rounds} rounds, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    print(f"{'command':<40} {'CPU ms (median)':>16} {'ratio to ruff':>14}")
    for name, values in times.items():
        ratios = [v / r for v, r in zip(values, times["ruff"], strict=True) if r > 0]
        ratio = statistics.median(ratios) if ratios else float("nan")
        print(f"{name:<40} {1e3 * statistics.median(values):>16.1f} {ratio:>14.1f}")


if __name__ == "__main__":
    main()
