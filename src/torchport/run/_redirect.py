"""``torchport.redirect``: run code written for CUDA on another device, undone exactly on exit.

Two mechanisms, both scoped to the ``with`` block:

* a :class:`~torch.overrides.TorchFunctionMode` that sees every torch function
  and Tensor method, and rewrites device arguments naming CUDA (``device="cuda"``,
  ``torch.device("cuda", 1)``, ``.to("cuda:0")``, ``.cuda()``,
  ``.type(torch.cuda.FloatTensor)``) to the target. ``torch.device`` is a C type
  and cannot be replaced, so CUDA device objects are translated where they are
  used, not where they are made;
* attribute patches for what the mode cannot see (``torch.cuda.*``,
  ``Module.cuda`` / ``Module.to``, ``torch.Generator``, ``set_default_device``,
  ``torch.load``, amp, ``init_process_group``, DDP), each recorded with the
  value it replaced (or its absence) and put back in reverse.

torchport's own API follows the redirect too: while it is in force,
``tp.to_device(x, "cuda")``, ``tp.DeviceLoader(loader, "cuda")`` and
``tp.pick_device()`` answer with the target, where ``.cuda()`` goes
(``torchport.place`` is told with ``push_redirect``/``pop_redirect``).

The mode stack is per thread, so threads started inside the block push the same
mode when they start (``Thread._bootstrap_inner`` is patched), and they keep it
until they end: a thread that outlives the block keeps its rewritten device
arguments but no longer sees the attribute patches. Processes started inside
the block get the same redirect (see :mod:`torchport.run._children`). The
attribute patches are process-wide, so one thread at a time may hold a redirect.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from torchport import hardware
from torchport.errors import RedirectError
from torchport.place import pop_redirect, push_redirect
from torchport.run._children import child_patches
from torchport.run._cuda_answers import tensor_patches
from torchport.run._cuda_shim import _LEGACY_DTYPES, Patch, cuda_patches
from torchport.run._torch_shim import is_cuda, names_device, torch_patches

__all__ = ["redirect"]

_MISSING = object()
_LOCK = threading.Lock()
_ACTIVE: list[_Redirect] = []  # innermost last

_TENSOR_CUDA = torch.Tensor.cuda
_TENSOR_TO = torch.Tensor.to
_TENSOR_TYPE = torch.Tensor.type
_TENSOR_PIN = torch.Tensor.pin_memory


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
        # Pinned memory speeds up copies to the real accelerator, and needs one: for
        # any other target (the CPU, meta, or a device this machine lacks) the copy it
        # would speed up is not there, and pinning would fail without an accelerator.
        self.unpin = target.type != hardware.accelerator_type()

    def __torch_function__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        # torch hands a mode the method as it is found on torch.Tensor at call time; where
        # another library wrapped it (functools.wraps), the wrapper is matched by what it wraps
        method = getattr(func, "__wrapped__", func)
        if method is _TENSOR_CUDA:
            return self._cuda(*args, **kwargs)
        if method is _TENSOR_PIN and self.unpin:
            return args[0]

        if method is _TENSOR_TYPE and len(args) > 1:
            dtype = _legacy_dtype(args[1])
            if dtype is not None:
                return args[0].to(self.target, dtype)
        if method is _TENSOR_TO and len(args) > 1 and names_device(args[1]):
            args = (args[0], self.target, *args[2:])
            return _as_cuda_copies(func(*args, **kwargs), args[0], self.target)
        elif any(isinstance(arg, torch.device) and arg.type == "cuda" for arg in args):
            args = tuple(self.target if is_cuda(arg) else arg for arg in args)
        if names_device(kwargs.get("device")) or (self.unpin and kwargs.get("pin_memory")):
            kwargs = dict(kwargs)
            if names_device(kwargs.get("device")):
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
        moved = tensor.to(self.target, non_blocking=non_blocking, memory_format=memory_format)
        copied: torch.Tensor = _as_cuda_copies(moved, tensor, self.target)
        return copied


def _as_cuda_copies(moved: Any, tensor: Any, target: torch.device) -> Any:
    """``moved`` (``tensor.to(target)``), copied with dense strides where CUDA's copy has them.

    The ``.to`` itself is left as the program wrote it, so what watches it (the audit's
    prediction) sees the move; the copy after it is no crossing.
    """
    if moved is tensor and _needs_a_dense_copy(tensor, target):
        return tensor.clone(memory_format=torch.preserve_format)  # infer_dense_strides too
    return moved


def _needs_a_dense_copy(tensor: Any, target: torch.device) -> bool:
    """Whether ``tensor`` is a slice with gaps (``x[:, :2]``) already on ``target``, the host.

    A copy to another device is made by ``_to_copy`` (TensorConversions.cpp): with the
    default ``preserve_format`` it keeps the strides of a non-overlapping and dense tensor
    (a transpose stays one) and gives any other strided tensor dense strides in the same
    order (``infer_dense_strides``), so ``x[:, :2].cuda().view(-1)`` works on CUDA. Where the
    redirect's target is the host a ``.to`` of a host tensor would return the slice itself,
    whose ``.view`` raises: such a tensor is copied, as CUDA copies it.
    """
    if not isinstance(tensor, torch.Tensor) or tensor.layout != torch.strided:
        return False
    if tensor.device != target:
        return False
    required = 1  # ATen's compute_non_overlapping_and_dense
    for stride, size in sorted(
        (stride, size)
        for stride, size in zip(tensor.stride(), tensor.shape, strict=True)
        if size != 1
    ):
        if stride != required:
            return True
        required *= size
    return False


class _InChild:
    """Pickles as the call that enters the redirect in the child that unpickles it."""

    def __init__(self, device: str, count: int) -> None:
        self.device = device
        self.count = count

    def __reduce__(self) -> tuple[Callable[..., None], tuple[str, int]]:
        return enter_in_child, (self.device, self.count)


def enter_in_child(device: str, count: int) -> None:
    """Enter ``redirect(device, device_count=count)`` for the rest of this process.

    Called while a spawned child unpickles its preparation data, before it
    imports the parent's main module. The block is never exited: the process
    ends inside it, as the parent's run does.
    """
    from torchport.run._lines import whole_lines

    redirect(device, device_count=count).__enter__()
    # Siblings share the parent's stdout: one write per line, or a child started with
    # `python -u` (as spawn passes the parent's flags on) splits each print in two.
    lines = whole_lines()
    lines.__enter__()
    _ENTERED.append(lines)  # kept alive: a dropped generator would exit it at once


_ENTERED: list[contextlib.AbstractContextManager[None]] = []


class _Redirect:
    """One ``with redirect(device):`` block; see :func:`redirect`."""

    def __init__(self, target: torch.device, count: int) -> None:
        self.target = target
        self.count = count
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
                self._mode = _DeviceRewrite(self.target)
                self._install(
                    [
                        *cuda_patches(self.target, self.count),
                        *tensor_patches(self.target),
                        *torch_patches(self.target),
                        *child_patches(str(self.target), _InChild(str(self.target), self.count)),
                        _thread_patch(self._mode),
                    ]
                )
                torch._C._push_on_torch_function_stack(self._mode)
                push_redirect(self.target, functools.partial(_on_this_thread, self._mode))
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
                    pop_redirect(self.target)
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


def _thread_patch(mode: TorchFunctionMode) -> Patch:
    """Threads started while the patch is in place run with ``mode`` on their own stack."""
    original: Any = threading.Thread._bootstrap_inner  # type: ignore[attr-defined]

    def _bootstrap_inner(self: threading.Thread) -> None:
        # Runs in the new thread before its target: torch keeps one mode stack per thread.
        torch._C._push_on_torch_function_stack(mode)
        try:
            original(self)
        finally:
            _remove_mode(mode)

    return (threading.Thread, "_bootstrap_inner", _bootstrap_inner)


def _on_this_thread(mode: TorchFunctionMode) -> bool:
    """Whether ``mode`` is on this thread's stack: the redirect applies to this thread."""
    stack = range(torch._C._len_torch_function_stack())
    return any(torch._C._get_function_stack_at(i) is mode for i in stack)


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


