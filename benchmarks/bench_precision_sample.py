"""A seeded random sample of default-on findings on held-out repositories, judged by hand.

One question: of what `torchport check` reports with its default rules on real code,
how much is a real problem? The repositories and commits are in
benchmarks/data/precision_repos_round5.json (none used by an earlier round). Every
default-on finding is collected with the command line (``torchport check`` over each
repository's ``*.py`` files at its commit, the project view included), and
``--draw N`` draws N of them uniformly at random with ``--seed`` into
benchmarks/data/precision_sample.csv, keeping the verdicts of rows already judged.
Each row is judged by a person reading the code at that line, under one standard for every
sample: benchmarks/precision_standard.md (``real``: what the message says is so and doing
what it advises makes the program run on another device, removes a per-step wait or copy,
lets a per-step copy overlap compute, or prevents a wrong result, crash or unsafe load;
``low``: correct, but changes nothing that matters for one of the named reasons written
there; ``noise``: what the message says is not so at that line). Samples A-T were judged
before that standard was written down; the rules whose verdicts moved between A-P and Q-T
were re-judged under it (benchmarks/data/precision_rejudged.csv keeps the old verdicts;
its ``basis`` says how: ``code`` read at the pinned commit, ``reason`` re-classified from the
written reason; TP101's rows were read in the seeded order of
benchmarks/data/precision_rejudge_tp101_order.txt, drawn before any was judged).

``--score`` recomputes every sampled finding with the current rules and prints the
share of ``real`` per rule and overall among the rows still reported (a row the
rules no longer report is counted apart as ``gone``; a ``real`` row gone is a recall
loss and is listed), after the findings reported now that the draw's recorded population
(``precision_sample_X_population.json``, where kept) lacks, each listed as ``NEW, NOT
JUDGED``. Held-out samples V, U and W are re-scored so with a tree's rules on
``PYTHONPATH``: ``--repos benchmarks/data/precision_repos_round5v.json --sample
benchmarks/data/precision_sample_v.csv --score`` (``u``, ``w`` likewise).

Run: ``.venv/bin/python benchmarks/bench_precision_sample.py --draw 100 --seed 34``
then ``.venv/bin/python benchmarks/bench_precision_sample.py --score``. The second
sample (drawn after the rules were narrowed on the first, from other repositories):
``--repos benchmarks/data/precision_repos_round5b.json --sample
benchmarks/data/precision_sample_b.csv --draw 40 --seed 35``. The third (both sets of
repositories, the rules as narrowed after both samples, nothing judged before):
``--repos benchmarks/data/precision_repos_round5c.json --sample
benchmarks/data/precision_sample_c.csv --skip benchmarks/data/precision_sample.csv
benchmarks/data/precision_sample_b.csv --draw 40 --seed 36``. The fourth (TP301 and
TP203 only, on 29 repositories new to it, after those two rules were narrowed):
``--repos benchmarks/data/precision_repos_round5d.json --sample
benchmarks/data/precision_sample_d.csv --codes TP301 TP203 --draw 60 --seed 37``. The fifth
(rules with fewer than 20 judged findings, each drawn apart, on 34 repositories new to
the samples): ``--repos benchmarks/data/precision_repos_round5e.json --sample
benchmarks/data/precision_sample_e.csv --seed 38 --draw 20 --codes TP106=20 TP202=20
TP401=20 ...`` (the whole list in benchmarks/RESULTS.md, "check precision, sample E").
The sixth (after the rules were narrowed on E, 11 more new repositories):
``--repos benchmarks/data/precision_repos_round5f.json --sample
benchmarks/data/precision_sample_f.csv --seed 39 --draw 20 --codes TP106=20 TP202=20
TP401=20 TP103=20 TP406=20 TP303=20 TP402=20 TP305=20``. The seventh (TP106 and TP202
only, after TP106 was narrowed to copies that repeat, 14 more new repositories):
``--repos benchmarks/data/precision_repos_round5g.json --sample
benchmarks/data/precision_sample_g.csv --seed 40 --draw 40 --codes TP106=40 TP202=40``.
The eighth (a uniform draw over every default-on rule, drawn with main's rules before
branch j34d changed any, 14 more new repositories): ``--repos
benchmarks/data/precision_repos_round5h.json --sample benchmarks/data/precision_sample_h.csv
--seed 41 --draw 100``. The ninth (the same uniform draw, with branch j34e's sample-H
fixes, 14 more new repositories): ``--repos benchmarks/data/precision_repos_round5i.json
--sample benchmarks/data/precision_sample_i.csv --seed 42 --draw 100``. The tenth (the
same uniform draw, with the 29-rule default set after seven rules judged under 90% over
A-I left it, 16 more new repositories): ``--repos
benchmarks/data/precision_repos_round5j.json --sample benchmarks/data/precision_sample_j.csv
--seed 43 --draw 100``. The eleventh (the same uniform draw, with branch j34g's test-code
classes from J, 14 more new repositories): ``--repos
benchmarks/data/precision_repos_round5k.json --sample benchmarks/data/precision_sample_k.csv
--seed 44 --draw 100``. The twelfth (the same, after K's classes, 12 more new repositories):
``--repos benchmarks/data/precision_repos_round5l.json --sample
benchmarks/data/precision_sample_l.csv --seed 45 --draw 100``. The thirteenth (the same,
after K's and L's classes of branch j34h, 12 more new repositories): ``--repos
benchmarks/data/precision_repos_round5m.json --sample benchmarks/data/precision_sample_m.csv
--seed 46 --draw 100``. The fourteenth (the same, after branch j34i's benchmark and
device-case classes, 29 default rules, 14 more new repositories): ``--repos
benchmarks/data/precision_repos_round5n.json --sample benchmarks/data/precision_sample_n.csv
--seed 47 --draw 100``. The fifteenth (the same uniform draw, with main's rules after
branch j34j's classes, 16 more new repositories): ``--repos
benchmarks/data/precision_repos_round5o.json --sample benchmarks/data/precision_sample_o.csv
--seed 48 --draw 100``. The sixteenth (the same uniform draw, with main's rules after TP401
and TP406 left the defaults, 18 more new repositories): ``--repos
benchmarks/data/precision_repos_round5p.json --sample benchmarks/data/precision_sample_p.csv
--seed 49 --draw 100``. The seventeenth (the same uniform draw, 160 findings, main's rules at
e7ca971, 17 more new repositories; the CSV is sorted as ``--draw`` writes it, and
``precision_sample_q_order.txt`` lists its rows in the order the seeded draw returned them, the
order they were judged in): ``--repos benchmarks/data/precision_repos_round5q.json --sample
benchmarks/data/precision_sample_q.csv --seed 50 --draw 160``. The eighteenth (the same uniform
draw, 200 findings, main's rules at 895704b, 19 more new repositories;
``precision_sample_r_order.txt`` is its drawn order, written beside the draw as for Q): ``--repos
benchmarks/data/precision_repos_round5r.json --sample benchmarks/data/precision_sample_r.csv
--seed 51 --draw 200``. The nineteenth (the same uniform draw, 240 findings, main's rules at
2e72354, 18 more new repositories; ``precision_sample_s_order.txt`` is its drawn order): ``--repos
benchmarks/data/precision_repos_round5s.json --sample benchmarks/data/precision_sample_s.csv
--seed 52 --draw 240``. The twentieth (the same uniform draw, 240 findings, main's rules at
3d72a8a, 19 more new repositories; ``precision_sample_t_order.txt`` is its drawn order): ``--repos
benchmarks/data/precision_repos_round5t.json --sample benchmarks/data/precision_sample_t.csv
--seed 53 --draw 240``. The twenty-first (the same uniform draw, 240 findings, main's rules at
7242a9b, held out from the default-scope work, 18 more new repositories;
``precision_sample_u_order.txt`` is its drawn order): ``--repos
benchmarks/data/precision_repos_round5u.json --sample benchmarks/data/precision_sample_u.csv
--seed 50 --draw 240``. The twenty-second (the same uniform draw, 200 findings, main's rules at
6729da7, held out, 20 more new repositories; ``precision_sample_v_order.txt`` is its drawn order):
``--repos benchmarks/data/precision_repos_round5v.json --sample
benchmarks/data/precision_sample_v.csv --seed 51 --draw 200``; beside it two strata of the
off-by-default TP122 and TP205, every finding of ``check --select TP122,TP205`` (the checker
command with that option added; benchmarks/RESULTS.md, "held-out sample V"): seed 52 on the same
repositories (``precision_sample_v_off.csv``), seed 53 on 12 more
(``precision_repos_round5vo.json``, ``precision_sample_vo.csv``). The twenty-third (the same
uniform draw, 100 findings, main's rules at 63a8ab9, held out, 20 more new repositories;
``precision_sample_w_order.txt`` is its drawn order): ``--repos
benchmarks/data/precision_repos_round5w.json --sample benchmarks/data/precision_sample_w.csv
--seed 55 --draw 100``. The twenty-fourth (the same uniform draw, 100 findings, main's rules at
7baa01b, held out, 30 more new repositories; ``--record`` wrote its drawn order
``precision_sample_x_order.txt`` and the population drawn from
``precision_sample_x_population.json`` beside it, and reproduces W's two files from W's
manifest with main 63a8ab9's rules): ``--repos benchmarks/data/precision_repos_round5x.json
--sample benchmarks/data/precision_sample_x.csv --seed 56 --draw 100 --record``; re-score it
with another ``src`` by ``PYTHONPATH=SRC python benchmarks/bench_precision_sample.py --score
--repos benchmarks/data/precision_repos_round5x.json --sample
benchmarks/data/precision_sample_x.csv`` (after fetching the repositories into ``--mirror``):
per rule real / low / noise / gone with the Wilson 95% lower bound, every real row gone, and
every finding reported now that the recorded population lacks (``NEW, NOT JUDGED``).
Held-out sample AA (main's rules at 41f0cbaf, 27 more new repositories) capped each
repository's share by a rule written before the draw (Z's draw was 36 of 100 from one):
``--per-repo 10`` walks one seeded permutation of all findings and takes each unless its
repository already has 10 (raised until the draw fills); each repository's rows are a uniform
sample of its findings, and the order file lists the permutation's first findings left out:
``--repos benchmarks/data/precision_repos_round5aa.json --sample
benchmarks/data/precision_sample_aa.csv --seed 60 --draw 100 --per-repo 10 --record``.
Held-out sample AB (main's rules at 35c07cf3, 26 more new repositories) was drawn as AA was:
``--repos benchmarks/data/precision_repos_round5ab.json --sample
benchmarks/data/precision_sample_ab.csv --seed 61 --draw 100 --per-repo 10 --record``.
A rule off by default is sampled from what ``check --select CODE`` reports (``--select``):
TP504's sample (branch t34an, 23 more new repositories, every finding judged by one reader
under precision_standard.md): ``--repos benchmarks/data/precision_repos_tp504.json --sample
benchmarks/data/precision_sample_tp504.csv --select TP504 --seed 62 --draw 80 --per-repo 8
--record``.
``--pool SAMPLE...`` pools
judged samples per rule (``--now``: only the rows the current rules still report).
``--scope SAMPLE...`` writes benchmarks/data/precision_scope.csv: each judged row's context
(test code, benchmark code or the rest, as the checker tells them), whether its rule,
selected by code, still reports it, and whether its code needs CUDA anyway (``cuda``: where a
default run leaves the rules naming CUDA out: the file, or a block holding the line, imports a
CUDA-only package or extension); ``tests/check/test_default_scope.py`` reads it
with the samples to hold the default scope of every rule (check/_default_scope.py) to the
90% bar: ``--scope benchmarks/data/precision_sample.csv
benchmarks/data/precision_sample_{b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q,r,s,t,u,v,v2,w,x,y}.csv``
(samples A-Y; V's two uniform draws, V and V2, not its off-rule strata V_off and VO).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import random
import subprocess
import sys
import tarfile
import tempfile
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import ast

    from torchport.check._context import Context

HERE = Path(__file__).parent
REPOS = HERE / "data" / "precision_repos_round5.json"
SAMPLE = HERE / "data" / "precision_sample.csv"
FIELDS = ("repo", "commit", "path", "line", "code", "verdict", "reason")
Key = tuple[str, str, int, str]
_CHECK = (sys.executable, "-m", "torchport", "check", "--format", "json", "--no-cache")
_CHECK += ("--exit-zero", "--no-progress")


_LICENCES = ("LICENSE", "LICENCE", "COPYING")


def _git(gitdir: Path, *args: str) -> bytes:
    return subprocess.run(
        ["git", f"--git-dir={gitdir}", *args], capture_output=True, check=True
    ).stdout


def _extract(gitdir: Path, commit: str, into: Path) -> None:
    """The commit's Python files, and its licence files (no rule reads them; a folder with a
    packaging file and a licence of its own is a vendored copy: check/files/_vendored.py)."""
    for name in _git(gitdir, "ls-tree", "-r", "--name-only", commit).decode().splitlines():
        if name.endswith(".py") or name.rpartition("/")[2].upper().startswith(_LICENCES):
            target = into / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(_git(gitdir, "show", f"{commit}:{name}"))


def default_findings(
    mirror: Path, repos: Path = REPOS, missing: set[str] | None = None, select: str = ""
) -> list[Key]:
    """Every default-on finding, as (repo, path, line, code), in a stable order.

    With ``missing``, a repository whose mirror lacks the commit is added to it and
    skipped; without, that raises. With ``select`` (``TP504``), the findings of
    ``check --select SELECT`` instead of the default run's.
    """
    found: list[Key] = []
    for entry in json.loads(repos.read_text())["repos"]:
        gitdir = mirror / entry["repo"].replace("/", "+") / "repo"
        if (gitdir / ".git").is_dir():  # some mirrors hold a work tree's git folder
            gitdir = gitdir / ".git"
        with tempfile.TemporaryDirectory(prefix="precision-") as tmp:
            tree = Path(tmp)
            try:
                _extract(gitdir, entry["commit"], tree)
            except subprocess.CalledProcessError:
                if missing is None:
                    raise
                missing.add(entry["repo"])
                continue
            (tree / ".git").mkdir()  # the root of a checkout, as a clone has it (TP301 looks)
            (tree / "_none.toml").write_text("[tool.torchport]\n")
            run = subprocess.run(
                [
                    *_CHECK,
                    *(("--select", select) if select else ()),
                    "--config",
                    str(tree / "_none.toml"),
                    tmp,
                ],
                capture_output=True,
                text=True,
                check=False,
            )
            if run.returncode not in (0, 2) or not run.stdout.strip():
                raise RuntimeError(f"check failed on {entry['repo']}: {run.stderr[-2000:]}")
            for item in json.loads(run.stdout):
                if item.get("kind") == "finding":
                    path = Path(item["path"]).resolve().relative_to(tree.resolve()).as_posix()
                    found.append((entry["repo"], path, int(item["line"]), item["code"]))
    return sorted(set(found))


def _commits(repos: Path) -> dict[str, str]:
    return {e["repo"]: e["commit"] for e in json.loads(repos.read_text())["repos"]}


def _read(sample: Path) -> list[dict[str, str]]:
    if not sample.exists():
        return []
    with sample.open() as handle:
        return list(csv.DictReader(handle))


def _beside(sample: Path, suffix: str) -> Path:
    """A file recorded beside a sample: precision_sample_x.csv -> precision_sample_x{suffix}."""
    return sample.with_name(sample.stem + suffix)


def _record(
    sample: Path,
    drawn: list[Key],
    picked: list[Key],
    found: list[Key],
    seed: int,
    repos: Path,
    capping: tuple[int, list[Key]] | None = None,
) -> None:
    """Write the drawn order (the CSV's 0-based data rows in the order the seeded draw
    returned them) and the population drawn from beside the sample; with ``capping`` (the
    cap and the permutation's first findings it left out), say how the draw was capped."""
    row = {key: i for i, key in enumerate(picked)}
    head = (
        f"# the drawn order: the 0-based data rows of {sample.name} in the order\n"
        f"# random.Random({seed}).sample(findings, {len(drawn)}) returned them (the CSV is "
        "sorted, as --draw writes it);\n# rows are judged in this order, so a judged prefix "
        "is a uniform random sample.\n"
    )
    if capping is not None:
        cap, over = capping
        head = (
            f"# the drawn order: the 0-based data rows of {sample.name} in the order they come\n"
            f"# in random.Random({seed}).sample(findings, len(findings)), taken while their "
            f"repository had fewer than {cap}\n# (--per-repo; a repository's rows are a uniform "
            "sample of its findings). The permutation's first\n"
            f"# {len(drawn)} findings are a plain uniform draw; these {len(over)} of them were "
            "over the cap, not taken:\n"
        ) + "".join(f"# over the cap: {list(key)}\n" for key in over)
    order = _beside(sample, "_order.txt")
    order.write_text(head + "".join(f"{row[key]}\n" for key in drawn))
    about = f"every default-on finding (repo, path, line, code) on {repos.name}, the population "
    about += f"{sample.name} was drawn from"
    population = _beside(sample, "_population.json")
    population.write_text(json.dumps({"about": about, "default": found}, indent=0) + "\n")
    print(f"drawn order in {order}, population ({len(found)}) in {population}")


def capped(order: list[Key], n: int, cap: int) -> tuple[list[Key], int]:
    """The first ``n`` findings of ``order`` (a seeded permutation of the population) taken
    so that no repository has more than the cap, and that cap: ``cap``, raised by one until
    the population can fill ``n`` (or all of it) under it. Each repository's taken findings
    are the first of its own in ``order``: a uniform sample of its findings."""
    per_repo = Counter(key[0] for key in order)
    want = min(n, len(order))
    while sum(min(count, cap) for count in per_repo.values()) < want:
        cap += 1
    taken: list[Key] = []
    held: Counter[str] = Counter()
    for key in order:
        if len(taken) == want:
            break
        if held[key[0]] < cap:
            taken.append(key)
            held[key[0]] += 1
    return taken, cap


def draw(
    mirror: Path,
    n: int,
    seed: int,
    repos: Path,
    sample: Path,
    skip: list[Path],
    codes: list[str],
    record: bool = False,
    per_repo: int = 0,
    select: str = "",
) -> None:
    judged_before = {
        (r["repo"], r["path"], int(r["line"]), r["code"]) for p in skip for r in _read(p)
    }
    caps = {c.partition("=")[0]: int(c.partition("=")[2] or n) for c in codes}
    found = [
        k
        for k in default_findings(mirror, repos, select=select)
        if k not in judged_before and (not caps or k[3] in caps)
    ]
    judged = {(r["repo"], r["path"], int(r["line"]), r["code"]): r for r in _read(sample)}
    rng = random.Random(seed)
    if any("=" in c for c in codes):  # stratified: each rule's own draw, rules in code order
        picked = []
        for code in sorted(caps):
            of_rule = [k for k in found if k[3] == code]
            picked += rng.sample(of_rule, min(caps[code], len(of_rule)))
        picked.sort()
    elif per_repo:  # one seeded permutation walked, at most the cap from one repository
        order = rng.sample(found, len(found))
        drawn, cap = capped(order, n, per_repo)
        picked = sorted(drawn)
        if record:
            taken = set(drawn)
            over = [k for k in order[: len(drawn)] if k not in taken]
            _record(sample, drawn, picked, found, seed, repos, (cap, over))
    else:
        drawn = rng.sample(found, min(n, len(found)))
        picked = sorted(drawn)
        if record:
            _record(sample, drawn, picked, found, seed, repos)
    commits = _commits(repos)
    with sample.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, FIELDS)
        writer.writeheader()
        for repo, path, line, code in picked:
            old = judged.get((repo, path, line, code), {})
            writer.writerow(
                {"repo": repo, "commit": commits[repo], "path": path, "line": line, "code": code}
                | {"verdict": old.get("verdict", ""), "reason": old.get("reason", "")}
            )
    print(f"{len(found)} default-on findings; drew {len(picked)} (seed {seed}) into {sample}")


