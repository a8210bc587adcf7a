"""How many lines per second `torchport check` gets through on real PyTorch code.

Strategies compared, on the same corpus in the same run (median of ``--repeat`` runs):

* ``parse only``    read, decode and ``ast.parse`` every file: the floor any ast-based
  checker pays (serial);
* ``walk, no rules`` parse plus the engine's one walk with ``Context.enter/leave``
  and no rule (serial): what the traversal itself costs;
* ``scope pass``    parse plus one :class:`~torchport.check.semantic._scope.ScopeMap` per file
  (serial): what the scope and binding analysis costs when a file needs it
  (the checker builds it only for files where a fix asks);
* ``check, 1 proc`` ``check_paths(jobs=1)`` with every default rule: the default
  for fewer than ``PARALLEL_MIN_FILES`` files;
* ``check, 2 procs`` ``check_paths(jobs=2)``: the default for many files on a 2-core
  machine (``jobs=None`` picks one worker per core).

With ``--per-rule`` it also measures the CPU time each default rule adds, alone, to
a rule-free walk over already parsed trees (and all rules together), to show
which rules cost what.

Target: at least 20,000 lines/s on 2 cores (TorchFix reports 460-1,150 lines/s).
Wall time is what a user waits; on a shared machine it also measures the
neighbours, so CPU seconds (this process plus its worker processes) are shown
beside it: lines per CPU-second is what one free core would do.

Corpus: the installed torch package's own sources (``torch/nn``, ``torch/optim``,
``torch/utils/data``, ``torch/distributed``, ``torch/amp``, ``torch/cuda``) and the
sources of accelerate, lightning_utilities and tensordict when installed, copied
into a temporary folder so that nothing about site-packages changes what is
discovered.

``--corpus DIR`` checks the ``*.py`` files under DIR instead (for example public
PyTorch repositories extracted under /tmp; never commit them).

Run: ``.venv/bin/python benchmarks/bench_check_throughput.py [--repeat 3] [--per-rule]
[--corpus DIR]``
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from torchport.check import check_paths
from torchport.check._context import Context
from torchport.check._engine import RuleSet, _walk, check_tree
from torchport.check._noqa import NoqaMap, parse_noqa
from torchport.check._select import select_rules
from torchport.check.files._discovery import discover, read_source
from torchport.check.semantic._scope import ScopeMap

TORCH_PARTS = ("nn", "optim", "utils/data", "distributed", "amp", "cuda")
EXTRA_PACKAGES = ("accelerate", "lightning_utilities", "tensordict")


def _package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent


def build_corpus(dest: Path) -> list[str]:
    """Copy the corpus's ``*.py`` files under ``dest``; returns what was copied."""
    sources: list[tuple[str, Path]] = []
    torch_dir = _package_dir("torch")
    if torch_dir is None:
        raise SystemExit("torch is not installed: no corpus")
    sources += [(f"torch/{part}", torch_dir / part) for part in TORCH_PARTS]
    for name in EXTRA_PACKAGES:
        found = _package_dir(name)
        if found is not None:
            sources.append((name, found))
    copied = []
    for label, src in sources:
        if not src.is_dir():
            continue
        for file in src.rglob("*.py"):
            target = dest / label / file.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(file, target)
        copied.append(label)
    return copied


