"""explain_oom: read an allocator's out-of-memory message and say which one cause it is.

PyTorch's caching allocators state the facts in the message itself
(``c10/cuda/CUDACachingAllocator.cpp``, the XPU twin, ``MPSAllocator.mm``)::

    CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 15.51 GiB
    of which 149.62 MiB is free. Process 1839 has 322.23 MiB memory in use. Including
    non-PyTorch memory, this process has 11.65 GiB memory in use. Of the allocated memory
    11.47 GiB is allocated by PyTorch, and 10.27 MiB is reserved by PyTorch but unallocated.

Older releases wrote ``(GPU 0; 7.93 GiB total capacity; 130.35 MiB already allocated; ...)``;
both shapes are read. Each number is parsed on its own so a release that adds or drops a
clause loses only that number. A process capped by ``set_per_process_memory_fraction``
gets ``20.00 GiB allowed;`` in the message, and the cap is then a cause of its own.

The XPU allocator writes the same sentences as CUDA's (``GPU 0 has a total capacity
of ... of which ... is free``; releases before 2.8 leave out the free memory), and
Intel's extension the older parenthesised shape; all are read.

cuBLAS and cuDNN allocate their handles and workspaces beside PyTorch's tensors and say
so in their own words (``CUBLAS_STATUS_ALLOC_FAILED``, ``CUDNN_STATUS_NOT_ENOUGH_WORKSPACE``,
"Unable to find a valid cuDNN algorithm to run convolution"), without figures; Ascend's
``torch_npu`` writes the older CUDA shape as "NPU out of memory ... (NPU 0; ...)".

The CPU allocator (``c10/core/impl/alloc_cpu.cpp``) raises a plain ``RuntimeError``:
``DefaultCPUAllocator: can't allocate memory: you tried to allocate 8589934592 bytes.
Error code 12 (Cannot allocate memory)``; the RAM it is measured against is read from
the host (``/proc``, the cgroup limit) when the error is explained, and so is this
process's own limit (``ulimit -v``, ``RLIMIT_AS``; ``ulimit -d``, ``RLIMIT_DATA``),
which refuses allocations while the machine still has RAM to spare.

Which one cause the numbers point to, and the next step, is decided in :mod:`._oom_causes`.
"""

from __future__ import annotations

import re

import torch

from torchport import hardware
from torchport._sizes import SIZE_PATTERN, parse_size
from torchport.diagnose._memory import host_memory, process_limit
from torchport.diagnose._oom_causes import OomCase, OomExplanation, classify
from torchport.errors import ConfigError

__all__ = [
    "OomCase",
    "OomExplanation",
    "explain_oom",
    "is_out_of_memory",
    "note_oom",
    "recognises",
]

_S = f"({SIZE_PATTERN})"
_FLAGS = re.IGNORECASE | re.DOTALL

