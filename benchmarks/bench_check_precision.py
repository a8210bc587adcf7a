"""How often `torchport check` is right on real repositories, what it misses, and how fast it is.

Three questions, one corpus (benchmarks/precision_corpus.json: public repositories
with CUDA code, each pinned to a commit):

* **precision per rule**: every default-on rule's findings on the corpus are sampled
  with a fixed seed (``--per-rule`` findings each, all of them when there are fewer),
  and each sampled finding is judged by hand in benchmarks/precision_judgments.json
  (repo, path, line, code, verdict ``tp``/``fp``, reason; never the code itself).
  A finding is a true positive when what its message says is so at that line and
  acting on it makes the program more portable or faster without breaking it.
  ``--pending`` prints the sampled findings not judged yet, with their context,
  so a person can judge them;
* **recall against human ports**: for each commit in the manifest's ``ports`` (a
  person made CUDA-only code device-agnostic), the sites are the lines the commit
  removed that name a device (``cuda``, ``mps``, ``xpu``, ``device_ids``,
  ``.to(0)``; comments excluded); a site is found when `check` on the parent
  commit's file reports anything on that line;
* **wall time**: the in-process time to check each repository (read, parse, every
  default rule), and the command line's wall time (``torchport check DIR``,
  interpreter start included) on the same files.

The repositories are read from bare git mirrors (``--mirror``, default
/work/.mirror, as the search tool's ``fetch`` leaves them:
``<owner>+<name>/repo``). Only their ``*.py`` files at the pinned commit are
extracted, into a temporary folder that is removed afterwards; nothing fetched is
written into this repository.

Run: ``.venv/bin/python benchmarks/bench_check_precision.py [--per-rule 20]
[--seed 12] [--pending] [--mirror DIR]``
"""

from __future__ import annotations

import argparse
import ast
import json
import platform
import random
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from torchport.check._engine import check_text, ruleset_for
from torchport.check._rule import Finding

HERE = Path(__file__).parent
MANIFEST = HERE / "precision_corpus.json"
JUDGMENTS = HERE / "precision_judgments.json"
# A removed line names a device: the site a human port changed.
SITE = re.compile(r"cuda|\bmps\b|\bxpu\b|device_ids|\.to\(\d")


@dataclass(frozen=True, slots=True)
class Hit:
    """One finding in one repository (path relative to the repository root)."""

    repo: str
    path: str
    line: int
    code: str
    message: str

    @property
    def key(self) -> tuple[str, str, int, str]:
        return (self.repo, self.path, self.line, self.code)


def _git(gitdir: Path, *args: str, data: bytes | None = None) -> bytes:
    return subprocess.run(
        ["git", f"--git-dir={gitdir}", *args], input=data, capture_output=True, check=True
    ).stdout


def _gitdir(mirror: Path, repo: str) -> Path:
    path = mirror / repo.replace("/", "+") / "repo"
    if not path.is_dir():
        sys.exit(
            f"no mirror of {repo} at {path}: fetch it first (search tool: fetch github:{repo})"
        )
    return path


def python_files(gitdir: Path, commit: str, exclude: tuple[str, ...] = ()) -> dict[str, str]:
    """Every ``*.py`` file of ``commit`` (minus ``exclude`` prefixes), by path."""
    names = _git(gitdir, "ls-tree", "-r", "--name-only", commit).decode().splitlines()
    paths = [p for p in names if p.endswith(".py") and not p.startswith(exclude)]
    batch = _git(
        gitdir, "cat-file", "--batch", data="".join(f"{commit}:{p}\n" for p in paths).encode()
    )
    files: dict[str, str] = {}
    at = 0
    for path in paths:
        header_end = batch.index(b"\n", at)
        header = batch[at:header_end].split()
        if header[-1] == b"missing":
            at = header_end + 1
            continue
        size = int(header[2])
        files[path] = batch[header_end + 1 : header_end + 1 + size].decode("utf-8", "replace")
        at = header_end + 1 + size + 1
    return files


def check_files(repo: str, files: dict[str, str]) -> tuple[list[Hit], float, float, int, list[str]]:
    """Findings of the default rules, wall and CPU seconds, lines checked, and problems.

    Problems are rule failures (a torchport bug) and files that do not parse.
    """
    ruleset = ruleset_for(None, None)
    hits: list[Hit] = []
    problems: list[str] = []
    lines = 0
    start, cpu = time.perf_counter(), time.process_time()
    for path, text in files.items():
        lines += text.count("\n")
        try:
            outcome = check_text(text, path, ruleset)
        except SyntaxError:
            problems.append(f"{repo}/{path}: does not parse")
            continue
        problems += [str(f) for f in outcome.failures]
        hits += [Hit(repo, path, f.line, f.code, f.message) for f in outcome.findings]
    return hits, time.perf_counter() - start, time.process_time() - cpu, lines, problems


