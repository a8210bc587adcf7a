"""torchport.hardware: the ground floor, the code that asks torch about hardware.

Everything above it (``place``, ``feed``, ``diagnose``, ``run``, ``bench``)
imports these names instead of asking torch itself; ``tests/hardware/test_floor.py``
fails on a ``torch.cuda``/``torch.mps``/``torch.xpu``/``torch.accelerator`` call
elsewhere (run's CUDA stand-ins are its listed exception), and, inside the floor,
outside the :class:`Backend` and ``_torch_features.py``:

* devices (``_device_facts.py``): :func:`parse_device` parses and normalises what users
  pass as a device (:func:`device_spec` its reading of a device string, for
  callers to whom presence does not matter); :func:`accelerator_type`,
  :func:`device_count`, :func:`current_index`, :func:`device_name`,
  :func:`memory_info` and :func:`list_devices` say what is there;
  :func:`device_error` builds the :class:`~torchport.DeviceError` messages
  (what was found, the devices available, what to pass).
* ordering (``_sync.py``): :func:`synchronize` and :func:`wait_for_copies` are the
  host waits of moves and loaders; :func:`new_stream`, :func:`current_stream`,
  :func:`use_stream` and :func:`new_event` make streams and events (outside the
  floor only timing code waits on its own events: ``test_floor.py`` lists it);
  :func:`record_stream` guards memory used across streams.
* what this torch offers (``_torch_features.py``): the module that knows torch's
  version (``tests/hardware/test_torch_features.py`` pins that): :data:`FLOOR` and
  :func:`below_floor`, and the feature tests the floor's own modules use;
  :data:`LR_SCHEDULER_BASES`, :data:`GRAD_SCALER` and :data:`DEVICE_FAILURES` for ``place``.
* the build and its devices (``_inventory.py``): :func:`build_facts`,
  :func:`driver_version`, :func:`accelerator_info`, :func:`gpu_properties`,
  :func:`cuda_contexts`, :func:`free_memory` (with its source) and
  :func:`allocator_stat`: the facts ``doctor`` and ``memory_report`` judge; the PCIe
  link a CUDA device sits on and its peak rate (``_pcie.py``): :func:`pcie_link`.
* memory (``_pinned.py``, ``_staging_pool.py``): :class:`PinnedBuffer` (page-locked
  host memory at the size asked), :class:`StagingPool` (reused staging buffers
  guarded by events).
* copies (``_copy.py``; packing in ``_packed_transfer.py``): :func:`plan_copy` decides
  once per call how each tensor reaches the target (stay, direct ``Tensor.to``,
  or staged and packed);
  :meth:`CopyPlan.run` executes it; :func:`copy_tensors` does both;
  :func:`copy_one` takes the same routes for callers handed one tensor at a time.

Tests fake an accelerator at the :class:`Backend`: ``with install(FakeBackend(...))``
replaces the backend every function above asks (``tests/conftest.py``
has the fixture). Policy (which device to choose) lives in ``place``.
"""

from __future__ import annotations

from torchport.hardware._backend import Backend, install
from torchport.hardware._copy import (
    CopyPlan,
    Transfer,
    copy_one,
    copy_tensors,
    plan_copy,
    should_pack,
    stageable,
)
from torchport.hardware._device_facts import (
    DeviceInfo,
    accelerator_present,
    accelerator_type,
    backend_installed,
    cpu_info,
    current_index,
    device_count,
    device_error,
    device_name,
    device_spec,
    list_devices,
    memory_info,
    named_type,
    parse_device,
    parsed_cache,
)
from torchport.hardware._inventory import (
    AcceleratorInfo,
    BuildFacts,
    GpuProperties,
    accelerator_info,
    allocator_function,
    allocator_stat,
    build_facts,
    cuda_contexts,
    driver_version,
    free_memory,
    gpu_properties,
)
from torchport.hardware._packed_transfer import ALIGN, PACK_MIN_COUNT
from torchport.hardware._pcie import PcieLink, pcie_link
from torchport.hardware._pinned import PinnedBuffer, pins_for
from torchport.hardware._staging_pool import StagingPool, default_pool, size_class
from torchport.hardware._sync import (
    current_stream,
    new_event,
    new_stream,
    record_stream,
    sync_debug_mode_reader,
    synchronize,
    use_stream,
    wait_for_copies,
)
from torchport.hardware._torch_features import (
    DEVICE_FAILURES,
    FLOOR,
    GRAD_SCALER,
    LR_SCHEDULER_BASES,
    accelerator_function,
    below_floor,
    legacy_storage,
    python_device_backend,
    setitem_number_copies_into_a_zero_dim_view,
    setitem_number_fills_by_index,
)

__all__ = [
    "ALIGN",
    "DEVICE_FAILURES",
    "FLOOR",
    "GRAD_SCALER",
    "LR_SCHEDULER_BASES",
    "PACK_MIN_COUNT",
    "AcceleratorInfo",
    "Backend",
    "BuildFacts",
    "CopyPlan",
    "DeviceInfo",
    "GpuProperties",
    "PcieLink",
    "PinnedBuffer",
    "StagingPool",
    "Transfer",
    "accelerator_function",
    "accelerator_info",
    "accelerator_present",
    "accelerator_type",
    "allocator_function",
    "allocator_stat",
    "backend_installed",
    "below_floor",
    "build_facts",
    "copy_one",
    "copy_tensors",
    "cpu_info",
    "cuda_contexts",
    "current_index",
    "current_stream",
    "default_pool",
    "device_count",
    "device_error",
    "device_name",
    "device_spec",
    "driver_version",
    "free_memory",
    "gpu_properties",
    "install",
    "legacy_storage",
    "list_devices",
    "memory_info",
    "named_type",
    "new_event",
    "new_stream",
    "parse_device",
    "parsed_cache",
    "pcie_link",
    "pins_for",
    "plan_copy",
    "python_device_backend",
    "record_stream",
    "setitem_number_copies_into_a_zero_dim_view",
    "setitem_number_fills_by_index",
    "should_pack",
    "size_class",
    "stageable",
    "sync_debug_mode_reader",
    "synchronize",
    "use_stream",
    "wait_for_copies",
]
