"""What the configuration decides for one file, beyond which rules run on it.

The engine takes a :class:`FileSettings` per file (``check_tree``, ``fix_text``):
the torch version fixes may write for (``target-torch``, see
:mod:`torchport.check._torch_api`) and whether other tools' file-wide
``# ruff: noqa`` / ``# flake8: noqa`` exempt the file (``respect-foreign-noqa``,
see :mod:`torchport.check._noqa`). Frozen and picklable: it travels to worker
processes in each chunk.
"""

from __future__ import annotations

from torchport.check._records import record
from torchport.check._torch_api import TorchVersion

__all__ = ["UNLIMITED", "FileSettings"]


@record(frozen=True)
class FileSettings:
    """``target_torch``: fixes write only APIs this torch has (None: any torch)."""

    target_torch: TorchVersion | None = None
    respect_foreign_noqa: bool = True


UNLIMITED = FileSettings()  # the library calls' default: every fix, foreign noqa honoured
