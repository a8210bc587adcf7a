"""The error raised when a redirected script calls CUDA API that has no meaning on its device."""

from __future__ import annotations

from torchport.errors import TorchportError

__all__ = ["RedirectError"]


class RedirectError(TorchportError, RuntimeError):
    """A CUDA-only call (a stream, an event, a graph, ...) made while redirected to another device.

    Also raised when ``redirect()`` contexts are exited out of order or from
    another thread, since their patches could then not be undone exactly.
    """


RedirectError.__module__ = "torchport.port"
