"""explain_oom: allocator messages as PyTorch prints them, each classified into one cause."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import torchport
from torchport._sizes import parse_size
from torchport.diagnose import OomCase, OomExplanation

GiB = 2**30
MiB = 2**20


def format_size(size: int) -> str:
    """What c10::CachingAllocator::format_size writes (``os.precision(2)``, fixed)."""
    if size <= 1024:
        return f"{size} bytes"
    for limit, scale, unit in ((2**20, 1024.0, "KiB"), (2**30, 2.0**20, "MiB")):
        if size <= limit:
            return f"{size / scale:.2f} {unit}"
    return f"{size / 2.0**30:.2f} GiB"


def cuda_message(
    *,
    requested: int,
    total: int,
    free: int,
    allocated: int,
    unallocated: int,
    this_process: int | None = None,
    others: tuple[tuple[int, int], ...] = (),
    allowed: int | None = None,
    gpu: str = "0",
) -> str:
    """A message in the shape c10/cuda/CUDACachingAllocator.cpp builds (torch >= 2.2)."""
    procs = "".join(
        f"Process {pid} has {format_size(used)} memory in use. " for pid, used in others
    )
    if this_process is not None:
        procs += (
            "Including non-PyTorch memory, this process has "
            f"{format_size(this_process)} memory in use. "
        )
    limit = f"{format_size(allowed)} allowed; " if allowed is not None else ""
    return (
        f"CUDA out of memory. Tried to allocate {format_size(requested)}. GPU {gpu} has a total "
        f"capacity of {format_size(total)} of which {format_size(free)} is free. {procs}{limit}"
        f"Of the allocated memory {format_size(allocated)} is allocated by PyTorch, and "
        f"{format_size(unallocated)} is reserved by PyTorch but unallocated. If reserved but "
        "unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
        "to avoid fragmentation.  See documentation for Memory Management  "
        "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
    )


def test_request_larger_than_the_device() -> None:
    msg = cuda_message(
        requested=96 * GiB,
        total=79 * GiB,
        free=78 * GiB,
        allocated=200 * MiB,
        unallocated=20 * MiB,
        this_process=700 * MiB,
    )
    result = torchport.explain_oom(torch.OutOfMemoryError(msg))
    assert result.case is OomCase.REQUEST_TOO_LARGE
    assert result.requested == 96 * GiB
    assert result.device == "cuda:0"
    assert "no allocator setting" in result.next_step


def test_request_larger_than_the_per_process_limit() -> None:
    msg = cuda_message(
        requested=30 * GiB,
        total=79 * GiB,
        free=70 * GiB,
        allocated=1 * GiB,
        unallocated=0,
        this_process=2 * GiB,
        allowed=20 * GiB,
    )
    result = torchport.explain_oom(torch.OutOfMemoryError(msg))
    assert result.case is OomCase.REQUEST_TOO_LARGE
    assert result.allowed == 20 * GiB
    assert "per-process limit" in result.next_step


def test_other_processes_hold_the_memory() -> None:
    msg = cuda_message(
        requested=42 * MiB,
        total=47 * GiB,
        free=9 * MiB,
        allocated=2.9 * GiB,
        unallocated=34 * MiB,
        this_process=3 * GiB,
        others=((644963, 6 * MiB), (3053273, 29 * GiB), (3120922, 14.7 * GiB)),
    )
    result = torchport.explain_oom(RuntimeError(msg))
    assert result.case is OomCase.OTHER_PROCESSES
    assert [pid for pid, _ in result.other_processes] == [644963, 3053273, 3120922]
    assert result.other_processes_total > 43 * GiB
    assert "3053273" in result.next_step and "CUDA_VISIBLE_DEVICES" in result.next_step


def test_fragmentation_suggests_expandable_segments() -> None:
    msg = cuda_message(
        requested=int(3.15 * GiB),
        total=int(39.56 * GiB),
        free=int(2.9 * GiB),  # below the request: more free would be a limit, not the cache
        allocated=int(31.66 * GiB),
        unallocated=int(4.11 * GiB),
        this_process=int(36.61 * GiB),
    )
    result = torchport.explain_oom(torch.OutOfMemoryError(msg))
    assert result.case is OomCase.FRAGMENTATION
    assert result.reserved_unallocated == pytest.approx(4.11 * GiB, rel=1e-3)
    assert "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" in result.next_step


def test_working_set_too_large() -> None:
    msg = cuda_message(
        requested=4 * GiB,
        total=int(10.56 * GiB),
        free=int(3.49 * GiB),
        allocated=int(6.78 * GiB),
        unallocated=98 * MiB,
        this_process=int(7.06 * GiB),
    )
    result = torchport.explain_oom(torch.OutOfMemoryError(msg))
    assert result.case is OomCase.WORKING_SET_TOO_LARGE
    for advice in ("batch size", "checkpointing", "mixed precision"):
        assert advice in result.next_step


def test_small_foreign_process_does_not_take_the_blame() -> None:
    msg = cuda_message(
        requested=20 * MiB,
        total=int(15.51 * GiB),
        free=150 * MiB,
        allocated=int(11.47 * GiB),
        unallocated=10 * MiB,
        this_process=int(11.65 * GiB),
        others=((1839, 322 * MiB),),
    )
    assert torchport.explain_oom(RuntimeError(msg)).case is OomCase.WORKING_SET_TOO_LARGE


def test_own_process_listed_by_pid_inside_a_container() -> None:
    # In a container NVML reports host pids, so the allocator cannot say "this process".
    msg = cuda_message(
        requested=224 * MiB,
        total=int(44.34 * GiB),
        free=161 * MiB,
        allocated=int(43.36 * GiB),
        unallocated=396 * MiB,
        others=((47694, int(44.17 * GiB)),),
        gpu="",
    )
    result = torchport.explain_oom(RuntimeError(msg))
    assert result.other_processes == ()
    assert result.this_process == pytest.approx(44.17 * GiB, rel=1e-3)
    # 43.36 of 44.34 GiB in live tensors: a full device, whatever the 396 MiB cache does
    assert result.case is OomCase.WORKING_SET_TOO_LARGE
    assert result.device is None


def test_old_message_format() -> None:
    msg = (
        "CUDA out of memory. Tried to allocate 2.00 GiB (GPU 1; 7.93 GiB total capacity; "
        "5.10 GiB already allocated; 1.20 GiB free; 5.30 GiB reserved in total by PyTorch) If "
        "reserved memory is >> allocated memory try setting max_split_size_mb to avoid "
        "fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF"
    )
    result = torchport.explain_oom(RuntimeError(msg))
    assert result.device == "cuda:1"
    assert result.total == pytest.approx(7.93 * GiB, rel=1e-3)
    assert result.reserved_unallocated == pytest.approx(0.2 * GiB, rel=1e-2)
    assert result.case is OomCase.WORKING_SET_TOO_LARGE


def test_mps_message() -> None:
    msg = (
        "MPS backend out of memory (MPS allocated: 17.36 GB, other allocations: 613.56 MB, max "
        "allowed: 18.13 GB). Tried to allocate 192.00 MB on private pool. Use "
        "PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to disable upper limit for memory allocations "
        "(may cause system failure)."
    )
    result = torchport.explain_oom(RuntimeError(msg))
    assert result.backend == "mps" and result.device == "mps"
    assert result.total == pytest.approx(18.13 * GiB, rel=1e-3)
    assert result.case is OomCase.WORKING_SET_TOO_LARGE
    assert "PYTORCH_MPS_HIGH_WATERMARK_RATIO" in result.next_step


def test_xpu_message_and_device_override() -> None:
    msg = (
        "XPU out of memory. Tried to allocate 59.61 GiB. GPU 0 has a total capacity of 28.55 GiB "
        "of which 12.01 GiB is free. Of the allocated memory 14.00 GiB is allocated by PyTorch, "
        "and 2.00 MiB is reserved by PyTorch but unallocated. Please use `empty_cache` to release "
        "all unoccupied cached memory."
    )
    result = torchport.explain_oom(torch.OutOfMemoryError(msg), device="xpu:3")
    assert result.backend == "xpu" and result.device == "xpu:3"
    assert result.case is OomCase.REQUEST_TOO_LARGE


def test_oom_without_numbers_and_text_input() -> None:
    bare = torchport.explain_oom(torch.OutOfMemoryError("something odd"), device="cuda:2")
    assert bare.case is OomCase.WORKING_SET_TOO_LARGE
    assert bare.device == "cuda:2" and bare.requested is None
    kernel = torchport.explain_oom("RuntimeError: CUDA error: out of memory")
    assert kernel.case is OomCase.WORKING_SET_TOO_LARGE and kernel.total is None


@pytest.mark.parametrize(
    "err",
    [
        ValueError("shapes do not match"),
        RuntimeError("Expected all tensors on the same device"),
        "x",
    ],
)
def test_not_an_oom_error(err: BaseException | str) -> None:
    with pytest.raises(torchport.ConfigError, match="not an out-of-memory error"):
        torchport.explain_oom(err)


def test_explanation_is_frozen_and_reads_as_one_paragraph() -> None:
    msg = cuda_message(
        requested=4 * GiB,
        total=10 * GiB,
        free=3 * GiB,
        allocated=6 * GiB,
        unallocated=100 * MiB,
        this_process=7 * GiB,
    )
    result = torchport.explain_oom(RuntimeError(msg))
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.case = OomCase.FRAGMENTATION  # type: ignore[misc]
    text = str(result)
    assert "\n" not in text
    assert "4 GiB" in text and "working set too large" in text
    assert repr(result).startswith("OomExplanation(")
    assert type(result) is OomExplanation and torchport.explain_oom.__module__ == "torchport"


sizes = st.integers(min_value=2048, max_value=80 * GiB)


@given(
    requested=sizes,
    total=sizes,
    free=sizes,
    allocated=sizes,
    unallocated=sizes,
    others=st.lists(st.tuples(st.integers(1, 2**22), sizes), max_size=3),
)
def test_every_number_is_read_back_and_exactly_one_case(
    requested: int,
    total: int,
    free: int,
    allocated: int,
    unallocated: int,
    others: list[tuple[int, int]],
) -> None:
    msg = cuda_message(
        requested=requested,
        total=total,
        free=free,
        allocated=allocated,
        unallocated=unallocated,
        this_process=allocated + unallocated,
        others=tuple(others),
    )
    result = torchport.explain_oom(RuntimeError(msg))
    # The message rounds to two decimals of the unit, so compare within that rounding.
    for parsed, original in [
        (result.requested, requested),
        (result.total, total),
        (result.free, free),
        (result.allocated, allocated),
        (result.reserved_unallocated, unallocated),
    ]:
        assert parsed == pytest.approx(original, rel=5e-3)
    assert [pid for pid, _ in result.other_processes] == [pid for pid, _ in others]
    assert isinstance(result.case, OomCase)
    assert (result.case is OomCase.REQUEST_TOO_LARGE) == (result.requested > result.total)
    assert result.next_step


def _real_cpu_oom() -> RuntimeError:
    """The CPU allocator's own error: 32 TiB is more than any host can map."""
    try:
        torch.empty(2**45, dtype=torch.uint8)
    except RuntimeError as err:
        return err
    pytest.skip("this host mapped 32 TiB")


