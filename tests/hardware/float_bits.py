"""Float tensors with random bit patterns: NaN payloads, signalling NaNs, subnormals, infs.

A copy that goes through float arithmetic can quiet a signalling NaN or make every NaN
the canonical one; values drawn from ``randn`` never show it. The packed-copy tests
(on the CPU here, on the simulator in a child, ``tests/feed/test_pack_on_sim.py``) mix
these bits into their sources, and compare bytes.
"""

from __future__ import annotations

import torch

# The exponent bits of each float dtype whose bit patterns are drawn.
EXPONENT = {
    torch.float16: 0x7C00,
    torch.bfloat16: 0x7F80,
    torch.float32: 0x7F800000,
    torch.float64: 0x7FF0000000000000,
}
_SAME_WIDTH = {2: torch.int16, 4: torch.int32, 8: torch.int64}


def with_raw_bits(t: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """``t`` with about half its elements random bit patterns, a quarter NaN or inf.

    ``t`` is returned as it is unless its dtype is one of :data:`EXPONENT`'s.
    """
    if t.dtype not in EXPONENT:
        return t
    same_width = _SAME_WIDTH[t.dtype.itemsize]
    info = torch.iinfo(same_width)
    shape = t.shape
    bits = torch.randint(info.min, info.max, shape, generator=generator, dtype=same_width)
    pick = torch.randint(0, 4, shape, generator=generator)
    bits = torch.where(pick == 0, bits | EXPONENT[t.dtype], bits)  # exponent all ones
    return torch.where(pick < 2, bits, t.view(same_width)).view(t.dtype)
