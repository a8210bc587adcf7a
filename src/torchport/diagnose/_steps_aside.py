"""torch's own optimizer steps run with the audit's function mode lifted.

Inside ``step()`` of a ``torch.optim`` optimizer called without a closure only torch's
host-side code runs: on a small training step a third of the torch calls, each paying
the function mode. What the mode would see there is either not predicted (moves made by
host-side code) or seen by the dispatch mode all the same (reads of step counters, left
out there too as host state, and reads of device state), so the mode steps off for the
step and comes back where it was, the modes above it kept in their order. It comes back
when the step ends, also when ``step()`` raises: the dispatch mode sees the step's
profiler range close (``DispatchWatcher.step_lifted``). A closure (``LBFGS``) or an
optimizer whose ``step`` is not torch's own code runs watched.
"""

from __future__ import annotations

import inspect
from typing import Any

from torch.optim import optimizer as _optimizer

from torchport._origin import Origin, code_origin
from torchport.diagnose._methods import QuietCount
from torchport.diagnose._mode_stacks import FUNCTION_STACK, remove

__all__ = ["StepsAside"]


class StepsAside:
    """Lifts one audit's function mode for torch's own optimizer steps in its thread."""

    def __init__(self) -> None:
        self._fmode: Any = None
        self._mode: Any = None  # the dispatch mode, told while a step runs lifted
        self._local: QuietCount | None = None
        self._above: list[Any] | None = None  # set while the function mode is lifted

    def hooks(self, local: QuietCount) -> list[Any]:
        """Register torch's global step hooks; returns their handles (removed at close)."""
        self._local = local
        return [
            _optimizer.register_optimizer_step_pre_hook(self._begins),
            _optimizer.register_optimizer_step_post_hook(self._ends),
        ]

    def watch(self, fmode: Any, mode: Any) -> None:
        """The audit's modes now recording (``None``: none; a lifted mode goes back first)."""
        self.ended()
        self._fmode, self._mode = fmode, mode

    def _begins(self, opt: Any, args: Any, kwargs: Any) -> None:
        fmode, local = self._fmode, self._local
        closure = len(args) > 1 or bool(kwargs)  # args: (optimizer, *step's arguments)
        if fmode is None or closure or self._above is not None:
            return
        if local is None or local.quiet or not _torch_own_step(type(opt)):
            return
        if not any(m is fmode for m in FUNCTION_STACK.modes()):
            return  # another thread's step (the hooks are global)
        self._above = remove(fmode, FUNCTION_STACK)
        if self._mode is not None:
            self._mode.step_lifted = True

    def _ends(self, opt: Any, args: Any, kwargs: Any) -> None:
        self.ended()

    def ended(self) -> None:
        """Put the function mode back where it was lifted from (nothing if it was not)."""
        above, self._above = self._above, None
        if self._mode is not None:
            self._mode.step_lifted = False
        if above is None or self._fmode is None:
            return
        for _ in above:
            FUNCTION_STACK.pop()
        FUNCTION_STACK.push(self._fmode)
        for other in above:
            FUNCTION_STACK.push(other)


def _torch_own_step(cls: type) -> bool:
    """Whether ``cls.step`` is torch's own code (``torch.optim``), not a subclass's."""
    known = _OWN_STEPS.get(cls)
    if known is None:
        step = getattr(cls, "step", None)
        code = getattr(inspect.unwrap(step), "__code__", None) if callable(step) else None
        known = _OWN_STEPS[cls] = code is not None and code_origin(code) is Origin.HOST_SIDE
    return known


_OWN_STEPS: dict[type, bool] = {}
