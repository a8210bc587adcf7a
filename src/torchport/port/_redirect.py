"""``torchport.redirect``: run code written for CUDA on another device, undone exactly on exit.

Two mechanisms, both scoped to the ``with`` block:

* a :class:`~torch.overrides.TorchFunctionMode` that sees every torch function
  and Tensor method, and rewrites device arguments naming CUDA (``device="cuda"``,
  ``torch.device("cuda", 1)``, ``.to("cuda:0")``, ``.cuda()``,
  ``.type(torch.cuda.FloatTensor)``) to the target. ``torch.device`` is a C type
  and cannot be replaced, so CUDA device objects are translated where they are
  used, not where they are made;
* attribute patches for what the mode cannot see (``torch.cuda.*``,
  ``Module.cuda``, ``torch.load``, amp, ``init_process_group``, DDP), each
  recorded with the value it replaced (or its absence) and put back in reverse.

The mode stack is per thread: tensors created by threads the code starts are not
rewritten. The attribute patches are process-wide, so one thread at a time may
hold a redirect.
"""

from __future__ import annotations

import threading
from types import TracebackType
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from torchport.port._cuda_shim import _LEGACY_DTYPES, Patch, cuda_patches
from torchport.port._error import RedirectError
from torchport.port._torch_shim import is_cuda, torch_patches

__all__ = ["redirect"]

_MISSING = object()
_LOCK = threading.Lock()
_ACTIVE: list[_Redirect] = []  # innermost last

_TENSOR_CUDA = torch.Tensor.cuda
_TENSOR_TO = torch.Tensor.to
_TENSOR_TYPE = torch.Tensor.type
_TENSOR_PIN = torch.Tensor.pin_memory


def _names_device(value: object) -> bool:
    # A bare int in a device position is a CUDA ordinal (torch.zeros(2, device=0)).
    return is_cuda(value) or (type(value) is int)


def _legacy_dtype(value: object) -> torch.dtype | None:
    """The dtype a CUDA legacy type names: ``torch.cuda.FloatTensor`` or its string."""
    if isinstance(value, str) and value.startswith("torch.cuda."):
        return _LEGACY_DTYPES.get(value.removeprefix("torch.cuda."))
    if hasattr(value, "__torchport_original__"):
        dtype = getattr(value, "dtype", None)
        return dtype if isinstance(dtype, torch.dtype) else None
    return None


class _DeviceRewrite(TorchFunctionMode):
    """Rewrites device arguments that name CUDA to the redirect target."""

    def __init__(self, target: torch.device) -> None:
        super().__init__()
        self.target = target
        # Pinned memory needs an accelerator; on the CPU the copy it would speed up is gone.
        self.unpin = target.type == "cpu"

    def __torch_function__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        if func is _TENSOR_CUDA:
            return self._cuda(*args, **kwargs)
        if func is _TENSOR_PIN and self.unpin:
            return args[0]
        if func is _TENSOR_TYPE and len(args) > 1:
            dtype = _legacy_dtype(args[1])
            if dtype is not None:
                return args[0].to(self.target, dtype)
        if func is _TENSOR_TO and len(args) > 1 and _names_device(args[1]):
            args = (args[0], self.target, *args[2:])
        elif any(isinstance(arg, torch.device) and arg.type == "cuda" for arg in args):
            args = tuple(self.target if is_cuda(arg) else arg for arg in args)
        if _names_device(kwargs.get("device")) or (self.unpin and kwargs.get("pin_memory")):
            kwargs = dict(kwargs)
            if _names_device(kwargs.get("device")):
                kwargs["device"] = self.target
            if self.unpin and kwargs.get("pin_memory"):
                kwargs["pin_memory"] = False
        return func(*args, **kwargs)

    def _cuda(
        self,
        tensor: torch.Tensor,
        device: Any = None,
        non_blocking: bool = False,
        memory_format: torch.memory_format = torch.preserve_format,
    ) -> torch.Tensor:
        return tensor.to(self.target, non_blocking=non_blocking, memory_format=memory_format)


