"""What `check`, `fix` and `port` share on the command line: paths, selection, files, output.

Each ``add_*`` function adds one group of arguments to a subcommand's parser;
:func:`settings` turns the parsed file arguments into the configuration a run
uses, and :func:`read_stdin` reads ``-`` as bytes and decodes them as a file
would be (a coding cookie or BOM, else UTF-8), so stdin and files agree.
"""

from __future__ import annotations

import sys

from torchport.errors import ConfigError

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    import argparse

    from torchport.check import Config


def _codes(text: str) -> list[str]:
    return [code.strip() for code in text.split(",") if code.strip()]


def _patterns(text: str) -> list[str]:
    return [pattern.strip() for pattern in text.split(",") if pattern.strip()]


def _jobs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        import argparse  # only argparse calls this: it is loaded

        raise argparse.ArgumentTypeError(
            f"expected a number of worker processes, 1 or more, got {text!r} "
            f"(leave --jobs out for the default: check 1, fix and port one per idle core for "
            f"many files)"
        )
    return value


def add_paths(
    parser: argparse.ArgumentParser,
    jobs: str = "one per idle core when there are many files",
) -> None:
    """PATH..., stdin naming, config and jobs: what every file command takes.

    ``jobs``: what ``--jobs`` defaults to, for its help (check: one process).
    """
    parser.add_argument(
        "paths", nargs="*", metavar="PATH", help="files or folders (default: .); - reads stdin"
    )
    parser.add_argument(
        "--config", metavar="FILE",
        help="a TOML file with a [tool.torchport] table for every file (default: each file's "
        "nearest pyproject.toml with one)",
    )  # fmt: skip
    parser.add_argument(
        "--stdin-filename", metavar="PATH", help="the name of the text read with -, for config"
    )
    parser.add_argument(
        "--jobs", "-j", type=_jobs, metavar="N",
        help=f"worker processes (default: {jobs})",
    )  # fmt: skip
    parser.add_argument(
        "--exclude", type=_patterns, action="extend", metavar="PATTERNS",
        help="comma-separated gitignore-style patterns to skip, replacing the config's exclude",
    )  # fmt: skip
    parser.add_argument(
        "--extend-exclude", type=_patterns, action="extend", default=[], metavar="PATTERNS",
        help="patterns to skip in addition to the config's excludes",
    )  # fmt: skip
    parser.add_argument(
        "--target-torch", metavar="X.Y",
        help="the oldest torch the code must run on: fixes write no API it lacks "
        "(default: target-torch of the config, else the project's torch>= requirement, "
        "else torchport's floor)",
    )  # fmt: skip


def add_selection(parser: argparse.ArgumentParser) -> None:
    """--select / --ignore / --extend-select."""
    parser.add_argument(
        "--select", type=_codes, action="extend", metavar="CODES",
        help="comma-separated codes or prefixes to run instead of the defaults (TP1,TP201; ALL)",
    )  # fmt: skip
    parser.add_argument(
        "--ignore", type=_codes, action="extend", default=[], metavar="CODES",
        help="comma-separated codes or prefixes to skip",
    )  # fmt: skip
    parser.add_argument(
        "--extend-select", type=_codes, action="extend", default=[], metavar="CODES",
        help="codes or prefixes to run in addition to the selection (e.g. the noisy TP9xx)",
    )  # fmt: skip


def add_output(parser: argparse.ArgumentParser) -> None:
    """--quiet, --output-file, --no-progress."""
    from pathlib import Path  # argparse's lines only: the plain check line needs no pathlib

    parser.add_argument(
        "-q", "--quiet", action="store_true",
        help="print the findings and nothing else: no summary, no progress",
    )  # fmt: skip
    parser.add_argument(
        "--output-file", "-o", type=Path, metavar="FILE",
        help="write the report to FILE instead of stdout (errors still go to stderr)",
    )  # fmt: skip
    parser.add_argument(
        "--no-progress", action="store_true", help="no progress line, even on a terminal"
    )


def settings(args: argparse.Namespace, paths: list[str]) -> Config:
    """The configuration this run asks for, with ``--exclude``s: ``--config``'s table for
    every file, else each file's nearest one (``paths`` are resolved per file)."""
    from torchport.check import Config, load_config

    config = load_config(args.config) if args.config else Config.per_file()
    return config.with_excludes(args.exclude, args.extend_exclude)


def read_stdin(name: str) -> tuple[str, str]:
    """``(text, encoding)`` of the source on stdin, decoded as a file named ``name`` would be.

    Raises:
        ConfigError: the bytes are not valid in their encoding (or the cookie is bad).
    """
    from torchport.check import SourceError, decode_source

    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:  # a text stream with no bytes under it (an embedding program's)
        return sys.stdin.read(), "utf-8"
    data = stream.read()
    try:
        return decode_source(data)
    except SourceError as exc:
        raise ConfigError(f"{name} (stdin): {exc}") from None


def run_paths(args: argparse.Namespace) -> tuple[list[str], str | None, str]:
    """``(paths, stdin text or None, stdin encoding)``: ``-`` alone reads stdin."""
    if args.paths == ["-"]:
        name = args.stdin_filename or "-"
        text, encoding = read_stdin(name)
        return [name], text, encoding
    return list(args.paths) or ["."], None, "utf-8"
