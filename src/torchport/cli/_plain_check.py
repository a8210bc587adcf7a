"""``torchport check [FLAG...] [PATH...]`` read without argparse: the commonest command line.

An editor or a pre-commit hook runs ``torchport check FILE`` once per file, so its
start-up is most of what it costs, and building argparse's parser (with its help
formatter, translations and terminal-size lookups) was a tenth of it. This reader
takes only command lines whose reading is plain, and gives the same namespace
argparse gives for them:

* the first word is ``check``;
* then any of check's on/off flags (:data:`FLAGS`), each spelled in full, and
  ``-j N`` / ``--jobs N`` with N written in ASCII digits, 1 or more (the benchmarks'
  and many scripts' line: argparse and its translations are ~6 ms of start-up);
* then any paths, none empty or starting with ``-``, and no flag after them.

Everything else (another option that takes a value, ``-j2``, ``--jobs=2``, an
abbreviation, ``-`` for stdin, ``--``, ``-h``, a flag after a path, another
subcommand) returns None and goes to argparse, as does every error.
tests/cli/test_plain_check.py holds the two equal on generated command lines,
defaults included, so a new option of ``check`` fails there until it is listed here.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

__all__ = ["FLAGS", "JOBS", "plain_check"]

# check's store_true flags: option string -> namespace name
FLAGS = {
    "--quiet": "quiet", "-q": "quiet", "--no-progress": "no_progress",
    "--statistics": "statistics", "--show-fixes": "show_fixes", "--exit-zero": "exit_zero",
    "--add-noqa": "add_noqa", "--unused-noqa": "unused_noqa", "--no-cache": "no_cache",
    "--diff": "diff", "--show-settings": "show_settings", "--show-files": "show_files",
}  # fmt: skip
JOBS = ("-j", "--jobs")  # an option with a value read here too: a number of processes
# what argparse leaves in the namespace for an option not given (lists are made anew)
_NONE = (
    "config", "stdin_filename", "jobs", "exclude", "target_torch", "select", "output_file",
    "cache_dir", "explain",
)  # fmt: skip
_EMPTY_LISTS = ("extend_exclude", "ignore", "extend_select")


def plain_check(argv: Sequence[str]) -> SimpleNamespace | None:
    """The namespace argparse would give for ``argv``, or None where it is not plain.

    Like argparse's, the namespace's ``handler`` is ``torchport.cli.check``'s and its
    ``subcommand`` is ``"check"``.
    """
    if not argv or argv[0] != "check":
        return None
    words = list(argv[1:])
    flags: list[str] = []
    jobs: int | None = None
    at = 0
    while at < len(words):
        if words[at] in FLAGS:
            flags.append(words[at])
            at += 1
        elif words[at] in JOBS and at + 1 < len(words):
            value = words[at + 1]  # digits only, 1 or more: the rest is argparse's to judge
            if not (value.isascii() and value.isdigit()) or int(value) < 1:
                return None
            jobs, at = int(value), at + 2
        else:
            break
    paths = words[at:]
    if any(not p or p.startswith("-") for p in paths):
        return None
    from torchport.cli.check import _run

    values: dict[str, object] = {"subcommand": "check", "paths": paths}
    values.update(dict.fromkeys(_NONE))
    values.update((name, []) for name in _EMPTY_LISTS)
    values.update(dict.fromkeys(FLAGS.values(), False))
    values.update((FLAGS[flag], True) for flag in flags)
    values["jobs"] = jobs
    values["format"] = "text"
    values["handler"] = _run
    return SimpleNamespace(**values)