# Ascend's torch_npu writes CUDA's older shape with its own name: "NPU out of memory. Tried
# to allocate 5.03 GiB (NPU 3; 60.96 GiB total capacity; 49.47 GiB already allocated; 49.47
# GiB current active; 1.32 GiB free; 57.55 GiB reserved in total by PyTorch)"
_HEADER = re.compile(r"\b(CUDA|HIP|XPU|NPU) out of memory|\b(MPS) backend out of memory", _FLAGS)
# torch 2.0-2.3's CUDA allocator, when an allocation passes the per-process limit's check:
# "Allocation on device 0 would exceed allowed memory. (out of memory)\nCurrently
# allocated : ...\nRequested : ...\nDevice limit : ...\nFree (according to CUDA): ...\n
# PyTorch limit (set by user-supplied memory fraction)\n : ..."
_EXCEED_HEADER = re.compile(r"Allocation on device (\d+) would exceed allowed memory", _FLAGS)
_EXCEED = {
    "allocated": re.compile(rf"Currently allocated\s*:\s*{_S}", _FLAGS),
    "requested": re.compile(rf"Requested\s*:\s*{_S}", _FLAGS),
    "total": re.compile(rf"Device limit\s*:\s*{_S}", _FLAGS),
    "free": re.compile(rf"Free \(according to CUDA\)\s*:\s*{_S}", _FLAGS),
    "allowed": re.compile(rf"memory fraction\)\s*:\s*{_S}", _FLAGS),
}
# Raised by cuBLAS/cuDNN/kernels rather than the caching allocator: an OOM without numbers.
_BARE_HEADER = re.compile(r"\b(CUDA|HIP) error: out of memory", _FLAGS)
# A GPU library's own allocation failed, beside PyTorch's tensors: cuBLAS creating its
# handle or workspace ("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling
# `cublasCreate(handle)`"), cuDNN's workspace ("CUDNN_STATUS_NOT_ENOUGH_WORKSPACE",
# "CUDNN_STATUS_ALLOC_FAILED"; Conv_v7.cpp's "Not enough memory for workspace!"), and
# Conv_v7.cpp's try_all, which says "Unable to find a valid cuDNN algorithm to run
# convolution" once every algorithm failed, with an out-of-memory error (the workspace) or
# a cuDNN error. No figures in any of them.
_LIBRARY = re.compile(
    r"\b(?P<cublas>CUBLAS_STATUS_ALLOC_FAILED)\b"
    r"|\b(?P<cudnn>CUDNN_STATUS_NOT_ENOUGH_WORKSPACE|CUDNN_STATUS_ALLOC_FAILED"
    r"|Not enough memory for workspace!)"
    r"|(?P<algorithms>Unable to find a valid cuDNN algorithm to run convolution)",
    _FLAGS,
)
_REQUESTED = re.compile(rf"Tried to allocate {_S}", _FLAGS)
# "capacty" is how releases before 2.2 spelled it.
_CAPACITY = re.compile(rf"GPU(?>\s*(\d*)\s+)has a total capac\w* of {_S}", _FLAGS)
_FREE = re.compile(rf"of which {_S} is free", _FLAGS)
_ALLOWED = re.compile(rf"{_S} allowed;", _FLAGS)
_OTHER_PROCESS = re.compile(rf"Process (\d+) has {_S} memory in use", _FLAGS)
_THIS_PROCESS = re.compile(rf"this process has {_S} memory in use", _FLAGS)
_ALLOCATED = re.compile(rf"{_S} is allocated by PyTorch", _FLAGS)
_UNALLOCATED = re.compile(rf"{_S} is reserved by PyTorch but unallocated", _FLAGS)
_OLD_GPU = re.compile(r"\((?:GPU|NPU) (\d+);", _FLAGS)
_OLD_TOTAL = re.compile(rf"{_S} total capacity", _FLAGS)
_OLD_ALLOCATED = re.compile(rf"{_S} already allocated", _FLAGS)
_OLD_FREE = re.compile(rf"{_S} free;", _FLAGS)
_OLD_RESERVED = re.compile(rf"{_S} reserved in total by PyTorch", _FLAGS)
# releases before 1.5: "...; 24.17 MiB free; 26.39 MiB cached)", the cache not in use
_OLD_CACHED = re.compile(rf"{_S} cached\)", _FLAGS)
# Linux/macOS (posix_memalign failed): "can't allocate memory"; Windows (_aligned_malloc):
# "not enough memory", which releases before 1.0 followed with "Buy new RAM!"
_CPU_HEADER = re.compile(
    r"DefaultCPUAllocator: (can't allocate memory|not enough memory): "
    r"you tried to allocate (\d+) bytes",
    _FLAGS,
)
# posix_memalign's result, as alloc_cpu.cpp appends it: "Error code 12 (Cannot allocate memory)"
_CPU_ERROR = re.compile(r"Error code (\d+) \(([^)]*)\)", _FLAGS)
# torch-directml (Windows, any DirectX 12 GPU): the request alone, in bytes
_DML_HEADER = re.compile(
    r"Could not allocate tensor with (\d+) bytes\. There is not enough GPU video memory", _FLAGS
)
_MPS_ALLOCATED = re.compile(rf"MPS allocated: {_S}", _FLAGS)
_MPS_OTHER = re.compile(rf"other allocations: {_S}", _FLAGS)
_MPS_MAX = re.compile(rf"max allowed: {_S}", _FLAGS)