def test_a_real_cpu_out_of_memory_error_is_explained() -> None:
    err = _real_cpu_oom()
    assert "DefaultCPUAllocator: can't allocate memory" in str(err)
    result = torchport.explain_oom(err)
    assert (result.backend, result.device, result.requested) == ("cpu", "cpu", 2**45)
    assert result.total is not None and result.total < 2**45
    assert result.case is OomCase.REQUEST_TOO_LARGE
    assert "CPU out of memory on cpu" in str(result)


def test_a_cpu_working_set_that_does_not_fit_is_explained_with_host_advice() -> None:
    message = (
        "[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate "
        "memory: you tried to allocate 1048576 bytes. Error code 12 (Cannot allocate memory)"
    )
    result = torchport.explain_oom(message)
    assert result.case is OomCase.WORKING_SET_TOO_LARGE
    assert "DataLoader workers" in result.next_step and "mmap=True" in result.next_step


def test_strict_and_audit_note_a_cpu_out_of_memory_error() -> None:
    for context in (torchport.strict, torchport.audit):
        with pytest.raises(RuntimeError) as info, context():
            # 1 EiB: past any machine's address space, so refused even where the kernel
            # overcommits memory (there 32 TiB of untouched pages are granted)
            torch.empty(2**60, dtype=torch.uint8)
        notes = getattr(info.value, "__notes__", [])
        assert len(notes) == 1 and "CPU out of memory" in notes[0]