def score(mirror: Path, repos: Path, sample: Path) -> None:
    """The sample's verdicts per rule among the rows still reported, with the Wilson 95%
    lower bound; where the draw's population was recorded beside the sample
    (``--record``), every finding reported now that it lacks is listed, to be judged."""
    now = set(default_findings(mirror, repos))
    population = _beside(sample, "_population.json")
    if population.exists():
        before = {tuple(k) for k in json.loads(population.read_text())["default"]}
        for key in sorted(now - before):
            print(f"  NEW, NOT JUDGED (not in {population.name}): {key}")
        print(f"{len(now)} reported now, {len(before)} in the population, {len(now - before)} new")
    rows = _read(sample)
    per_rule: dict[str, Counter[str]] = {}
    total: Counter[str] = Counter()
    for row in rows:
        key = (row["repo"], row["path"], int(row["line"]), row["code"])
        verdict = row["verdict"] if key in now else "gone"
        if verdict == "gone" and row["verdict"] == "real":
            print(f"  real finding no longer reported: {key}")
        per_rule.setdefault(row["code"], Counter())[verdict] += 1
        total[verdict] += 1
    print("rule   real  low  noise  gone  real share of reported  Wilson low")
    for code in sorted(per_rule):
        c = per_rule[code]
        reported = c["real"] + c["low"] + c["noise"]
        share = f"{c['real'] / reported:.0%}" if reported else "-"
        print(
            f"{code}  {c['real']:5} {c['low']:4} {c['noise']:6} {c['gone']:5}  {share:>22}  "
            f"{_wilson_low(c['real'], reported):.3f}"
        )
    reported = total["real"] + total["low"] + total["noise"]
    print(
        f"all    {total['real']:5} {total['low']:4} {total['noise']:6} {total['gone']:5}  "
        f"{total['real']}/{reported} = {total['real'] / max(reported, 1):.0%}  "
        f"{_wilson_low(total['real'], reported):.3f}"
    )