def _cpu() -> float:
    """CPU seconds of this process and its reaped children (the worker processes)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _time(fn: Callable[[], int], repeat: int) -> tuple[float, float, int]:
    """Median wall seconds and median CPU seconds of ``repeat`` calls, and the lines seen."""
    walls, cpus, lines = [], [], 0
    for _ in range(repeat):
        cpu, start = _cpu(), time.perf_counter()
        lines = fn()
        walls.append(time.perf_counter() - start)
        cpus.append(_cpu() - cpu)
    return statistics.median(walls), statistics.median(cpus), lines


def _sources(files: list[Path]) -> Iterator[tuple[str, str]]:
    for file in files:
        try:
            yield str(file), read_source(file).text
        except Exception:  # an unreadable corpus file: check_paths reports it, skip it here
            continue


def parse_only(files: list[Path]) -> int:
    lines = 0
    for path, text in _sources(files):
        try:
            ast.parse(text, filename=path)
        except SyntaxError:
            continue
        lines += text.count("\n")
    return lines


def walk_only(files: list[Path]) -> int:
    lines, empty = 0, RuleSet(())
    for path, text in _sources(files):
        try:
            tree = ast.parse(text, filename=path)
        except SyntaxError:
            continue
        _walk(tree, Context(text, path, tree), empty, NoqaMap(), strict=False)
        lines += text.count("\n")
    return lines


def scope_pass(files: list[Path]) -> int:
    lines = 0
    for path, text in _sources(files):
        try:
            tree = ast.parse(text, filename=path)
        except SyntaxError:
            continue
        ScopeMap(tree)
        lines += text.count("\n")
    return lines


def per_rule(files: list[Path], max_lines: int, repeat: int) -> tuple[dict[str, float], int]:
    """CPU seconds each default rule adds, alone, to a walk with no rules (median of ``repeat``).

    Runs on already parsed trees of the first files up to ``max_lines`` lines, so
    parsing is out of the picture; the key ``"all rules"`` holds every default rule
    together and ``"walk, no rules"`` the baseline itself.
    """
    trees: list[tuple[str, str, ast.Module]] = []
    lines = 0
    for path, text in _sources(files):
        if lines >= max_lines:
            break
        try:
            trees.append((path, text, ast.parse(text, filename=path)))
        except SyntaxError:
            continue
        lines += text.count("\n")

    def cpu_of(ruleset: RuleSet | None) -> float:
        runs = []
        for _ in range(repeat):
            start = time.process_time()
            for path, text, tree in trees:
                if ruleset is None:  # what check_tree does, minus the rules
                    noqa = parse_noqa(text)
                    _walk(tree, Context(text, path, tree), RuleSet(()), noqa, strict=False)
                else:
                    check_tree(text, path, tree, ruleset)
            runs.append(time.process_time() - start)
        return statistics.median(runs)

    base = cpu_of(None)
    rules = select_rules()
    out = {"walk, no rules": base, "all rules": cpu_of(RuleSet(rules)) - base}
    for rule in rules:
        out[rule.code] = cpu_of(RuleSet([rule])) - base
    return out, lines


def machine() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return platform.processor() or platform.machine()
    wanted = ("Model name", "CPU(s)", "Thread(s) per core")
    fields = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    return ", ".join(f"{k.strip()}: {fields[k].strip()}" for k in wanted if k in fields)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--per-rule", action="store_true")
    parser.add_argument("--corpus", type=Path, help="check this folder instead")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="torchport-corpus-") as tmp:
        corpus = Path(tmp)
        if args.corpus is not None:
            corpus = args.corpus
            labels = sorted(p.name for p in corpus.iterdir() if p.is_dir()) or [str(corpus)]
        else:
            labels = build_corpus(corpus)
        files = discover([corpus]).files
        probe = check_paths([corpus], jobs=1)
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        rules = [r.code for r in probe.rules]
        rows: list[tuple[str, float, float, int]] = []
        for name, fn in (
            ("parse only (1 proc)", lambda: parse_only(files)),
            ("walk, no rules (1 proc)", lambda: walk_only(files)),
            ("parse + scope pass (1 proc)", lambda: scope_pass(files)),
            ("check, all default rules (1 proc)", lambda: check_paths([corpus], jobs=1).lines),
            ("check, all default rules (2 procs)", lambda: check_paths([corpus], jobs=2).lines),
        ):
            rows.append((name, *_time(fn, args.repeat)))
        print(f"date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
        print(f"machine: {machine()}; os.cpu_count() = {os.cpu_count()}")
        print(f"python {platform.python_version()}; command: {' '.join(sys.argv)}")
        print(f"corpus: {', '.join(labels)}: {len(files)} files, {probe.lines} lines")
        print(f"rules: {len(rules)} default ({', '.join(rules)}); findings: {len(probe.findings)}")
        print(f"files the checker could not check: {len(probe.errors)}")
        print()
        print(f"load average before the runs: {load}")
        print()
        print(
            f"| strategy (median of {args.repeat}) | wall s | lines/s (wall) "
            "| CPU s | lines per CPU-second |"
        )
        print("| --- | ---: | ---: | ---: | ---: |")
        for name, wall, cpu, lines in rows:
            print(f"| {name} | {wall:.2f} | {lines / wall:,.0f} | {cpu:.2f} | {lines / cpu:,.0f} |")
        if args.per_rule:
            spent, lines = per_rule(files, 60_000, args.repeat)
            print()
            print(
                f"CPU cost per rule on parsed trees of {lines:,} lines (median of {args.repeat}):"
            )
            print()
            print("| rule (alone) | CPU s over the walk | microseconds per line |")
            print("| --- | ---: | ---: |")
            for code, seconds in sorted(spent.items(), key=lambda kv: -kv[1]):
                print(f"| {code} | {seconds:.3f} | {seconds / lines * 1e6:.2f} |")


if __name__ == "__main__":
    main()