def test_the_per_process_cap_is_the_cause_when_the_device_has_room() -> None:
    msg = cuda_message(
        requested=2 * GiB,
        total=79 * GiB,
        free=60 * GiB,
        allocated=19 * GiB,
        unallocated=100 * MiB,
        this_process=19 * GiB,
        allowed=20 * GiB,
    )
    result = torchport.explain_oom(torch.OutOfMemoryError(msg))
    assert result.case is OomCase.PROCESS_LIMIT
    assert "set_per_process_memory_fraction" in result.next_step
    assert "20 GiB allowed to this process" in str(result)


# -- XPU's wordings, every figure labelled -------------------------------------------------


def xpu_message(
    *,
    requested: int,
    total: int,
    free: int | None,
    allocated: int,
    unallocated: int,
    allowed: int | None = None,
    gpu: int = 0,
) -> str:
    """A message in the shape c10/xpu/XPUCachingAllocator.cpp builds: with the free memory
    (torch >= 2.8) or without it (2.5-2.7)."""
    capacity = f"GPU {gpu} has a total capacity of {format_size(total)}"
    if free is None:
        middle = f"{capacity}. "
    else:
        limit = f"{format_size(allowed)} allowed; " if allowed is not None else ""
        middle = f"{capacity} of which {format_size(free)} is free. {limit}"
    return (
        f"XPU out of memory. Tried to allocate {format_size(requested)}. {middle}"
        f"Of the allocated memory {format_size(allocated)} is allocated by PyTorch, and "
        f"{format_size(unallocated)} is reserved by PyTorch but unallocated. Please use "
        "`empty_cache` to release all unoccupied cached memory."
    )


