"""TP109 on generated ``if torch.cuda.is_available():`` bodies that fill a report (sample AF).

Held-out sample AF's runtime monitor (``result["cuda"] = {"device": i, "allocated_bytes":
int(torch.cuda.memory_allocated(i)), ...}``) and a model's set-up resetting CUDA's memory
statistics were judged noise: the branch picks no device. Oracle (by hand, per statement):
a statement places data or picks a device on CUDA (a move, a ``"cuda"`` value, a device
fetched by the key ``"cuda"``), or only records or resets CUDA's memory counters. The branch
is a CUDA-or-CPU choice exactly when one of its statements places.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_source

PLACES = [
    "model = model.cuda()",
    "result['device'] = 'cuda'",
    "dev = devices['cuda']",
    "x = x.to(devices['cuda'])",
    "stats = {'device': 'cuda'}",
    "y = torch.zeros(2, device=torch.cuda.current_device())",
    "i = torch.cuda.current_device()\n    x = x.to(i)",
    "torch.cuda.set_device(0)",
]
RECORDS = [
    "result['cuda'] = {'allocated': int(torch.cuda.memory_allocated()),"
    " 'reserved': torch.cuda.memory_reserved()}",
    "i = torch.cuda.current_device()\n    result['cuda'] = {'device': i,"
    " 'allocated_bytes': int(torch.cuda.memory_allocated(i)),"
    " 'max_reserved_bytes': float(torch.cuda.max_memory_reserved(i))}",
    "counts = {'cuda': round(torch.cuda.memory_allocated() / 2**20)}",
    "torch.cuda.reset_peak_memory_stats()",
    "torch.cuda.reset_accumulated_memory_stats()",
    "torch.cuda.reset_max_memory_allocated()",
    "del result['cuda']",
]


def _indented(statements: str) -> str:
    return "".join(f"        {line.strip()}\n" for line in statements.splitlines())


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(PLACES + RECORDS), min_size=1, max_size=3))
def test_a_branch_is_a_choice_only_where_it_places(body: list[str]) -> None:
    source = (
        "import torch\n\ndef stats(model, x, devices):\n    result = {}\n"
        "    if torch.cuda.is_available():\n"
        + "".join(_indented(s) for s in body)
        + "    return result\n"
    )
    reported = 5 in {f.line for f in check_source(source, select=["TP109"])}
    assert reported == any(s in PLACES for s in body), source


def test_a_number_of_a_shadowed_int_is_no_fact() -> None:
    """``int`` bound by the module is not the builtin: its value may be anything."""
    source = (
        "import torch\n\ndef int(v):\n    return torch.device(v)\n\ndef stats():\n"
        "    result = {}\n    if torch.cuda.is_available():\n"
        "        i = torch.cuda.current_device()\n"
        "        result['gpu'] = {'device': int(i), 'bytes': torch.cuda.memory_allocated(i)}\n"
        "    return result\n"
    )
    assert 8 in {f.line for f in check_source(source, select=["TP109"])}


def test_tp103_offers_no_fix_for_a_branch_filling_a_cuda_entry() -> None:
    """TP109 alone reads a ``"cuda"`` key as no device: TP103's ``.device.type != "cpu"`` fix
    would file MPS tensors under ``"cuda"``, so it is still withheld (as on the base)."""
    source = (
        "import torch\n\ndef count(x, counts):\n    if x.is_cuda:\n"
        "        counts['cuda'] = counts.get('cuda', 0) + 1\n    return counts\n"
    )
    found = [f for f in check_source(source, select=["TP103"]) if f.line == 4]
    assert found and found[0].fix is None
