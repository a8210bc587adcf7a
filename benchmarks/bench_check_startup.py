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

``--floor`` adds the floor under any Python checker of this design: a child that imports
just the standard-library modules the check loads (those its process holds at the end
that ``python -c pass`` does not, found by running it once), and the same without
``pathlib`` and ``typing`` (with what only they bring in); each ends as a plain check
does, with ``os._exit`` (no teardown).

Usage: python benchmarks/bench_check_startup.py [--rounds 31] [--torchport-path DIR] [--floor]
"""

from __future__ import annotations

import argparse
import ast
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


_LIST = (  # runpy: what `python -m` loads
    "import sys, runpy\nfrom torchport.cli._main import main\nmain({argv!r})\n"
    "print(sorted(sys.modules))"
)


def _modules(argv: list[str], cwd: Path, env: dict[str, str], code: str) -> set[str]:
    out = subprocess.run([*argv, "-c", code], cwd=cwd, env=env, capture_output=True, text=True)
    return set(ast.literal_eval(out.stdout.strip().splitlines()[-1]))


def _floor(cwd: Path, env: dict[str, str]) -> dict[str, tuple[list[str], dict[str, str]]]:
    """Children that import only the standard-library modules a plain check loads."""
    python = [sys.executable]
    bare = _modules(python, cwd, env, "import sys\nprint(sorted(sys.modules))")
    check = _modules(python, cwd, env, _LIST.format(argv=["check", "--no-cache", "tiny.py"]))
    std = sorted(m for m in check - bare if m.split(".")[0] != "torchport")
    # less what importing pathlib and typing loads (a module the rest needs comes back
    # with it: each child imports its modules' own imports)
    theirs = _modules(python, cwd, env, "import sys, pathlib, typing\nprint(sorted(sys.modules))")
    lean = [m for m in std if m not in theirs - bare]
    # ended as a plain check ends (cli/_main.exit_now): without the interpreter's teardown
    loop = "import importlib, os\nfor m in {!r}:\n    importlib.import_module(m)\nos._exit(0)"
    return {
        f"stdlib a check loads ({len(std)} modules)": ([*python, "-c", loop.format(std)], env),
        f"  less pathlib, typing ({len(lean)})": ([*python, "-c", loop.format(lean)], env),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=31)
    parser.add_argument("--torchport-path", action="append", default=[], metavar="SRC")
    parser.add_argument("--floor", action="store_true", help="add the standard-library floor")
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
        if args.floor:
            commands.update(_floor(cwd, env))
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