class _Redirect:
    """One ``with redirect(device):`` block; see :func:`redirect`."""

    def __init__(self, target: torch.device) -> None:
        self.target = target
        self._saved: list[tuple[Any, str, Any]] = []
        self._mode: _DeviceRewrite | None = None
        self._thread: int | None = None

    def __repr__(self) -> str:
        return f"torchport.redirect({str(self.target)!r})"

    def __enter__(self) -> torch.device:
        with _LOCK:
            if self._thread is not None:
                raise RedirectError(
                    f"{self!r} is already active; call torchport.redirect() again "
                    "for a nested block instead of re-entering the same object"
                )
            thread = threading.get_ident()
            if _ACTIVE and _ACTIVE[-1]._thread != thread:
                raise RedirectError(
                    "torchport.redirect() is active in another thread; its patches are "
                    "process-wide, so redirect from one thread at a time"
                )
            if self.target.type != "cuda":
                self._install([*cuda_patches(self.target), *torch_patches(self.target)])
                self._mode = _DeviceRewrite(self.target)
                torch._C._push_on_torch_function_stack(self._mode)
            self._thread = thread
            _ACTIVE.append(self)
        return self.target

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        with _LOCK:
            if not _ACTIVE or _ACTIVE[-1] is not self:
                raise RedirectError(
                    f"{self!r} exited while an inner redirect() is still active; "
                    "exit redirect() blocks in the reverse order of entering them"
                )
            _ACTIVE.pop()
            self._thread = None
            try:
                if self._mode is not None:
                    _remove_mode(self._mode)
            finally:
                self._mode = None
                self._restore()

    def _install(self, patches: list[Patch]) -> None:
        try:
            for owner, name, value in patches:
                self._saved.append((owner, name, vars(owner).get(name, _MISSING)))
                setattr(owner, name, value)
        except BaseException:
            self._restore()
            raise

    def _restore(self) -> None:
        while self._saved:
            owner, name, value = self._saved.pop()
            if value is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, value)


def _remove_mode(mode: TorchFunctionMode) -> None:
    """Take ``mode`` off this thread's stack, keeping modes the code pushed above it."""
    above: list[Any] = []
    while torch._C._len_torch_function_stack() > 0:
        top = torch._C._pop_torch_function_stack()
        if top is mode:
            break
        above.append(top)
    for other in reversed(above):
        torch._C._push_on_torch_function_stack(other)


def redirect(device: str | torch.device) -> _Redirect:
    """Run CUDA-only code on ``device`` inside a ``with`` block.

    Inside the block the code sees one CUDA device, and it is ``device``:
    ``.cuda()``, ``device="cuda"``, ``torch.device("cuda")`` in factories and
    ``.to()``, ``torch.load`` of GPU checkpoints, ``torch.cuda.is_available()``
    (True), ``device_count()`` (1), ``synchronize()``, ``empty_cache()``,
    ``memory_*``, ``torch.cuda.FloatTensor(...)``, ``torch.cuda.amp`` and
    ``"cuda"`` autocast / GradScaler, ``init_process_group("nccl")`` (gloo) and
    DDP ``device_ids`` all land on ``device``. CUDA API with no meaning there
    (streams, events, graphs, ...) raises :class:`~torchport.port.RedirectError`.
    Calls that torch and torchport make internally keep seeing the real machine.
    Everything is undone on exit, also when the block raises.

    When ``device`` is a CUDA device nothing is patched.

    Nesting: an inner ``redirect()`` wins until it exits, then the outer one
    applies again; blocks must exit in reverse order of entry. One object cannot
    be entered twice at once, and only one thread at a time may redirect.

    Synchronizes the host with ``device`` only where the redirected code asked
    for it (``torch.cuda.synchronize()``, copies back to the host).

    Args:
        device: The device to run on, e.g. ``"cpu"``, ``"mps"``, ``torch.device("xpu", 0)``.

    Returns:
        A context manager whose ``__enter__`` returns ``device`` as a ``torch.device``.

    Raises:
        torchport.DeviceError: ``device`` is not a valid device string.

    Example:
        >>> import torch, torchport as tp
        >>> with tp.redirect("cpu"):
        ...     torch.ones(2).cuda().device
        device(type='cpu')
    """
    from torchport.errors import DeviceError

    try:
        target = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise DeviceError(
            f"redirect() got {device!r}, which is not a device; "
            f"pass a device such as 'cpu', 'mps' or 'cuda:0' ({exc})"
        ) from None
    return _Redirect(target)


redirect.__module__ = "torchport"