def ipex_message(*, requested: int, total: int, allocated: int, reserved: int, gpu: int) -> str:
    """Intel Extension for PyTorch's XPU allocator (the older, parenthesised shape)."""
    return (
        f"XPU out of memory. Tried to allocate {format_size(requested)} (GPU {gpu}; "
        f"{format_size(total)} total capacity; {format_size(allocated)} already allocated; "
        f"{format_size(reserved)} reserved in total by PyTorch)"
    )


_SIZE = st.integers(2 * MiB, 64 * GiB)


def _close(parsed: int | None, exact: int) -> bool:
    """Equal to within what two decimals of the message's unit keep."""
    return parsed is not None and abs(parsed - exact) <= max(exact * 0.005, 0.01 * MiB)


def _unlabelled(text: str) -> list[str]:
    """Clauses of the explanation's first sentence that are a bare size, with no label."""
    facts = text.split(". Cause:")[0].split(", ")
    return [f for f in facts if re.fullmatch(r"\s*[\d.]+ (bytes|B|KiB|MiB|GiB|TiB)\s*", f)]


@given(
    requested=_SIZE,
    total=_SIZE,
    free=st.none() | _SIZE,
    allocated=_SIZE,
    unallocated=st.integers(0, 4 * GiB),
    allowed=st.none() | _SIZE,
    gpu=st.integers(0, 7),
)
def test_every_xpu_figure_is_read_and_labelled(
    requested: int,
    total: int,
    free: int | None,
    allocated: int,
    unallocated: int,
    allowed: int | None,
    gpu: int,
) -> None:
    if free is None:
        allowed = None  # the release without free memory had no cap clause either
    msg = xpu_message(
        requested=requested,
        total=total,
        free=free,
        allocated=allocated,
        unallocated=unallocated,
        allowed=allowed,
        gpu=gpu,
    )
    result = torchport.explain_oom(torch.OutOfMemoryError(msg))
    assert (result.backend, result.device) == ("xpu", f"xpu:{gpu}")
    assert _close(result.requested, requested) and _close(result.total, total)
    assert _close(result.allocated, allocated)
    assert _close(result.reserved_unallocated, unallocated)
    assert (result.free is None) == (free is None)
    if free is not None:
        assert _close(result.free, free)
    assert (result.allowed is None) == (allowed is None)
    text = str(result)
    assert _unlabelled(text) == []
    assert "in PyTorch tensors" in text and "reserved by PyTorch but unallocated" in text
    assert ("memory in all" in text) == (free is None)


def test_intel_extensions_xpu_wording_is_read() -> None:
    # a device PyTorch fills (2 GiB of 2.5): 1 GiB cached but split too small for the request
    msg = ipex_message(
        requested=20 * MiB, total=5 * GiB // 2, allocated=GiB, reserved=2 * GiB, gpu=1
    )
    result = torchport.explain_oom(msg)
    assert (result.backend, result.device) == ("xpu", "xpu:1")
    assert result.total == 5 * GiB // 2 and result.allocated == GiB
    assert result.reserved_unallocated == GiB
    assert "torch.xpu.empty_cache()" in result.next_step
    assert _unlabelled(str(result)) == []


