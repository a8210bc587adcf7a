"""Stand-ins for the ``torch.cuda`` API while a script is redirected to another device.

The script sees ``count`` CUDA devices (one, or one per local worker under
torchrun), and every one of them is the target: ``torch.cuda.is_available()``
is True, ``set_device(i)`` / ``current_device()`` keep a per-thread index as
CUDA does, ``synchronize()`` waits for the target, ``mem_get_info()`` and the
random-state calls read the target, ``torch.cuda.FloatTensor(...)`` builds a
tensor on the target; properties, capability, streams, events and NVTX answer
from the target (:mod:`torchport.run._cuda_answers`), and the same functions
reached through a submodule (``torch.cuda.memory``, ``torch.cuda.nvtx``) get
the same stand-ins. Calls with no meaning there (graphs, allocator control,
streams on an accelerator target, ...) raise :class:`~torchport.RedirectError`
naming the call and the device.

Every stand-in first looks at its caller: a call made from inside torch or
torchport themselves goes to the real function, because library code asks
``torch.cuda.is_available()`` to decide whether CUDA machinery exists and must
keep getting the truth.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

import torch

from torchport import _origin, _skipped_copies, hardware
from torchport._device_types import HOST_TYPES
from torchport.errors import RedirectError
from torchport.run._cuda_answers import answers, backend_answers, submodule_answers
from torchport.run._cuda_memory import memory_stand_ins
from torchport.run._notice import acting
from torchport.sim import is_simulated

__all__ = ["Patch", "cuda_patches", "stand_in_class", "stand_in_function"]

# (owner, attribute name, replacement value)
Patch = tuple[Any, str, Any]

_RUN_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep

_LEGACY_DTYPES: dict[str, torch.dtype] = {
    "BFloat16Tensor": torch.bfloat16,
    "BoolTensor": torch.bool,
    "ByteTensor": torch.uint8,
    "CharTensor": torch.int8,
    "DoubleTensor": torch.float64,
    "FloatTensor": torch.float32,
    "HalfTensor": torch.float16,
    "IntTensor": torch.int32,
    "LongTensor": torch.int64,
    "ShortTensor": torch.int16,
}

_SEEDING = ("manual_seed", "manual_seed_all", "seed", "seed_all")


def caller_is_library() -> bool:
    """Whether the nearest frame outside ``torchport.run`` belongs to torch or torchport."""
    return _origin.caller_is_library(past=(_RUN_DIR,))


def stand_in_function(
    original: Any, replacement: Callable[..., Any], *, announce: bool = True
) -> Callable[..., Any]:
    """``original`` for torch's and torchport's own calls, ``replacement`` for the script's.

    ``announce``: the call itself means the redirect acts (a ``torch.cuda`` call); False
    where the replacement says so only when it rewrites a CUDA argument.
    """

    @functools.wraps(original)
    def stand_in(*args: Any, **kwargs: Any) -> Any:
        if caller_is_library():
            return original(*args, **kwargs)
        if announce:
            acting()
        return replacement(*args, **kwargs)

    stand_in.__torchport_original__ = original  # type: ignore[attr-defined]
    return stand_in


class _StandInType(type):
    """Metaclass of class stand-ins: calling builds the redirected object, isinstance asks it."""

    _original: Any
    _make: Callable[..., Any]
    _check: Callable[[Any], bool]
    _announce: bool

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if caller_is_library():
            return cls._original(*args, **kwargs)
        if cls._announce:
            acting()
        return cls._make(*args, **kwargs)

    def __instancecheck__(cls, obj: Any) -> bool:
        return cls._check(obj)

    def __subclasscheck__(cls, sub: Any) -> bool:
        return sub is cls or issubclass(sub, cls._original)


def stand_in_class(
    original: Any,
    make: Callable[..., Any],
    check: Callable[[Any], bool] | None = None,
    *,
    announce: bool = True,
) -> type:
    def default_check(obj: Any) -> bool:
        return isinstance(obj, original)

    namespace = {
        "__module__": original.__module__,
        "__qualname__": original.__qualname__,
        "__doc__": original.__doc__,
        "__torchport_original__": original,
        "_original": original,
        "_make": staticmethod(make),
        "_check": staticmethod(check or default_check),
        "_announce": announce,
    }
    return _StandInType(original.__name__, (), namespace)


def _unsupported(qualname: str, target: torch.device) -> Callable[..., Any]:
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise RedirectError(
            f"{qualname} has no meaning on {target}: this run redirects CUDA to {target}, "
            f"and CUDA streams, events, graphs and allocator controls cannot follow. "
            f"Run on a CUDA device (torchport run --device cuda), or make the call "
            f"conditional on the device type (if device.type == 'cuda': ...)."
        )

    return fail


class _Devices:
    """The CUDA devices the script sees: ``count`` indices that all land on the target.

    The current index is per thread, as CUDA's is, so ``set_device(local_rank)``
    and ``current_device()`` agree the way a multi-GPU script expects.
    """

    def __init__(self, target: torch.device, count: int) -> None:
        self.target = target
        self.count = count
        self._local = threading.local()

    def current(self) -> int:
        return int(getattr(self._local, "index", 0))

    def index(self, device: Any, call: str) -> int:
        """The CUDA ordinal ``device`` names (None: the current one), checked against ``count``."""
        if device is None:
            return self.current()
        if isinstance(device, str | torch.device):
            parsed = hardware.device_spec(device, argument=call)
            index = self.current() if parsed.index is None else parsed.index
        else:
            index = int(device)
        if not 0 <= index < self.count:
            raise RedirectError(
                f"{call} got CUDA device {index}, but this run shows the script {self.count} "
                f"CUDA device(s), all redirected to {self.target} (one per local worker under "
                f"torchrun); use an index below {self.count}, e.g. LOCAL_RANK"
            )
        return index

    def set_device(self, device: Any) -> None:
        if isinstance(device, int) and device < 0:
            return  # torch.cuda.set_device ignores negative indices
        self._local.index = self.index(device, "torch.cuda.set_device()")

    def context(self) -> type:
        """``torch.cuda.device(i)``: makes ``i`` current inside the block, as CUDA does."""
        devices = self

        class device:
            def __init__(self, device: Any) -> None:
                self.index = None if device is None else devices.index(device, "torch.cuda.device")
                self.previous = 0

            def __enter__(self) -> None:
                self.previous = devices.current()
                if self.index is not None:
                    devices._local.index = self.index

            def __exit__(self, *exc: object) -> None:
                devices._local.index = self.previous

        return device


class _NullDeviceContext:
    """``torch.cuda.device_of(t)`` on the target: the tensor's device is the one device."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _synchronize(target: torch.device, by: str = "torch.cuda.synchronize") -> Callable[..., None]:
    def synchronize(device: Any = None) -> None:
        """Waits for all work queued on the target device (a no-op on the CPU, where
        an audit hears of the wait an accelerator run makes)."""
        hardware.synchronize(target)
        if _skipped_copies.listeners and target.type in HOST_TYPES:
            _skipped_copies.tell_wait(target, by=by)

    return synchronize