def cli_seconds(files: dict[str, str]) -> float:
    """Wall time of ``python -m torchport check DIR`` on these files (with interpreter start)."""
    with tempfile.TemporaryDirectory() as tmp:
        for path, text in files.items():
            target = Path(tmp, path)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "torchport", "check", tmp, "--format", "json"],
            capture_output=True,
            check=False,
        )
        return time.perf_counter() - start


def sample(hits: list[Hit], per_rule: int, seed: int) -> dict[str, list[Hit]]:
    """Up to ``per_rule`` findings of each rule, drawn with one seed per rule (stable)."""
    by_code: dict[str, list[Hit]] = defaultdict(list)
    for hit in sorted(hits, key=lambda h: h.key):
        by_code[hit.code].append(hit)
    return {
        code: sorted(random.Random(f"{seed}:{code}").sample(found, min(per_rule, len(found))),
                     key=lambda h: h.key)
        for code, found in sorted(by_code.items())
    }  # fmt: skip


def load_judgments() -> dict[tuple[str, str, int, str], dict[str, str]]:
    if not JUDGMENTS.exists():
        return {}
    rows = json.loads(JUDGMENTS.read_text())["judgments"]
    return {(r["repo"], r["path"], int(r["line"]), r["code"]): r for r in rows}


def _string_lines(source: str) -> set[int]:
    """Lines inside a string statement: docstrings, and code commented out in quotes."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    return {
        line
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
        for line in range(node.lineno, (node.end_lineno or node.lineno) + 1)
    }


@dataclass(frozen=True, slots=True)
class PortRecall:
    """One port commit's recall: every removed device line, and the code lines it changed."""

    label: str
    sites: int
    found: int
    code_sites: int  # not moved unchanged elsewhere in the commit, not inside a string
    code_found: int
    missed: list[str]