def _wilson_low(real: int, n: int, z: float = 1.96) -> float:
    if not n:
        return 0.0
    p = real / n
    centre = p + z * z / (2 * n)
    spread = z * ((p * (1 - p) + z * z / (4 * n)) / n) ** 0.5
    return (centre - spread) / (1 + z * z / n)


def _manifest(sample: Path) -> Path:
    """The manifest of a sample: precision_sample_X.csv <- precision_repos_round5X.json; a
    later draw on the same repositories, precision_sample_X2.csv, reads X's manifest."""
    letter = sample.stem.removeprefix("precision_sample").lstrip("_").partition("_")[0]
    return sample.parent / f"precision_repos_round5{letter.rstrip('0123456789')}.json"


def pool(mirror: Path, samples: list[Path], now: bool) -> None:
    """Every judged row of the samples pooled per rule; with ``now``, only rows still reported.

    A row of a repository no longer in the mirror cannot be re-scored: it counts as
    judged, and those repositories are listed.
    """
    from torchport.check._catalog import ENTRIES

    default = {e.code: e.default for e in ENTRIES}
    per_rule: dict[str, Counter[str]] = {}
    where: dict[str, set[str]] = {}
    missing: set[str] = set()
    for sample in samples:
        reported = set(default_findings(mirror, _manifest(sample), missing)) if now else None
        for row in _read(sample):
            key = (row["repo"], row["path"], int(row["line"]), row["code"])
            kept = reported is None or key in reported or row["repo"] in missing
            verdict = row["verdict"] if kept else "gone"
            if row["verdict"]:
                per_rule.setdefault(row["code"], Counter())[verdict] += 1
                label = sample.stem.removeprefix("precision_sample").lstrip("_") or "a"
                where.setdefault(row["code"], set()).add(label)
    print("| rule | default | real / judged | share | low | noise | gone | Wilson low | samples |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for code in sorted(per_rule):
        c = per_rule[code]
        n = c["real"] + c["low"] + c["noise"]
        share = f"{c['real'] / n:.0%}" if n else "-"
        print(
            f"| {code} | {'on' if default.get(code) else 'off'} | {c['real']}/{n} | {share} | "
            f"{c['low']} | {c['noise']} | {c['gone']} | {_wilson_low(c['real'], n):.2f} | "
            f"{' '.join(sorted(where[code]))} |"
        )
    if missing:
        print(f"not re-scored (no mirror of the commit; rows counted as judged): {sorted(missing)}")


SCOPE = HERE / "data" / "precision_scope.csv"
SCOPE_FIELDS = ("sample", "repo", "path", "line", "code", "context", "reported", "cuda")


def _at(source: str, path: str, line: int) -> tuple[Context, ast.AST] | None:
    """The file's walk context as the checker's is at ``line`` (``ctx.ancestors``: the
    statements and definitions holding the line, a definition holding its decorators' lines
    too, outermost first) and the innermost node holding it; None when it does not parse."""
    import ast

    from torchport.check._context import Context

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    chain: list[ast.AST] = [tree]
    while True:
        for child in ast.iter_child_nodes(chain[-1]):
            first = getattr(child, "lineno", None)
            if first is None:
                continue
            first = min([first, *(d.lineno for d in getattr(child, "decorator_list", ()))])
            if first <= line <= (getattr(child, "end_lineno", None) or first):
                chain.append(child)
                break
        else:
            break
    ctx = Context(source, path, tree)
    ctx.ancestors = chain[:-1]
    return ctx, chain[-1]


def _context_at(source: str, path: str, line: int) -> str:
    """The checker's context (``check/_scope.context_of``) of the nodes on ``line``."""
    from torchport.check._select import context_of

    at = _at(source, path, line)
    return "unparsed" if at is None else context_of(at[0])


def _needs_cuda(source: str, path: Path, line: int) -> str:
    """``yes`` where the code at ``line`` needs CUDA anyway (``rules/_cuda_projects.
    needs_cuda_here``: its file imports a CUDA-only package or extension, or a block holding
    the line does before it; ``rules/_cuda_imports``: its file surely imports a module of its
    project that does; a default run leaves the rules that name CUDA out of it), else ``no``.
    ``path`` is the file in its extracted checkout, which the extension lookup reads."""
    from torchport.check.rules._cuda_imports import needs_cuda_with_imports

    at = _at(source, str(path), line)
    return "yes" if at is not None and needs_cuda_with_imports(*at) else "no"


def scope(mirror: Path, samples: list[Path], out: Path) -> None:
    """Each judged row's context, whether the rules, selected by code, still report it, and
    whether its code needs CUDA anyway (where a default run leaves the rules naming CUDA out).

    Each repository is extracted at its manifest's commit (the ``*.py`` files, a
    ``.git`` folder, an empty config, as :func:`default_findings` does); ``check
    --select`` of every judged rule's code runs on the files holding judged rows, the
    rest of the tree beside them (the project view reads it). Selected by code, a rule
    runs in every context, so the figures do not depend on the default scope.
    """
    judged = []  # (sample, row, the commit its manifest names)
    for sample in samples:
        commits = _commits(_manifest(sample))
        rows = [row for row in _read(sample) if row["verdict"]]
        judged += [(sample, row, commits.get(row["repo"], row["commit"])) for row in rows]
    codes = sorted({row["code"] for _sample, row, _commit in judged})
    jobs: dict[tuple[str, str], set[str]] = {}
    for _sample, row, commit in judged:
        jobs.setdefault((row["repo"], commit), set()).add(row["path"])
    reported: dict[tuple[str, str], set[tuple[str, int, str]]] = {}
    contexts: dict[tuple[str, str, str, int], str] = {}
    cuda: dict[tuple[str, str, str, int], str] = {}  # (repo, commit, path, line): CUDA anyway
    for (repo, commit), paths in sorted(jobs.items()):
        gitdir = mirror / repo.replace("/", "+") / "repo"
        if (gitdir / ".git").is_dir():
            gitdir = gitdir / ".git"
        with tempfile.TemporaryDirectory(prefix="precision-") as tmp:
            tree = Path(tmp)
            archive = _git(gitdir, "archive", commit, "--", "*.py")
            with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
                tar.extractall(tree, filter="data")
            (tree / ".git").mkdir()
            (tree / "_none.toml").write_text("[tool.torchport]\n")
            files = [str(tree / p) for p in sorted(paths) if (tree / p).exists()]
            config = ("--config", str(tree / "_none.toml"), "--select", ",".join(codes))
            run = subprocess.run(
                [*_CHECK, "--jobs", "1", *config, *files],
                capture_output=True,
                text=True,
                check=False,
            )
            if run.returncode not in (0, 2) or not run.stdout.strip():
                raise RuntimeError(f"check failed on {repo}: {run.stderr[-2000:]}")
            found = reported.setdefault((repo, commit), set())
            for item in json.loads(run.stdout):
                if item.get("kind") == "finding":
                    path = Path(item["path"]).resolve().relative_to(tree.resolve()).as_posix()
                    found.add((path, int(item["line"]), item["code"]))
            for _sample, row, of in judged:
                if (row["repo"], of) == (repo, commit) and row["path"] in paths:
                    source = (tree / row["path"]).read_bytes().decode("utf-8-sig", "replace")
                    where = _context_at(source, row["path"], int(row["line"]))
                    contexts[(repo, commit, row["path"], int(row["line"]))] = where
                    at = (repo, commit, row["path"], int(row["line"]))
                    cuda[at] = _needs_cuda(source, tree / row["path"], int(row["line"]))
    with out.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, SCOPE_FIELDS)
        writer.writeheader()
        for sample, row, commit in judged:
            line = int(row["line"])
            key = (row["path"], line, row["code"])
            writer.writerow(
                {"sample": sample.name, "repo": row["repo"], "path": row["path"], "line": line}
                | {"code": row["code"]}
                | {"context": contexts[(row["repo"], commit, row["path"], line)]}
                | {"reported": "yes" if key in reported[(row["repo"], commit)] else "no"}
                | {"cuda": cuda[(row["repo"], commit, row["path"], line)]}
            )
    print(f"{len(judged)} judged rows of {len(samples)} samples, contexts written to {out}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--draw", type=int, help="draw this many findings into the sample")
    parser.add_argument("--seed", type=int, default=34)
    parser.add_argument(
        "--codes",
        nargs="*",
        default=[],
        help="draw only these rules' findings; CODE=N draws up to N of that rule's findings "
        "(each rule apart, in code order, from one seeded generator)",
    )
    parser.add_argument(
        "--record",
        action="store_true",
        help="with a uniform --draw: write the drawn order (SAMPLE_order.txt) and the population "
        "drawn from (SAMPLE_population.json) beside the sample; --score then lists what is new",
    )
    parser.add_argument("--score", action="store_true")
    parser.add_argument(
        "--pool", type=Path, nargs="*", help="pool these judged samples per rule, as judged"
    )
    parser.add_argument(
        "--now", action="store_true", help="with --pool: count only rows the rules still report"
    )
    parser.add_argument(
        "--scope",
        type=Path,
        nargs="*",
        help="write each judged row of these samples with its context and whether the rules "
        f"still report it into {SCOPE.relative_to(HERE.parent)} (the default scope's data)",
    )
    parser.add_argument("--repos", type=Path, default=REPOS, help="the manifest of repositories")
    parser.add_argument("--sample", type=Path, default=SAMPLE, help="the judged sample (CSV)")
    parser.add_argument(
        "--skip",
        type=Path,
        nargs="*",
        default=[],
        help="samples whose findings are not drawn again",
    )
    parser.add_argument(
        "--per-repo",
        type=int,
        default=0,
        help="with a uniform --draw: walk one seeded permutation of all findings, taking at most "
        "this many from one repository (raised by one until the draw can be filled)",
    )
    parser.add_argument(
        "--select",
        default="",
        help="with --draw: draw from the findings of `check --select SELECT` (rules off by "
        "default, e.g. TP504), not the default run's",
    )
    args = parser.parse_args()
    if args.draw:
        draw(
            args.mirror,
            args.draw,
            args.seed,
            args.repos,
            args.sample,
            args.skip,
            args.codes,
            args.record,
            args.per_repo,
            args.select,
        )
    if args.pool:
        pool(args.mirror, args.pool, args.now)
    if args.scope:
        scope(args.mirror, args.scope, SCOPE)
    if args.score:
        score(args.mirror, args.repos, args.sample)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
