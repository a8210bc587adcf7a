"""The dispatch mode of an audit: sees every aten op and hands the known ones to the recorder.

The per-op hot path: one call of the op, one dict lookup in the op table, and while the
program holds tensors on the host, or on the device (:mod:`._host_held`), one look at
each argument.

Torch wraps every ``TorchDispatchMode``'s ``__torch_dispatch__`` in
``torch._dynamo.disable`` so that a compiled region never traces into the mode: two
Python wrappers and four eval-frame switches per op, a tenth of an empty mode's cost on
a small transformer step. This mode keeps Dynamo out per code object instead
(:func:`_keep_dynamo_out`: its frame and every frame it calls are skipped), which costs
nothing per op; on a torch without that switch it takes torch's wrapper.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from types import FrameType
from typing import Any, Protocol

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from torchport.diagnose import _ops
from torchport.diagnose._at_caller import TRAMPOLINES, forward_at
from torchport.diagnose._host_held import HostHeld, follow_device
from torchport.diagnose._legacy_makers import FRESH_OPS as _FRESH_OPS
from torchport.diagnose._methods import QuietCount
from torchport.diagnose._ops import OpEntry
from torchport.diagnose._predicted_placement import spread

__all__ = ["AtenObserver", "DispatchWatcher"]


class AtenObserver(Protocol):
    """What the dispatch mode reports to: the audit's recorder."""

    local: QuietCount
    held: HostHeld
    device_only: HostHeld

    def observe_aten(
        self, func: Any, entry: OpEntry, args: Sequence[Any], kwargs: Mapping[str, Any], out: Any
    ) -> None: ...

    def observe_fresh(self, func: Any, out: Any) -> None: ...

    def step_ended(self) -> None: ...


_ATEN_TABLE = _ops.ATEN_TABLE
_BY_ID = _ATEN_TABLE  # its dict face: id(overload) -> (overload, entry)


class DispatchWatcher(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """Sees every aten op of the block; counts the ones the op table knows."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False  # not torch's per-call wrapper: see _keep_dynamo_out

    def __init__(self, recorder: AtenObserver) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        if not _DYNAMO_KEPT_OUT:
            _keep_dynamo_out()
        self._recorder = recorder
        self._local = recorder.local
        self._held = recorder.held
        self._device_only = recorder.device_only
        # the objects standing for a host and a device tensor (the same dict throughout)
        faces = recorder.held.faces
        self._faces = faces.faces if faces is not None else {}
        self.step_lifted = False  # the function mode is off for an optimizer's step

    def __torch_dispatch__(
        self,
        func: Any,
        types: Any,
        args: Sequence[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
    ) -> Any:
        # per-op hot path: one call, one dict hit
        try:
            caller: FrameType | None = sys._getframe(1)
        except ValueError:  # no Python frame above: the autograd engine's own thread
            caller = None
        if (
            caller is not None
            and caller.f_code in TRAMPOLINES
            and getattr(func, "_pyobj_dispatcher", None) is None
        ):
            # reached from a call the function mode forwards at the program's line: call
            # the op's binding from a trampoline there too, not through OpOverload.__call__
            # (torch 2.15 issues a C++ warning at the innermost binding's frame, which
            # would be torch/_ops.py's)
            kwargs = kwargs or {}
            out = forward_at(caller)(func._op, args, kwargs)
        elif kwargs:
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
        held = self._held
        faces = self._faces
        if held.held or faces:
            try:
                held.follow(args, out)
            except Exception:  # the audit must never break the program it watches
                held.held.clear()
        device_only = self._device_only
        if device_only.held or faces:
            try:
                follow_device(device_only, args, out)
            except Exception:  # the audit must never break the program it watches
                device_only.held.clear()
        if self.step_lifted and func is _STEP_RANGE_ENDS:
            self._recorder.step_ended()  # the step ended, raising or not
        found = _BY_ID.get(id(func))
        entry = found[1] if found is not None else _ATEN_TABLE.entry(func)
        if entry is not None:
            if not local.quiet:
                self._recorder.observe_aten(func, entry, args, kwargs, out)
        elif id(func) in _FRESH_OPS and not local.quiet:
            self._recorder.observe_fresh(func, out)  # torch.LongTensor(n): no mode saw the call
        return out


# Optimizer.step runs inside a profiler range; its end is seen here even when step() raises
_STEP_RANGE_ENDS = torch.ops.profiler._record_function_exit._RecordFunction
_DYNAMO_KEPT_OUT: list[bool] = []  # done once, at the first audit (torch._dynamo loads then)


def _keep_dynamo_out() -> None:
    """Have Dynamo skip the mode's frame and all it calls, as torch's wrapper would."""
    raw = DispatchWatcher.__dict__["__torch_dispatch__"]
    try:
        from torch._dynamo.eval_frame import (  # type: ignore[attr-defined]
            set_code_exec_strategy,
        )
        from torch._dynamo.types import (  # type: ignore[attr-defined]
            FrameAction,
            FrameExecStrategy,
        )

        skip = FrameExecStrategy(FrameAction.SKIP, FrameAction.SKIP)
        set_code_exec_strategy(raw.__code__, skip)
    except (ImportError, AttributeError, TypeError):  # an older torch: its own wrapper
        import torch

        wrapped = torch._disable_dynamo(raw, recursive=True)  # type: ignore[attr-defined]
        DispatchWatcher.__torch_dispatch__ = wrapped  # type: ignore[method-assign]
    _DYNAMO_KEPT_OUT.append(True)
