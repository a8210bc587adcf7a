"""The one exception tree of torchport.

Every error torchport raises is a :class:`TorchportError` and also a subclass of
the builtin exception that callers already catch::

    TorchportError(Exception)
    ├── DeviceError(ValueError)            a device that is malformed or absent
    ├── DeviceMismatchError(RuntimeError)  one op got tensors on different devices (strict())
    ├── UnsupportedBatchError(TypeError)   a batch holds an object torchport cannot rebuild
    ├── RedirectError(RuntimeError)        a CUDA-only call while redirected to another device
    ├── ConfigError(ValueError)            bad configuration: CLI flags, [tool.torchport], args
    └── MissingDependencyError(ImportError) the runtime's packages (torch) are not installed

Messages say what was found, what was expected and what to do about it.

This module imports nothing heavy: ``torchport.check`` uses it without torch.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "RUNTIME_INSTALL",
    "RUNTIME_PACKAGES",
    "ConfigError",
    "DeviceError",
    "DeviceMismatchError",
    "MissingDependencyError",
    "RedirectError",
    "TorchportError",
    "UnsupportedBatchError",
]


class TorchportError(Exception):
    """Base class of every error raised by torchport."""


class DeviceError(TorchportError, ValueError):
    """A device that is malformed, unknown to this build of torch, or not present.

    Attributes:
        argument: What the user called the value (``"device"``, ``"prefer"``,
            ``"--device"``, ``"TORCHPORT_DEVICE"``), or ``None`` where unknown.
        available: The devices this process can use (``torchport.DeviceInfo``),
            as listed in the message, so callers need not parse it.
    """

    def __init__(
        self, *args: object, argument: str | None = None, available: tuple[Any, ...] = ()
    ) -> None:
        super().__init__(*args)
        self.argument = argument
        self.available = available


class DeviceMismatchError(TorchportError, RuntimeError):
    """An op received tensors on different devices; the message names each one."""


class UnsupportedBatchError(TorchportError, TypeError):
    """A batch holds an object that cannot be moved or rebuilt; the message names its path."""


class RedirectError(TorchportError, RuntimeError):
    """A CUDA-only call (a stream, an event, a graph, ...) made while redirected to another device.

    Also raised when ``redirect()`` contexts are exited out of order or from
    another thread, since their patches could then not be undone exactly.
    """


class ConfigError(TorchportError, ValueError):
    """Invalid configuration: a command-line flag, a ``[tool.torchport]`` key or an argument."""


class MissingDependencyError(TorchportError, ImportError):
    """A runtime API was used where its packages are not installed.

    The checker (``torchport check``/``fix``/``port``) needs only the standard
    library; everything that touches tensors needs the ``torch`` extra
    (:data:`RUNTIME_INSTALL`). ``name`` is the missing package, as on any
    :class:`ImportError`.
    """

    @classmethod
    def of(cls, exc: ModuleNotFoundError, what: str) -> MissingDependencyError | None:
        """The error to raise for ``exc`` met while loading ``what``; None if not the runtime's.

        Args:
            exc: What importing ``what`` raised.
            what: The API or command that needs the package (``"torchport.pick_device"``).
        """
        package = (exc.name or "").partition(".")[0]
        if package not in RUNTIME_PACKAGES:
            return None
        missing = [package] + [p for p in RUNTIME_PACKAGES if p != package and _absent(p)]
        names = ", ".join(repr(p) for p in missing)
        return cls(
            f"{what} needs the Python package{'s' * (len(missing) > 1)} {names}, not installed "
            f"in this environment ({sys.executable}); torchport's checker (`torchport check`, "
            f"`fix`, `port`) runs without {'them' if len(missing) > 1 else 'it'}, its runtime "
            f"does not. Install the runtime with: {RUNTIME_INSTALL} (on a GPU machine, install "
            f"torch for your CUDA or ROCm version first, as pytorch.org says, then run that)",
            name=package,
        )


def _absent(package: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(package) is None
    except (ImportError, ValueError):
        return True


# What the ``torch`` extra installs, and how; the checker needs none of it.
RUNTIME_PACKAGES = ("torch", "optree", "rich", "numpy")
RUNTIME_INSTALL = "pip install 'torchport[torch]'"


for _cls in (
    TorchportError,
    DeviceError,
    DeviceMismatchError,
    UnsupportedBatchError,
    RedirectError,
    ConfigError,
    MissingDependencyError,
):
    _cls.__module__ = "torchport"
del _cls
