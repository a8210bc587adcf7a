"""Results made in inference mode on the simulated device: a view of a normal tensor is normal.

Every op's result gets a new wrapper (:mod:`._tensor`); in inference mode that wrapper
would be an inference tensor even where CUDA gives a normal one (a view of a normal
tensor), and autograd's view kernel then refuses it.
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["normal_bases", "wrap_in_inference_mode"]


def normal_bases(args: tuple[Any, ...], sim: type[torch.Tensor]) -> set[int]:
    """The storages holding each normal (not inference) device tensor among ``args``."""
    return {
        item._raw.untyped_storage()._cdata  # type: ignore[attr-defined]
        for arg in args
        for item in (arg if isinstance(arg, list | tuple) else (arg,))
        if isinstance(item, sim) and not item.is_inference()
    }


def wrap_in_inference_mode(out: Any, bases: set[int], sim: type[torch.Tensor]) -> Any:
    """``sim(out)`` (``sim``: the simulated tensor's class) made in inference mode, where a
    view of a normal tensor is a normal tensor.

    Autograd's view kernel gives such a view the base's version counter after this
    returns, and refuses an inference tensor ("Cannot set version_counter for inference
    tensor"); a wrapper made in inference mode is one, so the wrapper of a result whose
    values share a normal argument's storage is made outside it. Every other
    result is an inference tensor, as on CUDA.
    """
    if isinstance(out, list | tuple):
        wrapped = [wrap_in_inference_mode(item, bases, sim) for item in out]
        return wrapped if isinstance(out, list) else tuple(wrapped)
    if not isinstance(out, torch.Tensor) or isinstance(out, sim):
        return out
    if out.untyped_storage()._cdata in bases:
        with torch.inference_mode(False):
            return sim(out)
    return sim(out)
