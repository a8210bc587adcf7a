"""The checker's list of tensor attribute names holds every name ``torch.Tensor`` has.

The port takes a value read through an attribute outside the list for an object, never
a tensor (``memory.sample(n)``); a name the list lacked would make a tensor read that way
pass for an object, and its leftover go unsaid. A name too many only makes the port
report more.
"""

from __future__ import annotations

import torch

from torchport.check.port._tensor_attributes import TENSOR_ATTRIBUTES


def test_every_attribute_of_a_tensor_is_listed() -> None:
    has = {name for name in dir(torch.Tensor) if not name.startswith("__")}
    has |= {name for name in dir(torch.ones(1)) if not name.startswith("__")}
    missing = sorted(has - TENSOR_ATTRIBUTES)
    assert not missing, f"add these to check/port/_tensor_attributes.py: {missing}"


def test_the_objects_the_port_meets_are_not_tensors_by_their_attributes() -> None:
    """The attributes the sampled repositories read from buffers, configs, optimizers and
    environments are none of a tensor's (so those values are objects)."""
    for name in ("sample", "zero_grad", "step", "lr", "batch_size", "reset"):
        assert name not in TENSOR_ATTRIBUTES, name
    for name in ("to", "cuda", "view", "detach", "float", "size", "shape", "data", "grad"):
        assert name in TENSOR_ATTRIBUTES, name