def recall(mirror: Path, ports: list[dict[str, str]]) -> list[PortRecall]:
    """Per port commit: the device lines it removed, and how many a finding covers.

    A site is a removed line naming a device (comments left out). Its *code*
    sites leave out lines the commit moved (the same text is added back
    elsewhere in it: a function moved to another file is no port) and lines
    inside a string statement (a docstring, code kept in quotes), which no
    checker of code should report.
    """
    out: list[PortRecall] = []
    ruleset = ruleset_for(None, None)
    for port in ports:
        gitdir = _gitdir(mirror, port["repo"])
        parent = _git(gitdir, "rev-parse", f"{port['commit']}^1").decode().strip()
        diff = _git(gitdir, "diff", "-U0", parent, port["commit"], "--", "*.py").decode(
            "utf-8", "replace"
        )
        sites: list[tuple[str, int, str]] = []
        added: set[str] = set()
        path, line = "", 0
        for row in diff.splitlines():
            if row.startswith(("--- ", "+++ ")):
                if row.startswith("--- "):
                    path = row[6:] if row.startswith("--- a/") else ""
            elif row.startswith("@@"):
                line = int(re.match(r"@@ -(\d+)", row).group(1))  # type: ignore[union-attr]
            elif row.startswith("+"):
                added.add(row[1:].strip())
            elif row.startswith("-") and path:
                text = row[1:].strip()
                if SITE.search(text) and not text.startswith("#"):
                    sites.append((path, line, text))
                line += 1
        found = code_sites = code_found = 0
        missed: list[str] = []
        findings: dict[str, list[Finding]] = {}
        strings: dict[str, set[int]] = {}
        for path, line, text in sites:
            if path not in findings:
                source = _git(gitdir, "show", f"{parent}:{path}").decode("utf-8", "replace")
                findings[path] = check_text(source, path, ruleset).findings
                strings[path] = _string_lines(source)
            hit = any(f.line <= line <= f.end_line for f in findings[path])
            code = text not in added and line not in strings[path]
            found += hit
            code_sites += code
            code_found += hit and code
            if not hit:
                kind = "" if code else " (moved or in a string)"
                missed.append(f"{path}:{line}: {text[:90]}{kind}")
        label = f"{port['repo']}@{port['commit'][:10]} ({port['note']})"
        out.append(PortRecall(label, len(sites), found, code_sites, code_found, missed))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--per-rule", type=int, default=20)
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--pending", action="store_true", help="print unjudged sampled findings")
    parser.add_argument("--no-cli", action="store_true", help="skip the command-line timing")
    parser.add_argument("--manifest", type=Path, default=MANIFEST, help="repositories and ports")
    args = parser.parse_args()
    manifest = json.loads(args.manifest.read_text())

    hits: list[Hit] = []
    print(f"# check precision corpus ({time.strftime('%Y-%m-%d')}, {platform.node()}, "
          f"python {platform.python_version()})\n")  # fmt: skip
    print("| repository | commit | files | lines | findings | check wall s | check CPU s | CLI s |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    problems: list[str] = []
    totals = Counter[str]()
    sources: dict[tuple[str, str], str] = {}
    for entry in manifest["repos"]:
        gitdir = _gitdir(args.mirror, entry["repo"])
        files = python_files(gitdir, entry["commit"], tuple(entry.get("exclude", ())))
        found, seconds, cpu_s, lines, trouble = check_files(entry["repo"], files)
        problems += trouble
        cli = float("nan") if args.no_cli else cli_seconds(files)
        hits += found
        if args.pending:
            sources.update({(entry["repo"], path): text for path, text in files.items()})
        totals.update(files=len(files), lines=lines, findings=len(found))
        totals["ms"] += round(seconds * 1000)
        totals["cpu_ms"] += round(cpu_s * 1000)
        totals["cli_ms"] += 0 if args.no_cli else round(cli * 1000)
        print(f"| {entry['repo']} | {entry['commit'][:10]} | {len(files)} | {lines} | "
              f"{len(found)} | {seconds:.2f} | {cpu_s:.2f} | {cli:.2f} |")  # fmt: skip
    print(f"| **all** | | {totals['files']} | {totals['lines']} | {totals['findings']} | "
          f"{totals['ms'] / 1000:.2f} | {totals['cpu_ms'] / 1000:.2f} | "
          f"{totals['cli_ms'] / 1000:.2f} |\n")  # fmt: skip
    for problem in problems:
        print(f"- problem: {problem}")

    judged = load_judgments()
    drawn = sample(hits, args.per_rule, args.seed)
    counts = Counter(h.code for h in hits)
    print(f"\nSampled precision (seed {args.seed}, up to {args.per_rule} findings per rule):\n")
    print("| rule | findings | sampled | judged | true | false | precision |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    pending: list[Hit] = []
    all_tp = all_judged = 0
    for code, chosen in drawn.items():
        verdicts = [judged[h.key]["verdict"] for h in chosen if h.key in judged]
        pending += [h for h in chosen if h.key not in judged]
        tp, n = verdicts.count("tp"), len(verdicts)
        all_tp, all_judged = all_tp + tp, all_judged + n
        share = f"{100 * tp / n:.0f}%" if n else "-"
        print(f"| {code} | {counts[code]} | {len(chosen)} | {n} | {tp} | {n - tp} | {share} |")
    if all_judged:
        print(f"| **all** | {len(hits)} | | {all_judged} | {all_tp} | {all_judged - all_tp} | "
              f"{100 * all_tp / all_judged:.0f}% |")  # fmt: skip

    print("\nRecall against human ports (a site: a line the port removed that names a device;")
    print("code sites leave out lines moved unchanged and lines inside strings):\n")
    print("| port | sites found | code sites found |")
    print("| --- | ---: | ---: |")
    totals = Counter[str]()
    missed_all: list[str] = []
    for port in recall(args.mirror, manifest["ports"]):
        totals.update(sites=port.sites, found=port.found, code=port.code_sites, hit=port.code_found)
        print(f"| {port.label} | {port.found}/{port.sites} | {port.code_found}/{port.code_sites} |")
        missed_all += port.missed
    if totals["sites"]:
        share = 100 * totals["found"] / totals["sites"]
        code_share = 100 * totals["hit"] / max(totals["code"], 1)
        print(f"| **all** | {totals['found']}/{totals['sites']} ({share:.0f}%) | "
              f"{totals['hit']}/{totals['code']} ({code_share:.0f}%) |")  # fmt: skip
    for row in missed_all:
        print(f"- missed: {row}")

    if args.pending:
        print(f"\n{len(pending)} sampled findings not judged yet:\n")
        for hit in pending:
            print(f"=== {hit.repo} {hit.path}:{hit.line} {hit.code} {hit.message}")
            text = sources[(hit.repo, hit.path)].splitlines()
            for number in range(max(1, hit.line - 3), min(len(text), hit.line + 2) + 1):
                mark = ">>" if number == hit.line else "  "
                print(f"{mark}{number:5} {text[number - 1][:140]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