@given(
    reserved=st.integers(0, 8 * GiB),
    cached=st.integers(0, GiB),
    requested=_SIZE,
    total=_SIZE,
    wording=st.sampled_from(["xpu", "ipex", "xpu with free"]),
)
def test_a_device_pytorch_did_not_fill_is_held_elsewhere(
    reserved: int, cached: int, requested: int, total: int, wording: str
) -> None:
    """PyTorch's allocator frees its cache and retries before it gives up, so when what it
    reserved plus the request is far below the device, the memory was held elsewhere
    (other processes, another library, a platform limit), whatever the cache looks like."""
    allocated = max(reserved - cached, 0)
    if wording == "ipex":
        msg = ipex_message(
            requested=requested, total=total, allocated=allocated, reserved=reserved, gpu=0
        )
    else:
        outside = total - reserved  # all of the rest held by someone, none free
        free = min(requested // 2, max(outside, 0)) if wording == "xpu with free" else None
        msg = xpu_message(
            requested=requested,
            total=total,
            free=free,
            allocated=allocated,
            unallocated=reserved - allocated,
        )
    result = torchport.explain_oom(torch.OutOfMemoryError(msg))
    # the message rounds each figure to two decimals of its unit: stay clear of the edges
    margin = 0.02 * total + 0.02 * (reserved + requested)
    if requested > total * 1.01:
        assert result.case is OomCase.REQUEST_TOO_LARGE
    elif reserved + requested + margin < total / 2:
        assert result.case is OomCase.HELD_ELSEWHERE, msg
        assert "held outside PyTorch" in result.next_step
    elif reserved + requested > total * 1.02:
        assert result.case is not OomCase.HELD_ELSEWHERE


def format_size_bytes(size: int | None) -> str:
    """How the explanation writes a size (torchport._sizes.format_bytes), for a lookup."""
    from torchport._sizes import format_bytes

    return format_bytes(size)


# -- real messages from public reports -------------------------------------------------------

_REPORTED = json.loads((Path(__file__).parent / "data" / "oom_messages.json").read_text())


@pytest.mark.parametrize(
    "report", _REPORTED, ids=[r["url"].split("github.com/")[1] for r in _REPORTED]
)
def test_real_messages_are_read_in_full_and_explained(report: dict[str, Any]) -> None:
    """Each message as a user pasted it (URL in the data file): every figure it states is
    read, the cause is the one its figures decide, and the error it came in is one
    is_out_of_memory() recognises. Pasted text is explained without this machine's RAM."""
    from torchport.diagnose._oom import is_out_of_memory

    found = torchport.explain_oom(report["message"])
    assert found.backend == report["backend"]
    assert found.case.value == report["case"], found.next_step
    for key, text in report["figures"].items():
        value = found.this_process - found.allocated if key == "other" else getattr(found, key)
        assert value == parse_size(text), key
    if found.backend == "cpu":
        assert (found.total, found.free, found.allowed) == (None, None, None)
        # what the message says, and what it does not, never a figure it lacks
        assert "does not state how much RAM" in found.next_step
        assert format_size_bytes(found.requested) in found.next_step
    assert "n/a" not in str(found)
    assert is_out_of_memory(RuntimeError(report["message"]))
    assert found.next_step
    if found.case is OomCase.PLATFORM_LIMIT:
        assert "batch size" not in found.next_step and "fragment" not in found.next_step


def test_the_collection_covers_every_backend_and_wording() -> None:
    backends = {r["backend"] for r in _REPORTED}
    assert backends == {"cuda", "hip", "xpu", "mps", "npu", "dml", "cpu"}
    messages = [r["message"] for r in _REPORTED]
    for wording in (
        "GPU 0 has a total capacity",
        "total capacty",  # releases before 2.2
        "reserved in total by PyTorch",
        "cached)",  # releases before 1.5
        "would exceed allowed memory",
        "not enough memory",  # Windows
        "can't allocate memory",  # Linux, macOS
        "other allocations",
        "NPU out of memory",  # Ascend's torch_npu
        "There is not enough GPU video memory",  # torch-directml
        "CUBLAS_STATUS_ALLOC_FAILED",
        "Unable to find a valid cuDNN algorithm",  # Conv_v7.cpp's try_all
    ):
        assert any(wording in m for m in messages), wording
    assert len(_REPORTED) >= 20 and all(r["url"].startswith("https://") for r in _REPORTED)
    assert {OomCase(r["case"]) for r in _REPORTED} == set(OomCase) - {
        OomCase.PROCESS_LIMIT,
        OomCase.OTHER_PROCESSES,
    }


@given(
    requested=st.integers(1, 40 * GiB),
    free=st.integers(0, 40 * GiB),
    allocated=st.integers(0, 40 * GiB),
    unallocated=st.integers(0, 4 * GiB),
)
def test_free_above_the_request_is_never_the_batch_or_fragmentation(
    requested: int, free: int, allocated: int, unallocated: int
) -> None:
    total = 80 * GiB
    message = cuda_message(
        requested=requested, total=total, free=free, allocated=allocated, unallocated=unallocated
    )
    found = torchport.explain_oom(message)
    shown_free, shown_request = found.free or 0, found.requested or 0
    if shown_free >= shown_request + 64 * MiB and shown_free >= 0.05 * total:
        assert found.case is OomCase.PLATFORM_LIMIT  # room to spare on a roomy device
    assert found.case is not OomCase.FRAGMENTATION or (found.reserved_unallocated or 0) >= 0.1 * (
        (found.allocated or 0) + (found.reserved_unallocated or 0)
    )


@pytest.mark.parametrize(
    ("message", "library"),
    [
        # cuDNN's status names (cudnn.h) as torch's checks print them, and the workspace
        # check of aten/src/ATen/native/cudnn/Conv_v7.cpp (allocate_workspace); no public
        # report carrying these from PyTorch was found, so they are written from the sources
        ("cuDNN error: CUDNN_STATUS_NOT_ENOUGH_WORKSPACE", "cuDNN could not allocate"),
        ("cuDNN error: CUDNN_STATUS_ALLOC_FAILED", "cuDNN could not allocate"),
        ("Not enough memory for workspace!", "cuDNN could not allocate"),
        (
            "CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
            "cuBLAS could not allocate",
        ),
        (
            "Unable to find a valid cuDNN algorithm to run convolution",
            "torch.backends.cudnn.enabled = False",
        ),
    ],
)
def test_a_gpu_librarys_own_allocation_is_its_own_cause(message: str, library: str) -> None:
    """cuBLAS and cuDNN allocate beside PyTorch's tensors and state no figures: the cause
    names the library and says that the figures are not in the message."""
    from torchport.diagnose._oom import is_out_of_memory

    found = torchport.explain_oom(RuntimeError(message))
    assert found.case is OomCase.LIBRARY_WORKSPACE
    assert library in found.next_step and "states no figures" in found.next_step
    assert (found.requested, found.total, found.free) == (None, None, None)
    assert is_out_of_memory(RuntimeError(message))
    assert "n/a" not in str(found)


@given(
    requested=st.integers(1, 2**45),
    windows=st.booleans(),
    code=st.sampled_from([None, (12, "Cannot allocate memory")]),
)
def test_a_pasted_cpu_message_says_what_it_states_and_never_this_machines_figures(
    requested: int, windows: bool, code: tuple[int, str] | None
) -> None:
    """A CPU allocator's message pasted from a log: the request and the failed call are
    the message's; the RAM, what held it and any limit are not, and are not made up."""
    wording = "not enough memory" if windows else "can't allocate memory"
    tail = f" Error code {code[0]} ({code[1]})" if code else ""
    message = (
        f"[enforce fail at alloc_cpu.cpp:114] data. DefaultCPUAllocator: {wording}: you tried "
        f"to allocate {requested} bytes.{tail}"
    )
    found = torchport.explain_oom(message)
    assert (found.requested, found.total, found.free, found.allowed) == (
        requested,
        None,
        None,
        None,
    )
    text = str(found)
    assert "n/a" not in text
    assert format_size_bytes(requested) in found.next_step
    assert ("_aligned_malloc" in text) == windows and ("posix_memalign" in text) == (not windows)
    assert ("error code 12 (Cannot allocate memory)" in text) == (code is not None)
    assert "does not state how much RAM" in text


def test_an_ascend_npu_message_is_read_with_its_own_tools() -> None:
    message = next(r["message"] for r in _REPORTED if "TouchNet" in r["url"])
    found = torchport.explain_oom(message)
    assert (found.backend, found.device) == ("npu", "npu:3")
    assert "PYTORCH_NPU_ALLOC_CONF=expandable_segments:True" in found.next_step
