"""Installing the simulated accelerator: PyTorch's ``PrivateUse1`` backend, renamed ``sim``.

:func:`simulate_accelerator` sets the backend up from Python (torch's
``_setup_privateuseone_for_python_backend``), registers ``torch.sim`` (the device
module PyTorch and torchport ask for counts, seeds, synchronization and memory),
the kernels for ops that name the device, pinned memory, and serialization. It
runs once per process; later calls with the same options return the same device.

Two of ``torch.accelerator``'s functions reach C++ hooks a Python backend cannot
fill (``synchronize`` and the memory counters raise for it); while the simulated
device is the accelerator they answer from ``torch.sim``, and pass every other
device on to PyTorch's own.
"""

from __future__ import annotations

import atexit
import functools
import threading
from collections.abc import Callable
from typing import Any

import torch

from torchport import hardware
from torchport._sizes import parse_size
from torchport.errors import DeviceError, TorchportError
from torchport.sim import _host
from torchport.sim._at_exit import drain_backward
from torchport.sim._ledger import LEDGER

__all__ = ["installed", "is_simulated", "simulate_accelerator", "supported"]

NAME = "sim"
_lock = threading.Lock()
_options: dict[str, Any] = {}


class _DeviceModule:
    """``torch.sim``: what PyTorch and torchport ask a device module."""

    def is_available(self) -> bool:
        return True

    def is_initialized(self) -> bool:
        return True

    def _is_in_bad_fork(self) -> bool:
        return False

    def device_count(self) -> int:
        return 1

    def current_device(self) -> int:
        return 0

    def set_device(self, device: Any) -> None:
        index = device if isinstance(device, int) else torch.device(device).index
        if index not in (None, 0):
            raise DeviceError(
                f"sim:{index}: the simulated accelerator has one device, sim:0",
                argument="device",
                available=("cpu", "sim:0"),
            )

    def manual_seed(self, seed: int) -> None:
        """Random ops on the device draw from the CPU generator, so a CPU seed seeds them too."""

    def manual_seed_all(self, seed: int) -> None:
        """See :meth:`manual_seed`."""

    def get_rng_state(self, device: Any = None) -> torch.Tensor:
        """The CPU generator's state, which random ops on the device draw from.

        Asked by ``torch.random.fork_rng(device_type="sim")`` (and by a CUDA script's
        ``fork_rng()`` under ``torchport run --device sim``) and by activation
        checkpointing, which restore it after the CPU's own state: the same state.
        """
        return torch.get_rng_state()

    def set_rng_state(self, new_state: torch.Tensor, device: Any = None) -> None:
        """Set the CPU generator's state (see :meth:`get_rng_state`)."""
        torch.set_rng_state(new_state)

    def synchronize(self, device: Any = None) -> None:
        """Wait for the device: every asynchronous copy to the host lands."""
        _host.waited("synchronize")

    def get_amp_supported_dtype(self) -> list[torch.dtype]:
        return [torch.float16, torch.bfloat16]

    def get_device_name(self, device: Any = None) -> str:
        return "torchport simulated accelerator (CPU-backed)"

    def memory_allocated(self, device: Any = None) -> int:
        return LEDGER.figures().allocated

    def max_memory_allocated(self, device: Any = None) -> int:
        return LEDGER.figures().peak

    def memory_reserved(self, device: Any = None) -> int:
        return LEDGER.figures().allocated

    def max_memory_reserved(self, device: Any = None) -> int:
        return LEDGER.figures().peak

    def reset_peak_memory_stats(self, device: Any = None) -> None:
        LEDGER.reset_peak()

    def empty_cache(self) -> None:
        """Nothing is cached: freed simulated memory returns at once."""

    def mem_get_info(self, device: Any = None) -> tuple[int, int]:
        """(free, total) bytes; without a memory limit, the host's RAM stands for the total."""
        figures = LEDGER.figures()
        total = figures.limit if figures.limit is not None else _host_ram()
        return max(total - figures.allocated, 0), total


def _host_ram() -> int:
    import os

    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


def _limit_of(memory_limit: int | str | None) -> int | None:
    if memory_limit is None:
        return None
    if isinstance(memory_limit, bool) or not isinstance(memory_limit, int | str):
        raise TorchportError(
            f"memory_limit={memory_limit!r}: expected a byte count or a size such as '4GiB'"
        )
    limit = parse_size(memory_limit) if isinstance(memory_limit, str) else memory_limit
    if limit <= 0:
        raise TorchportError(f"memory_limit={memory_limit!r}: the limit must be positive")
    return limit


def supported() -> bool:
    """Whether this torch has the Python device-backend API the simulator is built on (2.7+)."""
    return hardware.python_device_backend()


def _hooks() -> tuple[Any, Any]:
    """PyTorch's hook and device-guard objects for the backend (their bases exist on 2.7+)."""

    class Hooks(torch._C._acc.PrivateUse1Hooks):
        def is_available(self) -> bool:
            return True

        def has_primary_context(self, dev_id: int) -> bool:
            return True

        def is_built(self) -> bool:
            return True

    class Guard(torch._C._acc.DeviceGuard):
        def type_(self) -> Any:
            return torch._C._autograd.DeviceType.PrivateUse1

    return Hooks(), Guard()