def explain_oom(
    err: BaseException | str, *, device: torch.device | str | None = None
) -> OomExplanation:
    """Explain an out-of-memory error from a CUDA, ROCm, XPU, MPS, Ascend NPU, DirectML or
    CPU allocator, or from cuBLAS or cuDNN allocating beside PyTorch.

    Reads only the message; does not touch the device or synchronize. For the CPU
    allocator's error it also reads the host's RAM and container limit.

    Args:
        err: The ``torch.OutOfMemoryError`` (or a ``RuntimeError`` carrying an allocator's
            out-of-memory message), or the message text itself, e.g. from a log.
        device: The device the error came from, when the message does not say.

    Returns:
        The parsed numbers, the cause and the next step.

    Raises:
        ConfigError: ``err`` is not an out-of-memory error.
    """
    message = err if isinstance(err, str) else str(err)
    cpu = _CPU_HEADER.search(message)
    if cpu is not None:
        # a pasted log came from another machine: this one's RAM says nothing of it
        return _explain_cpu(message, int(cpu.group(2)), here=not isinstance(err, str))
    dml = _DML_HEADER.search(message)
    if dml is not None:
        asked = {"requested": int(dml.group(1))}
        return classify("dml", str(device) if device is not None else None, asked, (), message)
    library = _LIBRARY.search(message)
    if library is not None and _HEADER.search(message) is None:
        return classify(
            "cuda",
            _device_name("cuda", None, device),
            {},
            (),
            message,
            library=next(k for k, v in library.groupdict().items() if v),
        )
    exceed = _EXCEED_HEADER.search(message)
    if exceed is not None:
        return _explain_exceed(message, exceed.group(1), device)
    header = _HEADER.search(message) or _BARE_HEADER.search(message)
    if header is None:
        if isinstance(err, torch.OutOfMemoryError):
            backend = hardware.device_spec(device).type if device is not None else "cuda"
            return classify(backend, _device_name(backend, None, device), {}, (), message)
        kind = type(err).__name__ if not isinstance(err, str) else "text"
        raise ConfigError(
            f"explain_oom() got a {kind} that is not an out-of-memory error: {message[:120]!r}; "
            "expected a torch.OutOfMemoryError, a CUDA/HIP/XPU/MPS 'out of memory' message, "
            "DirectML's 'not enough GPU video memory' or "
            "the CPU allocator's \"can't allocate memory\"; "
            "pass the exception caught around the failing call"
        )
    backend = next(g for g in header.groups() if g).lower()
    if backend == "mps":
        return _explain_mps(message, device)
    numbers: dict[str, int] = {}
    _take(numbers, "requested", _REQUESTED, message)
    index: str | None = None
    capacity = _CAPACITY.search(message)
    if capacity is not None:
        index = capacity.group(1) or None
        numbers["total"] = parse_size(capacity.group(2))
        _take(numbers, "free", _FREE, message)
        _take(numbers, "allocated", _ALLOCATED, message)
        _take(numbers, "reserved_unallocated", _UNALLOCATED, message)
    else:
        old_gpu = _OLD_GPU.search(message)
        index = old_gpu.group(1) if old_gpu else None
        _take(numbers, "total", _OLD_TOTAL, message)
        _take(numbers, "allocated", _OLD_ALLOCATED, message)
        _take(numbers, "free", _OLD_FREE, message)
        _take(numbers, "reserved", _OLD_RESERVED, message)
        if "reserved" in numbers and "allocated" in numbers:
            numbers["reserved_unallocated"] = max(numbers["reserved"] - numbers["allocated"], 0)
        else:
            _take(numbers, "reserved_unallocated", _OLD_CACHED, message)
    _take(numbers, "allowed", _ALLOWED, message)
    _take(numbers, "this_process", _THIS_PROCESS, message)
    others = tuple((int(pid), parse_size(size)) for pid, size in _OTHER_PROCESS.findall(message))
    if "this_process" not in numbers:
        others = _drop_own_process(numbers, others)
    return classify(backend, _device_name(backend, index, device), numbers, others, message)


def recognises(message: str) -> bool:
    """Whether ``message`` is an allocator's out-of-memory message that this module reads."""
    return any(
        p.search(message) is not None
        for p in (_CPU_HEADER, _DML_HEADER, _EXCEED_HEADER, _HEADER, _BARE_HEADER, _LIBRARY)
    )


def _explain_exceed(message: str, index: str, device: torch.device | str | None) -> OomExplanation:
    numbers: dict[str, int] = {}
    for key, pattern in _EXCEED.items():
        _take(numbers, key, pattern, message)
    if numbers.get("allowed", 0) >= numbers.get("total", 0):
        numbers.pop("allowed", None)  # no fraction set: the limit printed is "unlimited"
    return classify("cuda", _device_name("cuda", index, device), numbers, (), message)


def _take(numbers: dict[str, int], key: str, pattern: re.Pattern[str], message: str) -> None:
    match = pattern.search(message)
    if match is not None:
        numbers[key] = parse_size(match.group(1))


