"""What a run will do, decided before any file is read: settings, rules, files, workers.

Each file runs with its own settings (the nearest ``[tool.torchport]`` above it,
see :class:`~torchport.check.files._config_search.ConfigResolver`, or ``--config``'s
for all): files that share settings form one :class:`Group`, with its own rules,
fix policy and target torch; chunks never mix groups.

Every mistake that would make a run check nothing, or something other than
what was asked, is a :class:`~torchport.errors.ConfigError` here (exit 2), never
a clean report: a selection that leaves no rule, ``--jobs`` below 1, ``-`` (stdin)
among other paths, an unknown code. A given folder that holds no file to check
is a per-path :class:`FileError`, so a mistyped path in CI fails the run.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path

from torchport.check._records import record, replace
from torchport.check._rule import Rule
from torchport.check._select import (
    available_codes,
    fixable_rules,
    normalise_selectors,
    scoped_codes,
    select_rules,
)
from torchport.check.files._config import Config, check_target, load_config
from torchport.check.files._config_search import ConfigResolver
from torchport.check.files._discovery import (
    SUFFIXES,
    Discovery,
    discover,
    excluded,
    normalised,
    vendored_signs_above,
)
from torchport.check.files._work import Chunk, FileError
from torchport.errors import ConfigError

__all__ = ["PARALLEL_MIN_BYTES", "PARALLEL_MIN_FILES", "Group", "Plan", "chunked", "plan"]

# Below these, starting worker processes (~0.1 s) costs more than it saves (measured
# with benchmarks/bench_check_throughput.py: ~60,000 lines, ~2 MB, per CPU-second).
PARALLEL_MIN_FILES = 32
PARALLEL_MIN_BYTES = 1_000_000
_CHUNK_MAX = 64

Paths = Sequence[str | os.PathLike[str]] | str | os.PathLike[str]


@record()
class Group:
    """Files that share settings: (path, ignored codes) each, and the chunk they run in."""

    config: Config
    template: Chunk  # every chunk of this group is this one with its files
    files: list[tuple[str, tuple[str, ...]]]


@record()
class Plan:
    """The files to run on, by settings, and everything decided about them.

    ``rules`` are those of every group together (for reports: SARIF's rule list,
    ``[*]`` marks); ``plain_fix`` likewise the codes a plain ``fix`` applies.
    """

    groups: list[Group]
    errors: list[FileError]
    rules: tuple[type[Rule], ...]
    jobs: int
    stdin: str | bytes | None = None
    plain_fix: tuple[str, ...] = ()

    @property
    def files(self) -> list[tuple[str, tuple[str, ...]]]:
        return [f for g in self.groups for f in g.files]

    def group_of(self) -> dict[str, Group]:
        """Each file's group, by path."""
        return {path: g for g in self.groups for path, _ in g.files}


def _total_size(files: Sequence[tuple[str, tuple[str, ...]]]) -> int:
    total = 0
    for path, _ in files:
        with contextlib.suppress(OSError):
            total += os.stat(path).st_size
    return total


def _explicit(select: Sequence[str] | None, extend: Sequence[str], config: Config) -> list[str]:
    """The selectors the user wrote (command line, else config), for the SPEED fix policy."""
    chosen = select if select is not None else config.select
    return [*(chosen or ()), *config.extend_select, *extend]


def _check_jobs(jobs: int | None) -> None:
    if jobs is not None and (type(jobs) is not int or jobs < 1):
        raise ConfigError(
            f"--jobs (jobs=) must be a number of worker processes, 1 or more; got {jobs!r}: "
            f"give a positive number, or leave it out for the default (check: 1; fix and port: "
            f"one per idle core when there are many files)"
        )


def _check_paths(paths: Sequence[str | os.PathLike[str]], stdin: str | bytes | None) -> None:
    if stdin is not None and len(paths) != 1:
        raise ConfigError(f"text from stdin needs exactly one path to name it, got {len(paths)}")
    if stdin is None and len(paths) > 1 and any(os.fspath(p) == "-" for p in paths):
        others = ", ".join(os.fspath(p) for p in paths if os.fspath(p) != "-")
        raise ConfigError(
            f"'-' (read the source from stdin) must be the only path, but {others} came "
            f"with it: check stdin alone (--stdin-filename names it) or the files alone"
        )


