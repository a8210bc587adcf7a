"""Names a package exports but imports on first use (PEP 562).

``torchport``, ``torchport.check``, ``torchport.check.files``, ``torchport.run`` and
``torchport.testing`` each export names whose modules are heavy (torch, the port,
the worker pool) or that a caller may not need. Each lists ``name -> module`` and
takes its ``__getattr__`` and ``__dir__`` from :func:`lazy_exports`, so "import on
first use" means the same in all of them: the value is looked up once and then
kept in the package (later reads never reach ``__getattr__``), a runtime package
that is not installed is a :class:`~torchport.errors.MissingDependencyError`
saying how to install it, and ``dir()`` lists the public names only.

This module imports only the standard library: ``torchport.check`` uses it
without torch.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping

from torchport.errors import MissingDependencyError

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from typing import Any


def lazy_exports(
    namespace: MutableMapping[str, Any], where: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of the package whose globals are ``namespace``.

    Args:
        namespace: The package's ``globals()``; it must already hold ``__name__`` and
            ``__all__``. A value imported on first use is stored here.
        where: Each lazily imported name and the module that defines it, or
            ``"module:attribute"`` where the package exports it under another name.

    Raises:
        ValueError: ``where`` names something ``__all__`` does not export (a
            name nobody is told about would be importable by accident).
    """
    package: str = namespace["__name__"]
    exported = set(namespace["__all__"])
    unlisted = sorted(set(where) - exported)
    if unlisted:
        raise ValueError(f"{package} imports {unlisted} lazily but does not export them")

    def __getattr__(name: str) -> Any:
        source = where.get(name)
        if source is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = source.partition(":")
        try:
            value = getattr(importlib.import_module(module), attribute or name)
        except ModuleNotFoundError as exc:
            missing = MissingDependencyError.of(exc, f"{package}.{name}")
            if missing is None:
                raise
            raise missing from None  # the message says it all; the chain would bury it
        namespace[name] = value  # later lookups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted(exported)

    return __getattr__, __dir__