def _device_name(backend: str, index: str | None, device: torch.device | str | None) -> str | None:
    if device is not None:
        return str(hardware.device_spec(device))
    # ROCm builds report HIP errors but address the device as "cuda".
    kind = "cuda" if backend == "hip" else backend
    return f"{kind}:{index}" if index is not None else None


def _drop_own_process(
    numbers: dict[str, int], others: tuple[tuple[int, int], ...]
) -> tuple[tuple[int, int], ...]:
    """Find this process among the "Process N" lines when the allocator did not label it.

    Inside a container NVML reports host pids, so the allocator cannot match its own pid
    and lists itself as "Process N". The process holding at least what PyTorch reserved,
    and the least such, is taken to be this one.
    """
    if "allocated" not in numbers:
        return others
    reserved = numbers["allocated"] + numbers.get("reserved_unallocated", 0)
    candidates = [entry for entry in others if entry[1] >= reserved]
    if not candidates:
        return others
    own = min(candidates, key=lambda entry: entry[1])
    numbers["this_process"] = own[1]
    return tuple(entry for entry in others if entry is not own)


def _explain_mps(message: str, device: torch.device | str | None) -> OomExplanation:
    numbers: dict[str, int] = {}
    _take(numbers, "requested", _REQUESTED, message)
    _take(numbers, "allocated", _MPS_ALLOCATED, message)
    _take(numbers, "total", _MPS_MAX, message)
    other = _MPS_OTHER.search(message)
    if other is not None:
        # Metal buffers of this process outside PyTorch's tensors (other libraries, the
        # graphics stack); counted against the same "max allowed"
        numbers["other"] = parse_size(other.group(1))
    if "allocated" in numbers:
        numbers["this_process"] = numbers["allocated"] + numbers.get("other", 0)
        if "total" in numbers:
            numbers["free"] = max(numbers["total"] - numbers["this_process"], 0)
    name = str(hardware.device_spec(device)) if device is not None else "mps"
    return classify("mps", name, numbers, (), message)


def _explain_cpu(message: str, requested: int, *, here: bool) -> OomExplanation:
    # The machine's RAM, and apart from it this process's own limit: which of the two
    # refused the allocation is the cause. Only for an error raised here.
    numbers = {"requested": requested}
    if not here:
        return classify("cpu", "cpu", numbers, (), message, stated=_cpu_statement(message))
    free, total = host_memory(within_process_limit=False)
    if total is not None:
        numbers["total"] = total
    if free is not None:
        numbers["free"] = free
    cap = process_limit()
    if cap is not None:
        numbers["allowed"] = cap.limit
        numbers["this_process"] = cap.used
    return classify(
        "cpu",
        "cpu",
        numbers,
        (),
        message,
        allowed_by=cap.name if cap is not None else None,
        stated=_cpu_statement(message),
    )


def _cpu_statement(message: str) -> str:
    """What a CPU allocator's message says beside the request: which allocator call failed
    and the error it returned (``posix_memalign``'s code 12, Cannot allocate memory)."""
    header = _CPU_HEADER.search(message)
    windows = header is not None and header.group(1).lower() == "not enough memory"
    call = "Windows' _aligned_malloc" if windows else "posix_memalign (Linux, macOS)"
    error = _CPU_ERROR.search(message)
    code = f", error code {error.group(1)} ({error.group(2)})" if error else ""
    return f"the host's allocator call, {call}, failed{code}"


# The CPU allocator's out-of-memory error is a plain RuntimeError (c10 alloc_cpu.cpp)


def is_out_of_memory(err: BaseException) -> bool:
    """Whether ``err`` is an allocator running out of memory, on a device or the host.

    Any message :func:`torchport.explain_oom` reads counts (every release's CUDA, HIP,
    XPU and MPS wording, the CPU allocator's on Linux, macOS and Windows).
    """
    if isinstance(err, torch.OutOfMemoryError):
        return True
    if not isinstance(err, RuntimeError):
        return False
    return recognises(str(err))


def note_oom(err: BaseException) -> None:
    """Attach the memory diagnosis to an out-of-memory error, once; never raises.

    Reads only the error (and, for the host's, the RAM left); does not synchronize.
    """
    if getattr(err, "_torchport_oom_noted", False):
        return
    try:
        err.add_note(f"torchport: {explain_oom(err)}")
        err._torchport_oom_noted = True  # type: ignore[attr-defined]
    except Exception:  # a diagnosis that fails must not hide the real error
        pass


explain_oom.__module__ = "torchport"
