"""`torchport check`: placeholder until its issue lands."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: Any) -> None:
    parser = sub.add_parser("check", help="(not built yet)")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    raise SystemExit("torchport check is not built yet")
