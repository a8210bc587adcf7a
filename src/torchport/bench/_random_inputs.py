"""Inputs for the suites: fresh random tensors shaped like real training batches.

Data is random, never zeros: an all-zero buffer can be served from a
zero-page or compressed by a link or driver, and would flatter a copy.
"""

from __future__ import annotations

from typing import Any

import torch

from torchport import hardware

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB


def random_tensor(
    nbytes: int, *, dtype: torch.dtype = torch.float32, pin: bool = False
) -> torch.Tensor:
    """A 1-D CPU tensor of about ``nbytes`` bytes (at least one element) of random values.

    Args:
        nbytes: Target size; rounded down to whole elements.
        dtype: Floating, integer or bool.
        pin: Allocate in page-locked memory (needs an accelerator).
    """
    itemsize = torch.empty((), dtype=dtype).element_size()
    numel = max(1, nbytes // itemsize)
    out = torch.empty(numel, dtype=dtype, pin_memory=pin)
    if dtype.is_floating_point:
        out.normal_()
    elif dtype == torch.bool:
        out.copy_(torch.rand(numel) > 0.5)
    else:
        out.random_(0, 1 << 15)
    return out


def nested_batch(total_bytes: int, *, pin: bool = False) -> dict[str, Any]:
    """A nested batch of about ``total_bytes``, shaped like a vision-language step.

    An image tensor carries most of the bytes; labels, tokens, a mask, a list of
    small auxiliary tensors and non-tensor metadata make up the rest, so a mover
    must walk dicts, lists and non-tensor leaves.
    """
    tokens = max(1, total_bytes // 16)
    image = random_tensor(total_bytes - 2 * tokens - 4 * 4 * KIB, pin=pin)
    return {
        "image": image,
        "label": random_tensor(8 * 64, dtype=torch.int64, pin=pin),
        "text": {
            "tokens": random_tensor(tokens, dtype=torch.int64, pin=pin),
            "mask": random_tensor(tokens, dtype=torch.bool, pin=pin),
        },
        "aux": [random_tensor(4 * KIB, pin=pin) for _ in range(4)],
        "metadata": {"source": "bench", "epoch": 3},
    }


def many_leaf_batch(leaves: int = 1000, *, leaf_bytes: int = 16) -> dict[str, Any]:
    """A nested batch of exactly ``leaves`` small tensors across dicts, lists and tuples.

    Ten groups of leaves/10 tensors each: half in a list, a quarter in a tuple,
    the rest in a dict two levels down. Tiny tensors isolate traversal cost.
    """
    if leaves % 10:
        raise ValueError(f"leaves={leaves}: use a multiple of 10 (ten equal groups)")
    per_group = leaves // 10
    in_list = per_group // 2
    in_tuple = per_group // 4
    in_dict = per_group - in_list - in_tuple
    return {
        f"group{g}": {
            "list": [random_tensor(leaf_bytes) for _ in range(in_list)],
            "tuple": tuple(random_tensor(leaf_bytes) for _ in range(in_tuple)),
            "nested": {"inner": {f"t{i}": random_tensor(leaf_bytes) for i in range(in_dict)}},
        }
        for g in range(10)
    }


def tensor_leaves(batch: Any) -> list[torch.Tensor]:
    """Every tensor leaf of a batch built by this module, in walk order."""
    if isinstance(batch, torch.Tensor):
        return [batch]
    if isinstance(batch, dict):
        return [t for value in batch.values() for t in tensor_leaves(value)]
    if isinstance(batch, list | tuple):
        return [t for value in batch for t in tensor_leaves(value)]
    return []


def misplaced(moved: Any, device: torch.device | str, leaves: int) -> str | None:
    """Why ``moved`` is not ``leaves`` tensors all on ``device``'s type, or ``None`` if it is.

    Suites check each strategy's output once, so a mover that skips work cannot
    look fast.
    """
    found = tensor_leaves(moved)
    if len(found) != leaves:
        return f"wrong result: {len(found)} tensor leaves, expected {leaves}"
    want = hardware.parse_device(device).type
    wrong = {t.device.type for t in found} - {want}
    if wrong:
        return f"wrong result: leaves on {sorted(wrong)}, expected {want}"
    return None


def batch_bytes(batch: Any) -> int:
    """Total bytes of the tensor leaves of ``batch``."""
    return sum(t.numel() * t.element_size() for t in tensor_leaves(batch))
