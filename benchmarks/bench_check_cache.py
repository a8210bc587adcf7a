"""How much faster a second `torchport check` of an unchanged tree is, with the cache.

Strategies compared, in the same run, on the same 2,000-file tree (median of
``--repeat`` runs, each starting from an empty cache):

* ``torchport, first``  ``torchport check --no-progress TREE`` with no cache yet: every
  file is read, parsed and checked, and the results are written to the cache;
* ``torchport, second`` the same command again: no file changed, so each file's
  ``(size, mtime)`` matches and its findings are replayed from the cache;
* ``torchport, no cache`` ``--no-cache``: what a run costs without the cache at all;
* ``ruff, first`` / ``ruff, second``: the same two runs of ``ruff check`` (its own
  cache, its default rules) on the same tree, where ruff is installed, for scale.

Target: the second run takes at most 0.2x the first (the current default: the cache
is on for the CLI; ``--no-cache`` or ``check_paths(cache=False)`` turn it off).

Tree: the ``*.py`` files of the installed torch package (``torch/nn``, ``torch/optim``,
``torch/utils``, ``torch/distributed``, ``torch/_dynamo``, ...) copied into a temporary
folder until there are 2,000 files, dated an hour back (a file modified in the
last two seconds is never cached; see ``torchport.check.files._cache``).

Run: ``.venv/bin/python benchmarks/bench_check_cache.py [--repeat 3] [--files 2000]``
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent


def build_tree(folder: Path, count: int) -> int:
    """Copy torch's own sources into ``folder`` until ``count`` files; their lines."""
    import torch

    root = Path(torch.__file__).parent
    sources = sorted(p for p in root.rglob("*.py") if "test" not in p.parts)
    lines = 0
    old = time.time() - 3600
    for i, source in enumerate(sources[:count]):
        target = folder / f"pkg{i % 40}" / f"m{i}_{source.name}"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        os.utime(target, (old, old))
        lines += source.read_bytes().count(b"\n")
    return lines


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--files", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "tree"
        tree.mkdir()
        lines = build_tree(tree, args.files)
        files = sum(1 for _ in tree.rglob("*.py"))
        print(f"tree: {files} files, {lines:,} lines (torch's own sources)")
        torchport = [str(BIN / "torchport"), "check", "--no-progress", "."]
        ruff = shutil.which("ruff", path=str(BIN)) or shutil.which("ruff")
        runs: dict[str, list[float]] = {}
        for _ in range(args.repeat):
            cache = Path(tmp) / "cache"
            shutil.rmtree(cache, ignore_errors=True)
            env = {**os.environ, "TORCHPORT_CACHE_DIR": str(cache)}
            runs.setdefault("torchport, first", []).append(timed(torchport, tree, env))
            runs.setdefault("torchport, second", []).append(timed(torchport, tree, env))
            runs.setdefault("torchport, no cache", []).append(
                timed([*torchport, "--no-cache"], tree, env)
            )
            if ruff:
                shutil.rmtree(tree / ".ruff_cache", ignore_errors=True)
                argv = [ruff, "check", "--exit-zero", "--quiet", "."]
                runs.setdefault("ruff, first", []).append(timed(argv, tree, env))
                runs.setdefault("ruff, second", []).append(timed(argv, tree, env))
    medians = {name: statistics.median(times) for name, times in runs.items()}
    print(f"{'run':<22} {'median s':>9}  all")
    for name, times in runs.items():
        print(f"{name:<22} {medians[name]:>9.2f}  {', '.join(f'{t:.2f}' for t in times)}")
    ratio = medians["torchport, second"] / medians["torchport, first"]
    print(f"torchport second/first: {ratio:.3f} (target <= 0.2)")
    if "ruff, first" in medians:
        print(f"ruff second/first:      {medians['ruff, second'] / medians['ruff, first']:.3f}")


if __name__ == "__main__":
    main()
