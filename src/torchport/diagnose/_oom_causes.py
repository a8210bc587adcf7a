"""Which one cause an out-of-memory error is, from the numbers its message stated, and what to do.

The allocator frees its cache and retries before it raises, so a device that PyTorch's
own reservations plus the request come nowhere near filling was filled by someone else
(other processes, another library, a platform limit on one allocation): that is a cause
of its own, ahead of fragmentation and an oversized working set, which need a full device.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from torchport._sizes import format_bytes

__all__ = ["OomCase", "OomExplanation", "classify"]

# Other processes are "the" cause when they hold at least this share of the device.
_OTHERS_SHARE = 0.25
# Reserved-but-unallocated counts as fragmentation from this share of what PyTorch reserved.
_FRAGMENTED_SHARE = 0.10
# Free memory reported above the request by this much, and the allocation still failed:
# a limit below the allocator refused it (the allocator's own rounding is under 2 MiB).
_PLATFORM_SLACK = 64 * 2**20
# ... on a device with at least this share free: a nearly full device (150 MiB free of 16
# GiB, asked for 20 MiB) fails below that from the driver's own needs, and is full.
_ROOMY_SHARE = 0.05
# When what PyTorch reserved plus the request is at most this share of the device, neither
# the working set nor fragmentation explains running out: the rest is held elsewhere.
_HELD_SHARE = 0.5


class OomCase(enum.Enum):
    """The one cause an out-of-memory error is classified as."""

    REQUEST_TOO_LARGE = "request larger than the device"
    PROCESS_LIMIT = "the per-process memory limit is reached"
    OTHER_PROCESSES = "other processes hold the memory"
    HELD_ELSEWHERE = "the memory is held outside PyTorch"
    PLATFORM_LIMIT = "a limit below the allocator refused it"
    FRAGMENTATION = "fragmentation"
    WORKING_SET_TOO_LARGE = "working set too large"
    LIBRARY_WORKSPACE = "a GPU library could not allocate its own memory"


@dataclass(frozen=True)
class OomExplanation:
    """What an out-of-memory message said, its cause and the next step.

    Sizes are bytes; ``None`` where the message did not state the number.

    Attributes:
        case: The cause.
        backend: ``"cuda"``, ``"hip"``, ``"xpu"``, ``"mps"``, ``"npu"``, ``"dml"``
            (torch-directml) or ``"cpu"``.
        device: The device the allocation failed on, when known.
        requested: The allocation that failed.
        total: The device's capacity (for MPS: the allocator's maximum allowed; for the
            CPU: system RAM, or the container's limit if lower).
        free: Free device memory when the error was raised (for the CPU: RAM available
            when the error was explained, which may be later).
        allowed: The per-process limit: ``set_per_process_memory_fraction`` on a device,
            the address-space or data limit (``ulimit -v``/``-d``) on the host.
        allocated: Memory in live tensors, as counted by PyTorch.
        reserved_unallocated: Memory PyTorch cached but could not use for this request.
        this_process: All memory this process used, PyTorch's or not.
        other_processes: ``(pid, bytes)`` of each other process on the device.
        next_step: What to do, in one or two sentences.
        message: The original error message.
        allowed_by: What sets ``allowed`` on the host, e.g. ``"RLIMIT_AS (ulimit -v)"``;
            ``None`` on a device.
    """

    case: OomCase
    backend: str
    device: str | None
    requested: int | None
    total: int | None
    free: int | None
    allowed: int | None
    allocated: int | None
    reserved_unallocated: int | None
    this_process: int | None
    other_processes: tuple[tuple[int, int], ...] = field(default=())
    next_step: str = ""
    message: str = field(default="", repr=False)
    allowed_by: str | None = None

    @property
    def other_processes_total(self) -> int:
        """Bytes held by all other processes on the device."""
        return sum(used for _, used in self.other_processes)

    def __str__(self) -> str:
        # drawn by the pillar's one renderer, like the reports
        from torchport.diagnose._drawing import oom_text

        return oom_text(self)


def classify(
    backend: str,
    device: str | None,
    numbers: dict[str, int],
    others: tuple[tuple[int, int], ...],
    message: str,
    *,
    allowed_by: str | None = None,
    library: str | None = None,
    stated: str | None = None,
) -> OomExplanation:
    """The explanation of an out-of-memory error: the numbers its message stated (by the
    names of :class:`OomExplanation`'s fields; ``other`` for MPS memory outside PyTorch's
    tensors), the other processes' ``(pid, bytes)``, the one cause and the next step.

    ``library`` names the GPU library whose own allocation failed (``cublas``, ``cudnn``,
    ``algorithms`` for cuDNN's "Unable to find a valid cuDNN algorithm"); ``stated`` is
    what a CPU allocator's message says beside the request (which call failed, its error).
    """
    requested = numbers.get("requested")
    total = numbers.get("total")
    capacity = numbers.get("allowed", total)
    allocated = numbers.get("allocated")
    unallocated = numbers.get("reserved_unallocated")
    free = numbers.get("free")
    held_by_others = sum(used for _, used in others)
    where = device or backend

    if library is not None:
        case = OomCase.LIBRARY_WORKSPACE
        step = _library_step(library, device or "the GPU")
    elif requested is not None and capacity is not None and requested > capacity:
        case = OomCase.REQUEST_TOO_LARGE
        limit = "the per-process limit" if "allowed" in numbers else f"all of {where}"
        if allowed_by:
            limit = f"this process's limit, {allowed_by},"
        step = (
            f"One allocation of {format_bytes(requested)} exceeds {limit} "
            f"({format_bytes(capacity)}), so no allocator setting can make it fit: split the "
            "work (a smaller batch, or chunk the op over the sequence or batch dimension), use a "
            "smaller dtype (bfloat16 halves it), or shard the model across devices (FSDP)."
        )
        if allowed_by:
            step += f" Or raise the limit ({_raise_limit(allowed_by)}) if it was set too low."
    elif allowed_by and (free is None or requested is None or free >= requested):
        case = OomCase.PROCESS_LIMIT
        used = numbers.get("this_process")
        mapped = f", {format_bytes(used)} of it mapped already," if used is not None else ""
        room = f" while the host still has {format_bytes(free)} available" if free else ""
        step = (
            f"This process is limited by {allowed_by} to {format_bytes(numbers['allowed'])}"
            f"{mapped}{room}: raise the limit ({_raise_limit(allowed_by)}) in the shell or job "
            "script that starts it, or make the work fit under it: a smaller batch, fewer "
            "DataLoader workers, tensors loaded lazily (torch.load(..., mmap=True)). Address-space "
            "limits count virtual memory too, which torch and GPU libraries map plenty of."
        )
    elif "allowed" in numbers and (free is None or requested is None or free >= requested):
        case = OomCase.PROCESS_LIMIT
        module = backend if backend in ("xpu", "npu") else "cuda"
        api = f"torch.{module}.set_per_process_memory_fraction"
        left = f" while {format_bytes(free)} of {where} is still free" if free is not None else ""
        step = (
            f"This process is capped at {format_bytes(numbers['allowed'])} by {api}{left}: raise "
            f"the fraction ({api}(fraction, device)) if other jobs on {where} can spare it, or "
            "make the work fit under the cap: a smaller batch (gradient accumulation keeps the "
            "effective batch), activation checkpointing, bfloat16 autocast."
        )
    elif (
        free is not None
        and requested is not None
        and free >= requested + _PLATFORM_SLACK
        and (total is None or free >= _ROOMY_SHARE * total)
        and backend != "cpu"
    ):
        case = OomCase.PLATFORM_LIMIT
        step = (
            f"{where} had {format_bytes(free)} free, more than the {format_bytes(requested)} "
            "asked for, so the allocation did not fail for want of memory, nor for how "
            "PyTorch's cache is laid out: something below PyTorch's allocator refused it. "
            "Look for a limit on one "
            "allocation or on the process: the platform's maximum single allocation (Intel "
            "GPUs without large-allocation support, integrated GPUs' carve-out), Windows' WDDM "
            "driver model, a MIG slice or an MPS/vGPU/container memory limit, or another "
            "library's allocator in this process. Chunk the allocation or lift the limit."
        )
    elif (
        held_by_others > 0
        and (requested is None or held_by_others >= requested)
        and (
            (total is not None and held_by_others >= _OTHERS_SHARE * total)
            or held_by_others >= numbers.get("this_process", 0)
        )
    ):
        case = OomCase.OTHER_PROCESSES
        pids = ", ".join(str(pid) for pid, _ in others)
        lister = "nvidia-smi or rocm-smi" if backend == "cuda" else _SMI.get(backend, "nvidia-smi")
        step = (
            f"Other processes (pid {pids}) hold {format_bytes(held_by_others)} of {where}: "
            f"stop them (look for leftover jobs with {lister}), "
            "or run on a free device by setting CUDA_VISIBLE_DEVICES (ASCEND_RT_VISIBLE_DEVICES "
            "on Ascend) or TORCHPORT_DEVICE."
        )
    elif backend == "mps" and _mps_other_dominates(numbers):
        case = OomCase.HELD_ELSEWHERE
        other = numbers["other"]
        step = (
            f"{format_bytes(other)} of the {format_bytes(total)} MPS may use is in other "
            f"allocations, against {format_bytes(allocated)} in PyTorch's tensors: Metal "
            "buffers outside PyTorch (another library or model runtime in this process, "
            "the graphics stack). Release them (torch.mps.empty_cache() frees PyTorch's "
            "cache only), or run the other work apart; a smaller batch only trims PyTorch's part."
        )
    elif backend not in ("cpu", "mps") and _held_elsewhere(numbers):
        case = OomCase.HELD_ELSEWHERE
        reserved = (allocated or 0) + (unallocated or 0)
        seen_free = f" and {format_bytes(free)} is free" if free is not None else ""
        tool = _SMI.get(backend, "nvidia-smi")
        step = (
            f"PyTorch holds only {format_bytes(reserved)} of the {format_bytes(total)} of "
            f"{where}{seen_free}, so the rest is held outside PyTorch's allocator: other "
            f"processes on {where} (list them with {tool}), another library's allocations in "
            "this process, or a platform that refuses one allocation this large. Stop the "
            "other jobs or pick a free device (TORCHPORT_DEVICE); a smaller batch only helps "
            "if the memory cannot be freed."
        )
    elif unallocated is not None and _fragmented(requested, free, allocated, unallocated):
        case = OomCase.FRAGMENTATION
        step = (
            f"{format_bytes(unallocated)} is reserved by PyTorch but split into blocks too "
            f"small for this request. {_defragment_hint(backend)}"
        )
    else:
        case = OomCase.WORKING_SET_TOO_LARGE
        held = f"PyTorch holds {format_bytes(allocated)} in live tensors; " if allocated else ""
        step = (
            f"{held}the model, activations and optimizer state do not fit together: reduce the "
            "batch size (gradient accumulation keeps the effective batch), use activation "
            "checkpointing (torch.utils.checkpoint), train in mixed precision (torch.autocast "
            "with bfloat16), and drop references to tensors you no longer need."
        )
        if backend == "cpu":
            step = (
                f"{_host_facts(requested, free, total, stated)}: "
                "reduce the batch size, load the dataset lazily or memory-mapped "
                "(torch.load(..., mmap=True), numpy.memmap) instead of into RAM, use fewer "
                "DataLoader workers (each may hold a copy), and drop references to tensors "
                "you no longer need; in a container, raise its memory limit."
            )
        if backend == "mps":
            step += (
                " The cap is PYTORCH_MPS_HIGH_WATERMARK_RATIO of system memory; raising it "
                "trades this error for system-wide swapping."
            )
        if backend == "dml":
            step += (
                " DirectML's message states only the request: the device's total and what "
                "other programs hold are in Task Manager (Performance, GPU, dedicated memory)."
            )
    return OomExplanation(
        case=case,
        backend=backend,
        device=device,
        requested=requested,
        total=total,
        free=free,
        allowed=numbers.get("allowed"),
        allocated=allocated,
        reserved_unallocated=unallocated,
        this_process=numbers.get("this_process"),
        other_processes=others,
        next_step=step,
        message=message,
        allowed_by=allowed_by,
    )


_SMI = {"xpu": "xpu-smi", "hip": "rocm-smi", "npu": "npu-smi info", "cuda": "nvidia-smi"}


def _host_facts(
    requested: int | None, free: int | None, total: int | None, stated: str | None
) -> str:
    """The host's figures where this machine raised the error, else what the message says
    and what it does not (a pasted log came from another machine: this one's RAM would
    say nothing of it)."""
    if free is not None and total is not None:
        return f"The host has {format_bytes(free)} of RAM available of {format_bytes(total)}"
    if total is not None:
        return f"The host has {format_bytes(total)} of RAM"
    asked = f"a request of {format_bytes(requested)}" if requested is not None else "a request"
    said = f" and that {stated}" if stated else ""
    return (
        f"The message states {asked}{said}; it does not state how much RAM that machine had, "
        "how much was free or held by other processes, or a limit (a container's memory "
        "limit, ulimit -v) that refused it: compare the request with those on the machine "
        "that raised it (free -h, cat /sys/fs/cgroup/memory.max, ulimit -v; Task Manager's "
        "committed memory on Windows). Then"
    )


def _library_step(library: str, where: str) -> str:
    """The next step when cuBLAS or cuDNN could not allocate its own memory on ``where``."""
    unknown = (
        "The message states no figures, so what filled the device is not known from it: "
        "compare torch.cuda.memory_reserved() with torch.cuda.memory_allocated() (the "
        "difference is PyTorch's cache, which these libraries cannot use; "
        "torch.cuda.empty_cache() returns it) and list other processes with nvidia-smi."
    )
    if library == "cublas":
        return (
            f"cuBLAS could not allocate device memory for its handle or workspace on {where}; "
            "it does so beside PyTorch's tensors, when the first matrix multiply runs on "
            f"each device and thread, and {where} had no room left then. {unknown} Reduce "
            "the batch, free the cache before the first matmul, or pick a device no other "
            "job uses (CUDA_VISIBLE_DEVICES)."
        )
    if library == "cudnn":
        return (
            f"cuDNN could not allocate the workspace its convolution needs on {where}, beside "
            f"the convolution's own tensors. {unknown} Reduce the batch or the input size; "
            "torch.backends.cudnn.benchmark = False keeps cuDNN from trying algorithms with "
            "large workspaces."
        )
    return (
        "cuDNN tried every convolution algorithm and none ran: PyTorch gives up this way "
        "when each algorithm's workspace failed to allocate (the device was full, the usual "
        f"case) or cuDNN refused it for these shapes and this build. {unknown} To tell the "
        "two apart, run the step once with torch.backends.cudnn.enabled = False: an "
        "out-of-memory error with figures then names the memory (reduce the batch); a run "
        "that passes points at cuDNN's support for these shapes (update torch and cuDNN)."
    )


def _raise_limit(allowed_by: str) -> str:
    """How to lift the limit ``allowed_by`` names: ``ulimit -v unlimited``."""
    command = allowed_by.partition("(")[2].rstrip(")") or "ulimit -v"
    return f"{command} unlimited, or resource.setrlimit"


def _held_elsewhere(numbers: dict[str, int]) -> bool:
    """Whether the device ran out with most of it held outside PyTorch (no process named).

    With the free memory known: what neither PyTorch nor the free memory accounts for is
    at least the request and a quarter of the device. Without it: what PyTorch reserved
    plus the request is at most half the device, so the device was not filled by this
    working set (the allocator frees its cache and retries before it gives up).
    """
    requested, total = numbers.get("requested"), numbers.get("total")
    allocated, free = numbers.get("allocated"), numbers.get("free")
    if requested is None or total is None or allocated is None:
        return False
    reserved = allocated + numbers.get("reserved_unallocated", 0)
    if free is not None:
        outside = total - free - max(reserved, numbers.get("this_process", 0))
        return outside >= requested and outside >= _OTHERS_SHARE * total
    return reserved + requested <= _HELD_SHARE * total


def _mps_other_dominates(numbers: dict[str, int]) -> bool:
    """MPS: the other allocations hold more than PyTorch's tensors and a quarter of the cap."""
    other, allocated, total = numbers.get("other"), numbers.get("allocated"), numbers.get("total")
    if other is None or allocated is None or total is None:
        return False
    return other >= allocated and other >= _OTHERS_SHARE * total


def _fragmented(
    requested: int | None, free: int | None, allocated: int | None, unallocated: int
) -> bool:
    """Whether the cache PyTorch holds but cannot use is what stands in the way.

    Never on a device full of live tensors: the unallocated part must be a real share of
    what PyTorch reserved (a few hundred MiB left in a full 24 GiB device is not why the
    step does not fit), and compacting it must make room for the request.
    """
    reserved = (allocated or 0) + unallocated
    if reserved <= 0 or unallocated < _FRAGMENTED_SHARE * reserved:
        return False
    return requested is None or (free or 0) + unallocated >= requested


def _defragment_hint(backend: str) -> str:
    if backend == "xpu":
        return (
            "Call torch.xpu.empty_cache() between phases that allocate differently sized "
            "tensors, and keep tensor shapes steady across steps (pad to fixed buckets)."
        )
    variable = f"PYTORCH_{backend.upper() if backend in ('hip', 'npu') else 'CUDA'}_ALLOC_CONF"
    return (
        f"Set {variable}=expandable_segments:True in the environment before the process "
        "starts, so the allocator grows segments instead of splitting them; keeping tensor "
        "shapes steady across steps (pad to fixed buckets) also helps."
    )


# Reachable as torchport.diagnose.OomCase / .OomExplanation, so reprs and pickles name that.
OomCase.__module__ = "torchport"
OomExplanation.__module__ = "torchport"