def _seed(target: torch.device, name: str) -> Callable[..., None]:
    def seed(*args: Any) -> None:
        # On the CPU the script's own torch.manual_seed already seeds the one
        # generator; reseeding it here would shift the random stream.
        module = getattr(torch, target.type, None)
        function = getattr(module, name, None)
        if target.type != "cpu" and function is not None:
            function(*args)

    return seed


def _rng(devices: _Devices) -> dict[str, Callable[..., Any]]:
    """``torch.cuda`` random-state calls on the target's generator.

    The CPU and the simulated accelerator draw device randomness from the CPU's one
    generator: reads return its state and writes set it, so a script that saves the
    CUDA state, draws, and restores it to draw the same numbers again (dropout
    replayed for a recomputed activation, an RNG tracker's fork) gets the same
    numbers, as on CUDA. Seeding is not redirected there (the script's own
    ``torch.manual_seed`` seeds the one generator already).
    """
    target = devices.target
    backend = getattr(torch, target.type, None)
    cpu_generator = target.type == "cpu" or is_simulated(target)

    def backend_call(name: str) -> Callable[..., Any]:
        function = getattr(backend, name, None)
        if function is None:
            return _unsupported(f"torch.cuda.{name}()", target)
        return function  # type: ignore[no-any-return]

    if cpu_generator:

        def get_rng_state(device: Any = "cuda") -> torch.Tensor:
            return torch.get_rng_state()

        def set_rng_state(new_state: torch.Tensor, device: Any = "cuda") -> None:
            torch.set_rng_state(new_state)

        initial_seed: Callable[[], int] = torch.initial_seed
    else:

        def get_rng_state(device: Any = "cuda") -> torch.Tensor:
            return backend_call("get_rng_state")(target)  # type: ignore[no-any-return]

        def set_rng_state(new_state: torch.Tensor, device: Any = "cuda") -> None:
            backend_call("set_rng_state")(new_state, target)

        def initial_seed() -> int:
            return int(backend_call("initial_seed")())

    def get_rng_state_all() -> list[torch.Tensor]:
        return [get_rng_state() for _ in range(devices.count)]

    def set_rng_state_all(new_states: Any) -> None:
        states = list(new_states)
        if states:  # every index is the one target: its state is the current index's
            set_rng_state(states[min(devices.current(), len(states) - 1)])

    if not cpu_generator and getattr(backend, "get_rng_state", None) is None:
        get_rng_state_all = _unsupported("torch.cuda.get_rng_state_all()", target)
        set_rng_state_all = _unsupported("torch.cuda.set_rng_state_all()", target)

    return {
        "get_rng_state": get_rng_state,
        "get_rng_state_all": get_rng_state_all,
        "initial_seed": initial_seed,
        "set_rng_state": set_rng_state,
        "set_rng_state_all": set_rng_state_all,
    }


