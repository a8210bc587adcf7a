"""`check --show-settings` and `check --show-files`: what a run would use and cover."""

from __future__ import annotations

import argparse
import json
import sys

from torchport.cli._options import run_paths, settings
from torchport.errors import ConfigError


def show(args: argparse.Namespace) -> int:
    """Print the resolved settings of one file, or the files a check covers; exit 0 (2: errors).

    Raises:
        ConfigError: ``--show-settings`` without exactly one path, or bad configuration.
    """
    from torchport.check import quoted, run_files, settings_of

    paths, _, _ = run_paths(args)
    config = settings(args, paths)
    if args.show_files:
        files, errors = run_files(paths, config=config, target_torch=args.target_torch)
        if args.format == "json":
            sys.stdout.write(json.dumps(files, indent=2) + "\n")
        else:
            sys.stdout.write("".join(quoted(f) + "\n" for f in files))
        for error in errors:
            print(error, file=sys.stderr)
        return 2 if errors else 0
    if len(paths) != 1:
        raise ConfigError(
            f"--show-settings describes one file, got {len(paths)} paths; name one file"
        )
    facts = settings_of(
        paths[0],
        select=args.select,
        ignore=args.ignore,
        extend_select=args.extend_select,
        config=config,
        target_torch=args.target_torch,
        cache=args.cache_dir,
    )
    if args.format == "json":
        sys.stdout.write(json.dumps(facts, indent=2) + "\n")
        return 0
    width = max(len(key) for key in facts)
    for key, value in facts.items():
        shown = ", ".join(value) if isinstance(value, list) else value
        if isinstance(value, bool):
            shown = "true" if value else "false"
        if value is None:
            shown = "(default)" if key == "select" else "(none)"
        text = quoted(str(shown))
        sys.stdout.write(f"{key.ljust(width)}  {text if text else '(none)'}\n")
    return 0