def _empty_folders(paths: Sequence[str | os.PathLike[str]], found: Discovery) -> list[FileError]:
    """A given folder from which nothing is checked: an error, never a silent pass."""
    absolute = [p.absolute() for p in found.files] + [p.absolute() for p, _ in found.errors]
    out = []
    for raw in paths:
        folder = Path(raw)
        if not folder.is_dir():
            continue
        root = folder.absolute()
        if not any(root == p or root in p.parents for p in absolute):
            out.append(
                FileError(
                    os.fspath(raw),
                    f"no Python files to check in this folder (none of {', '.join(SUFFIXES)} "
                    f"outside the folders torchport skips, .gitignore and the excludes); "
                    f"check the path",
                )
            )
    return out


def _rules_of(
    config: Config,
    select: Sequence[str] | None,
    ignore: Sequence[str] | None,
    extend_select: Sequence[str] | None,
) -> tuple[type[Rule], ...]:
    """The rules one configuration runs, with the command line's selection on top.

    Raises:
        ConfigError: an empty selection, no rule left, or an unknown code.
    """
    chosen = select if select is not None else config.select
    extended = (*config.extend_select, *(extend_select or ()))
    if chosen is not None and not any(c.strip() for c in chosen) and not extended:
        where = "--select" if select is not None else f"select in {config.origin}"
        raise ConfigError(
            f"{where} is empty, so no rule would run and every file would pass; expected "
            f"rule codes (TP101), prefixes (TP1) or ALL: list some, or remove the empty "
            f"select to run the default rules"
        )
    ignored_codes = (*config.ignore, *(ignore or ()))
    rules = select_rules(chosen, ignored_codes, extended, origin=config.origin)
    if not rules:
        raise ConfigError(
            f"no rule is left to run: the ignores ({', '.join(ignored_codes)}) switch off "
            f"every rule the selection turns on ({config.origin}), so every file would pass; "
            f"ignore fewer rules, or select the ones you want"
        )
    known = available_codes()
    for pattern, codes in config.per_file_ignores:
        normalise_selectors(codes, known, f"per-file-ignores {pattern!r} of {config.origin}")
    return rules


def resolver_for(
    config: Config | ConfigResolver | str | os.PathLike[str] | None,
    target_torch: str | None = None,
) -> ConfigResolver:
    """The per-file settings a run's ``config`` and ``target_torch`` arguments ask for.

    Raises:
        ConfigError: a named file that cannot be read or holds no valid table, or
            a ``target_torch`` that is no version.
    """
    if isinstance(config, ConfigResolver):
        return config
    target = None if target_torch is None else check_target(target_torch, "(--target-torch)")
    if config is not None and not isinstance(config, Config):
        config = load_config(config)
    return ConfigResolver(config, target_torch=target)