def _sizes_only(args: tuple[Any, ...]) -> bool:
    """Legacy constructor arguments that give a shape, not data: ``(2, 3)``, ``(Size(...),)``."""
    if len(args) == 1 and isinstance(args[0], torch.Size):
        return True
    return all(isinstance(a, int) and not isinstance(a, bool) for a in args)


def _legacy_tensor(name: str, original: Any, target: torch.device) -> type:
    dtype = _LEGACY_DTYPES[name]
    cpu_type = getattr(torch, name)

    def make(*args: Any, **kwargs: Any) -> torch.Tensor:
        if not kwargs and _sizes_only(args):
            # torch.cuda.FloatTensor(2, 3) allocates on the GPU and copies nothing, so it is
            # made on the target directly (a host tensor moved there would be a copy)
            return torch.empty(*(args or (0,)), dtype=dtype, device=target)
        return cpu_type(*args, **kwargs).to(target)  # type: ignore[no-any-return]

    def check(obj: Any) -> bool:
        return (
            isinstance(obj, torch.Tensor) and obj.dtype == dtype and obj.device.type == target.type
        )

    stand_in = stand_in_class(original, make, check)
    stand_in.dtype = dtype  # type: ignore[attr-defined]
    return stand_in


def _legacy_storage(name: str, target: torch.device) -> Callable[..., Any]:
    """``torch.cuda.FloatStorage(...)``: the CPU's legacy storage when the target is the CPU."""
    storage = hardware.legacy_storage(name)
    if target.type != "cpu" or storage is None:
        return _unsupported(f"torch.cuda.{name}", target)
    return storage  # type: ignore[no-any-return]