def is_simulated(device: torch.device) -> bool:
    """Whether ``device`` is the simulated accelerator (whose ops all run at once, in order)."""
    return device.type == NAME and installed()


def installed() -> bool:
    """Whether this process has the simulated accelerator."""
    return bool(_options)


def simulate_accelerator(*, memory_limit: int | str | None = None) -> torch.device:
    """Install a CPU-backed accelerator, ``sim:0``, for this process, and return its device.

    Afterwards PyTorch itself treats it as the accelerator
    (``torch.accelerator.is_available()``, ``current_accelerator()``), so
    ``tp.pick_device()`` picks it. Tensors on it hold real values; ops follow
    CUDA's device rules (mixing it with CPU tensors raises CUDA's error,
    ``.numpy()`` of a device tensor raises CUDA's ``TypeError``); a
    ``non_blocking`` copy to the host reads wrong until the next synchronization;
    every copy and host wait is published to listeners (``audit()``). At exit the
    interpreter waits for a backward still running on the device (autograd runs it on
    a thread of its own, in Python here, where CUDA's runs none) before it finalizes.

    Install it before the process's first backward pass: autograd sizes its queues of
    device threads at that first pass, and a backward on ``sim`` after it fails inside
    PyTorch (``device_ready_queues_ ... INTERNAL ASSERT FAILED``). The pytest plugin
    installs it at collection, before any test runs.

    Args:
        memory_limit: Device memory, as bytes or a size (``"4GiB"``); running out raises
            :class:`torch.OutOfMemoryError` worded as CUDA words it. ``None``: unlimited.

    Returns:
        ``torch.device("sim", 0)``.

    Raises:
        TorchportError: Called again with other options, another backend already took
            PyTorch's ``PrivateUse1`` slot, or this torch lacks the Python backend API.
    """
    limit = _limit_of(memory_limit)
    with _lock:
        if _options:
            if _options["memory_limit"] != limit:
                raise TorchportError(
                    f"the simulated accelerator is already installed with memory_limit="
                    f"{_options['memory_limit']!r}; it is installed once per process, so call "
                    "simulate_accelerator() with the same options (or none) everywhere"
                )
            return torch.device(NAME, 0)
        _install(limit)
        _options["memory_limit"] = limit
    return torch.device(NAME, 0)


def _install(limit: int | None) -> None:
    current = torch._C._get_privateuse1_backend_name()
    if current != "privateuseone":
        raise TorchportError(
            f"PyTorch's PrivateUse1 backend is already named {current!r} in this process (an "
            "out-of-tree device is installed), so the simulated accelerator cannot take it; "
            "run the simulation in a process that does not import that backend"
        )
    if not supported():
        raise TorchportError(
            f"torch {torch.__version__} lacks the Python device-backend API the simulated "
            "accelerator is built on; it needs torch 2.7 or newer"
        )
    LEDGER.limit = limit
    hook, guard = _hooks()
    setup = torch.utils.backend_registration._setup_privateuseone_for_python_backend
    setup(NAME, backend_module=_DEVICE_MODULE, hook=hook, device_guard=guard)
    # These name the device, which exists only from here on.
    from torchport.sim._factories import install_kernels
    from torchport.sim._module_moves import install_module_moves
    from torchport.sim._pinning import install_pinning
    from torchport.sim._saving import install_serialization

    install_kernels()
    hardware.backend_installed()  # torch reports an accelerator now
    # ...this one, even beside a real GPU: a registered PrivateUse1 backend comes first
    # (at::getAccelerator), so a bare pin_memory() asks it for pinned memory from here on.
    install_pinning()
    install_serialization()
    install_module_moves()
    _answer_for_sim()
    # A backward on the device runs Python on autograd's own thread: it must end first.
    atexit.register(drain_backward, torch.device(NAME, 0))


def _answer_for_sim() -> None:
    """Make ``torch.accelerator``'s C++-only functions answer for ``sim`` from ``torch.sim``."""
    module = torch.accelerator
    for name in (
        "synchronize",
        "memory_allocated",
        "max_memory_allocated",
        "memory_reserved",
        "max_memory_reserved",
        "reset_peak_memory_stats",
        "empty_cache",
    ):
        original = getattr(module, name, None)
        if original is not None:
            setattr(module, name, _for_sim(name, original))


def _for_sim(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    answer = getattr(_DeviceModule, name)

    @functools.wraps(original)
    def dispatch(*args: Any, **kwargs: Any) -> Any:
        device = args[0] if args else kwargs.get("device_index", kwargs.get("device"))
        if _means_sim(device):
            return answer(_DEVICE_MODULE)
        return original(*args, **kwargs)

    return dispatch


def _means_sim(device: Any) -> bool:
    if device is None or isinstance(device, int):
        return hardware.accelerator_type() == NAME
    return torch.device(device).type == NAME


_DEVICE_MODULE = _DeviceModule()
