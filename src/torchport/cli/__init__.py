"""The command-line interface: one small module per subcommand, dispatched by ``main``."""

from __future__ import annotations

from torchport.cli._main import main

__all__ = ["main"]