def _replacements(devices: _Devices) -> dict[str, Callable[..., Any]]:
    """What a script's call to ``torch.cuda.<name>`` does instead, for functions."""
    target = devices.target
    table: dict[str, Callable[..., Any]] = {
        "current_device": devices.current,
        "device_count": lambda: devices.count,
        "get_device_name": lambda device=None: f"{target} (redirected by torchport)",
        "init": lambda: None,
        "ipc_collect": lambda: None,
        "is_available": lambda: True,
        "is_bf16_supported": lambda including_emulation=True: True,
        "is_initialized": lambda: True,
        "set_device": devices.set_device,
        "synchronize": _synchronize(target),
    }
    table.update(memory_stand_ins(target))
    for name in _SEEDING:
        table[name] = _seed(target, name)
    table.update(_rng(devices))
    return table


_SUBMODULES = (
    "gds",
    "graphs",
    "green_contexts",
    "jiterator",
    "memory",
    "nvtx",
    "profiler",
    "random",
    "sparse",
    "streams",
    "tunable",
)


def _public_api(module: Any) -> Iterator[tuple[str, Any]]:
    """Public functions and classes that ``module`` (``torch.cuda`` or a submodule) defines."""
    for name, value in sorted(vars(module).items()):
        if name.startswith("_") or not callable(value):
            continue
        if not getattr(value, "__module__", "").startswith("torch.cuda"):
            continue
        if isinstance(value, type) and issubclass(value, BaseException):
            continue  # scripts catch these: they must stay real exception types
        yield name, value


def _stand_in(
    qualname: str, original: Any, answer: Any, target: torch.device
) -> Callable[..., Any] | type:
    """The stand-in for ``original``: ``answer`` where there is one, else a RedirectError."""
    if isinstance(original, type):
        if answer is None:
            return stand_in_class(original, _unsupported(qualname, target))
        made = answer if isinstance(answer, type) else None

        def check(obj: Any) -> bool:
            return isinstance(obj, original) or (made is not None and isinstance(obj, made))

        return stand_in_class(original, answer, check)
    return stand_in_function(original, answer or _unsupported(f"{qualname}()", target))


def cuda_patches(target: torch.device, count: int = 1) -> list[Patch]:
    """Every ``torch.cuda`` attribute to replace while redirected, showing ``count`` devices.

    The same function reached through a submodule (``torch.cuda.memory.memory_allocated``)
    gets the same stand-in; names only a submodule holds (``torch.cuda.nvtx.range_push``)
    answer from :func:`~torchport.run._cuda_answers.submodule_answers` or raise.
    """
    devices = _Devices(target, count)
    table = _replacements(devices)
    table.update(answers(target))
    by_original: dict[int, Any] = {}
    patches: list[Patch] = []
    for name, original in _public_api(torch.cuda):
        original = getattr(original, "__torchport_original__", original)
        qualname = f"torch.cuda.{name}"
        if name in _LEGACY_DTYPES:
            stand_in: Any = _legacy_tensor(name, original, target)
        elif name == "device":
            stand_in = stand_in_class(original, devices.context())
        elif name == "device_of":
            stand_in = stand_in_class(original, _NullDeviceContext)
        elif name.endswith("Storage"):
            # torch's own lookups (serialization) get the original: caller_is_library
            stand_in = stand_in_class(original, _legacy_storage(name, target))
        else:
            stand_in = _stand_in(qualname, original, table.get(name), target)
        by_original[id(original)] = stand_in
        patches.append((torch.cuda, name, stand_in))
    only_here = submodule_answers(target)
    for module_name in _SUBMODULES:
        module = getattr(torch.cuda, module_name, None)
        if module is None:
            continue
        for name, original in _public_api(module):
            original = getattr(original, "__torchport_original__", original)
            stand_in = by_original.get(id(original))
            if stand_in is None:
                answer = only_here.get((module_name, name))
                qualname = f"torch.cuda.{module_name}.{name}"
                stand_in = _stand_in(qualname, original, answer, target)
            patches.append((module, name, stand_in))
    for name, answer in backend_answers().items():
        original = getattr(torch.backends.cuda, name, None)
        if original is not None:
            original = getattr(original, "__torchport_original__", original)
            patches.append((torch.backends.cuda, name, stand_in_function(original, answer)))
    return patches
