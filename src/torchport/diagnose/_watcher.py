"""The dispatch mode of an audit: sees every aten op and hands the known ones to the recorder.

The per-op hot path: one call of the op, one dict lookup in the op table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from torch.utils._python_dispatch import TorchDispatchMode

from torchport.diagnose import _ops
from torchport.diagnose._predicted_placement import spread

if TYPE_CHECKING:
    from torchport.diagnose._recorder import Recorder

__all__ = ["DispatchWatcher"]

_ATEN_TABLE = _ops.ATEN_TABLE
_BY_ID = _ATEN_TABLE  # its dict face: id(overload) -> (overload, entry)


class DispatchWatcher(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """Sees every aten op of the block; counts the ones the op table knows."""

    def __init__(self, recorder: Recorder) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self._recorder = recorder
        self._local = recorder.local

    def __torch_dispatch__(
        self,
        func: Any,
        types: Any,
        args: Sequence[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
    ) -> Any:
        # per-op hot path: one call, one dict hit
        if kwargs:
            out = func(*args, **kwargs)
        else:
            out = func(*args)
            kwargs = {}
        local = self._local
        if local.spread > 0:
            try:
                spread(local, args, out)
            except Exception:  # the audit must never break the program it watches
                local.spread = 0
        found = _BY_ID.get(id(func))
        entry = found[1] if found is not None else _ATEN_TABLE.entry(func)
        if entry is not None and not local.quiet:
            self._recorder.observe_aten(func, entry, args, kwargs, out)
        return out