def plan(
    paths: Paths,
    select: Sequence[str] | None,
    ignore: Sequence[str] | None,
    extend_select: Sequence[str] | None,
    config: Config | ConfigResolver | str | os.PathLike[str] | None,
    jobs: int | None,
    template: Chunk,
    *,
    speed: bool = False,
    target_torch: str | None = None,
    report_only: Sequence[str] = (),
) -> Plan:
    """Decide a run; see the module docstring for what is refused.

    ``target_torch`` (``--target-torch``) overrides every file's ``target-torch``;
    ``report_only``: codes whose findings are reported and whose fixes never apply.

    Raises:
        ConfigError: bad configuration or arguments, or no rule to run.
    """
    if isinstance(paths, str | os.PathLike):
        paths = [paths]  # one path, not a sequence of one-letter paths
    stdin = template.stdin
    _check_paths(paths, stdin)
    _check_jobs(jobs)
    resolver = resolver_for(config, target_torch)
    if stdin is None:
        found = discover(paths, excludes=resolver.excludes_for)
        errors = _empty_folders(paths, found)
    else:  # the text is given: nothing to discover, the path only names it
        name = Path(paths[0])
        skip = excluded(name, is_dir=False, excludes=resolver.excludes_for)
        found = Discovery([] if skip else [name], [])
        errors = []
    errors += [FileError(str(p), message) for p, message in found.errors]
    known = available_codes()
    groups: dict[int, Group] = {}
    plain: set[str] = set()  # what a plain `fix` (no --speed) applies, for the hints
    for path in found.files:
        settings = resolver.for_file(path)
        group = groups.get(id(settings))
        if group is None:
            rules = _rules_of(settings, select, ignore, extend_select)
            fixable = fixable_rules(
                rules, explicit=_explicit(select, extend_select or (), settings), speed=speed
            )
            fixable = tuple(r for r in fixable if r.code not in report_only)
            chosen = select if select is not None else settings.select
            extended = (*settings.extend_select, *(extend_select or ()))
            chunk = replace(
                template,
                rules=rules,
                scoped=scoped_codes(rules, chosen, extended),
                known=known,
                roots=tuple(str(p) for p in paths),
                fixable=None if len(fixable) == len(rules) else tuple(r.code for r in fixable),
                settings=settings.file_settings,
                vendored_codes=() if stdin is not None else _unnamed(rules, chosen, extended),
            )
            group = groups[id(settings)] = Group(settings, chunk, [])
            explicit = _explicit(select, extend_select or (), settings)
            plain.update(r.code for r in fixable_rules(rules, explicit=explicit, speed=False))
        ignored = tuple(c.strip().upper() for c in settings.ignores_for(path))
        group.files.append((str(path), ("TP",) if "ALL" in ignored else ignored))
    if not groups:  # nothing to check: the selection is still judged (a typo is an error)
        settings = resolver.for_folder(normalised(Path(paths[0]) if paths else Path.cwd()))
        _rules_of(settings, select, ignore, extend_select)
    _hold_vendored(list(groups.values()))
    all_rules = {r.code: r for g in groups.values() for r in g.template.rules}
    rules = tuple(all_rules[c] for c in sorted(all_rules))
    files = [f for g in groups.values() for f in g.files]
    # The cores this process may run on (a container's limit), not the host's count.
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if jobs is None:
        many = len(files) >= PARALLEL_MIN_FILES and _total_size(files) >= PARALLEL_MIN_BYTES
        jobs = _free_cores(cpus or 1) if many else 1
    return Plan(list(groups.values()), errors, rules, jobs, stdin, tuple(sorted(plain)))


def _unnamed(
    rules: Sequence[type[Rule]], chosen: object, extended: Sequence[str]
) -> tuple[str, ...]:
    """The codes a default run holds in vendored code nothing imports (files/_vendored.py):
    with the default selection (``chosen`` None), those no ``extend-select`` selector names."""
    if chosen is not None:
        return ()
    named = [s.strip().upper() for s in extended]
    return tuple(
        r.code for r in rules if not any(s == "ALL" or (s and r.code.startswith(s)) for s in named)
    )


def _hold_vendored(groups: list[Group]) -> None:
    """Name in each group's template its files a default run holds as vendored code nothing
    in the project imports (files/_vendored.py): looked for only where a code is held."""
    memo: dict[str, str] = {}  # (a look with os.path first: most runs load nothing more)
    wanted = [
        path
        for g in groups
        if g.template.vendored_codes
        for path, _ in g.files
        if vendored_signs_above(path, memo) is not None
    ]
    if not wanted:
        return
    from torchport.check.files._vendored import vendored_held  # on first use (start-up)

    held = vendored_held(wanted)
    for group in groups:
        mine = tuple(path for path, _ in group.files if path in held)
        if mine:
            group.template = replace(group.template, vendored=mine)


def _free_cores(cpus: int) -> int:
    """The workers a run takes by default: the usable cores no other process keeps busy,
    ``cpus`` less the last minute's load average, rounded; 1 (this process) below two.

    A worker works out again the project view of its files' imports (in a port about a
    quarter of the work, each worker), so workers on cores that other processes hold cost
    more wall time than one process: timm's port, two workers on two cores, load 5:
    40 s wall against 31 s in one process (benchmarks/RESULTS.md, branch p31ai)."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # no load average here (Windows): every core
        return cpus
    return max(1, min(cpus, int(cpus - load + 0.5)))


def chunked(run: Plan, files: Sequence[tuple[str, tuple[str, ...]]] | None = None) -> list[Chunk]:
    """``files`` (default: all of ``run``'s) in chunks, about four per worker, by group."""
    wanted = None if files is None else {path for path, _ in files}
    total = len(run.files) if files is None else len(files)
    size = max(1, min(_CHUNK_MAX, -(-total // (run.jobs * 4))))
    out = []
    for group in run.groups:
        mine = group.files if wanted is None else [f for f in group.files if f[0] in wanted]
        out += [
            replace(group.template, files=tuple(mine[i : i + size]))
            for i in range(0, len(mine), size)
        ]
    return out
