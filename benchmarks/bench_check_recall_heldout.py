"""Recall of `torchport check` on held-out maintainers' port commits, site by site.

One question: of the device sites that maintainers changed when they made CUDA-only or
device-hard-coded code device-agnostic, how many does `check` report on the commit
before the port? The sites are listed by hand in
benchmarks/data/recall_sites_round5.csv (repo, port commit, its parent, path, the
site's lines in the parent, the class of the site, whether a static tool can reach
it and why), one row per site a person judged. The repositories were used by no
earlier round (see the CSV's header comment); which commits came before and after
this round's rule changes is in benchmarks/RESULTS.md. A second set,
benchmarks/data/recall_sites_round5b.csv (``--sites``; 13 commits of 7 more
repositories), was written and committed before any run on it (branch r34k).

A site is found when the command line (``torchport check --select ALL``, and the
defaults, each over the whole parent tree so the project view sees every module)
reports any finding on that line. Recall = found / reachable.

The repositories are read from bare git mirrors (``--mirror``, default /work/.mirror,
as the search tool's ``fetch`` leaves them: ``<owner>+<name>/repo``, or ``repo/.git`` where
the snapshot has a work tree). Only the ``*.py``
files of each parent commit are extracted into a temporary folder that is removed
afterwards; nothing fetched is written into this repository.

Run: ``.venv/bin/python benchmarks/bench_check_recall_heldout.py [--sites CSV]
[--mirror DIR] [--misses]``
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).parent
SITES = HERE / "data" / "recall_sites_round5.csv"


def _git(gitdir: Path, *args: str) -> bytes:
    return subprocess.run(
        ["git", f"--git-dir={gitdir}", *args], capture_output=True, check=True
    ).stdout


def extract(gitdir: Path, commit: str, into: Path) -> None:
    """Write every ``*.py`` file of ``commit`` under ``into``."""
    names = _git(gitdir, "ls-tree", "-r", "--name-only", commit).decode().splitlines()
    for name in names:
        if not name.endswith(".py"):
            continue
        target = into / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(_git(gitdir, "show", f"{commit}:{name}"))


def findings(tree: Path, select: str | None) -> dict[tuple[str, int], list[str]]:
    """(path, line) -> codes reported by the command line on ``tree``."""
    command = [sys.executable, "-m", "torchport", "check", "--format", "json", "--no-cache"]
    command += ["--exit-zero", "--no-progress", "--config", str(tree / "_none.toml")]
    if select:
        command += ["--select", select]
    (tree / "_none.toml").write_text("[tool.torchport]\n")
    # Exit 2 is expected where a file does not parse (Python 2 code); the others are still reported.
    run = subprocess.run([*command, str(tree)], capture_output=True, text=True, check=False)
    if run.returncode not in (0, 2) or not run.stdout.strip():
        raise RuntimeError(f"check failed on {tree}: {run.stderr[-2000:]}")
    found: dict[tuple[str, int], list[str]] = defaultdict(list)
    for item in json.loads(run.stdout):
        if item.get("kind") != "finding":
            continue
        path = Path(item["path"]).resolve().relative_to(tree.resolve()).as_posix()
        found[(path, int(item["line"]))].append(item["code"])
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sites", type=Path, default=SITES)
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--misses", action="store_true", help="print each missed site")
    args = parser.parse_args()
    with args.sites.open() as handle:
        rows = [row for row in csv.DictReader(line for line in handle if not line.startswith("#"))]
    by_parent: dict[tuple[str, str], list[dict[str, str]]] = defaultdict(list)
    for row in rows:
        by_parent[(row["repo"], row["parent"])].append(row)
    totals = {"ALL": [0, 0], "default": [0, 0]}
    unreachable = 0
    for (repo, parent), sites in by_parent.items():
        gitdir = args.mirror / repo.replace("/", "+") / "repo"
        if (gitdir / ".git").is_dir():  # a snapshot with a work tree: ``repo/.git``
            gitdir = gitdir / ".git"
        with tempfile.TemporaryDirectory(prefix="recall-") as tmp:
            tree = Path(tmp)
            extract(gitdir, parent, tree)
            reports = {"ALL": findings(tree, "ALL"), "default": findings(tree, None)}
        line = []
        for name, found in reports.items():
            hit = 0
            for site in sites:
                if site["reachable"] != "yes":
                    continue
                first = int(site["line"])
                last = int(site["end_line"] or first)
                codes = [
                    code
                    for line_no in range(first, last + 1)
                    for code in found.get((site["path"], line_no), [])
                ]
                hit += bool(codes)
                if args.misses and not codes:
                    print(f"  MISS ({name}) {repo} {site['path']}:{site['line']} {site['class']}")
            reach = sum(site["reachable"] == "yes" for site in sites)
            totals[name][0] += hit
            totals[name][1] += reach
            line.append(f"{name} {hit}/{reach}")
        unreachable += sum(site["reachable"] != "yes" for site in sites)
        print(f"{repo} @ {parent[:10]}: {', '.join(line)}")
    commits = len({(row["repo"], row["commit"]) for row in rows})
    print(f"{commits} commits, {len(rows)} sites, {unreachable} not reachable by a static tool")
    for name, (hit, reach) in totals.items():
        print(f"recall ({name}): {hit}/{reach} = {hit / max(reach, 1):.0%} of reachable sites")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
