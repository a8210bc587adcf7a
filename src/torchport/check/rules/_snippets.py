"""Source lines that the fixes write, spelled out once for the rules' examples.

The text itself comes from :func:`torchport.check.semantic._placement.device_line`, the
one place that writes a ``device`` definition (fixes and ``port`` alike).
"""

from __future__ import annotations

import ast

from torchport.check.semantic._placement import device_expr, device_line

__all__ = ["DEVICE_LINE", "DROPS_INDEX", "device_expr", "device_line", "short_call"]

DEVICE_LINE = device_line()
# What a fix that drops a GPU index (`.cuda(1)` -> `.to(device)`) changes.
DROPS_INDEX = (
    "drops the GPU index: work placed on several GPUs (a model split, one process per GPU) "
    "all lands on the current accelerator"
)


def short_call(call: ast.AST, width: int = 60) -> str:
    """``call``'s source for a message, its end kept when long (``....cpu()``): the
    end of a chain is where the program made its choice."""
    text = ast.unparse(call)
    return text if len(text) <= width else "..." + text[3 - width :]
