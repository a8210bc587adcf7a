"""faiss's GPU entries: calls that need CUDA anyway (``rules/_cuda_projects.py``).

faiss has CPU builds (faiss-cpu) and GPU builds (faiss-gpu: CUDA; its ROCm build keeps the
CUDA names, as torch calls a ROCm device "cuda"). Only a GPU build has these entries, and each
needs a GPU when it runs: ``StandardGpuResources()``, a ``GpuIndex*`` class
(``GpuIndexFlatIP(res, dim)``), a copy of an index to GPUs (``index_cpu_to_gpu``,
``index_cpu_to_all_gpus``, ...). Held-out sample AC's court-vision re-ID class and scripts
(judged low (a)) build a GPU index so. ``import faiss``, its CPU indexes (``IndexFlatIP``),
``normalize_L2``, ``get_num_gpus()`` (0 on a CPU build) and ``faiss.contrib.torch_utils`` run
anywhere and are no sign; neither is a faiss GPU call behind an ``if``, a ``try``, a loop or a
``with`` (``_cuda_projects``: a call counts where it runs on every run of the function or
module body holding it, as apex's CUDA-only entries do).
"""

from __future__ import annotations

__all__ = ["faiss_gpu"]

_COPIES = frozenset(
    {"index_cpu_to_gpu", "index_cpu_to_gpus_list", "index_cpu_to_all_gpus"}
    | {"index_cpu_to_gpu_multiple", "index_cpu_to_gpu_multiple_py"}
)


def faiss_gpu(called: str) -> bool:
    """``called`` (a qualified name) is one of faiss's GPU entries (above)."""
    parts = called.split(".")
    if parts[0] != "faiss" or len(parts) < 2:
        return False
    tail = parts[-1]
    return tail == "StandardGpuResources" or tail.startswith("GpuIndex") or tail in _COPIES