def redirect(device: str | torch.device, *, device_count: int = 1) -> _Redirect:
    """Run CUDA-only code on ``device`` inside a ``with`` block.

    Inside the block the code sees ``device_count`` CUDA devices, and each of
    them is ``device``: ``.cuda()``, ``device="cuda"``, ``.to(0)`` / ``.to(rank)``
    (tensors and modules), ``torch.device("cuda", i)`` in factories and
    ``.to()``, ``torch.Generator(device="cuda")``,
    ``torch.set_default_device("cuda")``, ``torch.load`` of GPU checkpoints,
    ``torch.cuda.is_available()`` (True), ``device_count()``, ``set_device(i)``
    and ``current_device()`` (a per-thread index below ``device_count``),
    ``synchronize()``, ``empty_cache()``, ``memory_*``, ``get_rng_state()``,
    ``torch.cuda.FloatTensor(...)``, ``torch.cuda.amp`` and ``"cuda"``
    autocast / GradScaler, ``init_process_group("nccl")`` (gloo) and DDP
    ``device_ids`` all land on ``device``, and so do torchport's own
    ``to_device(x, "cuda")``, ``DeviceLoader(loader, "cuda")`` and
    ``pick_device()``. ``x.pin_memory()`` returns ``x`` unless ``device`` is this
    machine's accelerator. ``get_device_properties()`` / ``get_device_capability()``
    answer from ``device`` (the host's RAM for the CPU; capability ``(0, 0)``), and
    streams, events, ``torch.cuda.stream()`` and NVTX ranges are no-ops where
    ``device`` runs in order (cpu, meta). CUDA API with no meaning there (graphs,
    allocator control, ...) raises :class:`~torchport.RedirectError` naming the call.
    A DDP model built inside the block keeps its process group until its reducer
    is gone, so tearing it down never waits on a gloo worker under the GIL.
    Calls that torch and torchport make internally keep seeing the real machine.
    Threads started inside the block, processes started with
    ``multiprocessing`` or ``torch.multiprocessing`` (fork, spawn or forkserver),
    and this interpreter started with ``subprocess`` on a script or on the
    project's own ``-m`` module (``[sys.executable, "helper.py", ...]``, run
    under ``torchport run``) are redirected too; installed modules (``-m
    pip``), ``-c`` commands, shell strings and ``os.system`` are not.
    Everything is undone on exit, also when the block raises.

    When ``device`` is a CUDA device nothing is patched.

    Nesting: an inner ``redirect()`` wins until it exits, then the outer one
    applies again; blocks must exit in reverse order of entry. One object cannot
    be entered twice at once, and only one thread at a time may redirect.

    Synchronizes the host with ``device`` only where the redirected code asked
    for it (``torch.cuda.synchronize()``, copies back to the host).

    Args:
        device: The device to run on, e.g. ``"cpu"``, ``"mps"``, ``torch.device("xpu", 0)``.
        device_count: How many CUDA devices the code sees (all of them
            ``device``): 1 for a single process; under torchrun, the number of
            workers on this node, so ``set_device(local_rank)`` and
            ``device_count() >= world_size`` checks work.

    Returns:
        A context manager whose ``__enter__`` returns ``device`` as a ``torch.device``.

    Raises:
        torchport.DeviceError: ``device`` is not a valid device string, or is not present.
        torchport.ConfigError: ``device_count`` is below 1.

    Example:
        >>> import torch, torchport as tp
        >>> with tp.redirect("cpu"):
        ...     torch.ones(2).cuda().device
        device(type='cpu')
    """
    if type(device_count) is not int or device_count < 1:
        from torchport.errors import ConfigError

        raise ConfigError(
            f"redirect() got device_count={device_count!r}; pass the number of CUDA devices "
            "the code should see, 1 or more (the local world size under torchrun)"
        )
    return _Redirect(_target_device(device), device_count)


def _target_device(device: object) -> torch.device:
    """``device`` parsed and checked to be present; errors name redirect()'s argument."""
    from torchport.hardware import parse_device

    return parse_device(device, argument="device")


redirect.__module__ = "torchport"
