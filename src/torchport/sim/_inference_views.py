"""Views on the simulated device are inference tensors exactly where CUDA's are.

Every op's result gets a new wrapper (:mod:`._tensor`), and a wrapper is an inference
tensor when it is made in inference mode. torch's rule is the base's: a view of a normal
tensor is normal (also in inference mode), a view of an inference tensor is an inference
tensor (also outside it), every other result made in inference mode is one. Left to the
mode, a view of a normal tensor made in inference mode was an inference tensor, and
autograd's view kernel refused it ("Cannot set version_counter for inference tensor"); a
view of an inference tensor made outside it (``w.t()`` inside ``F.linear`` of a module
moved under ``torch.inference_mode()``) was a normal tensor that autograd saved for
backward, where CUDA raises "Inference tensors cannot be saved for backward".
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["wrap_result"]


def _bases(args: tuple[Any, ...], sim: type[torch.Tensor], *, inference: bool) -> set[int]:
    """The storages holding each device tensor among ``args`` that is (or is not) an
    inference tensor."""
    return {
        item._raw.untyped_storage()._cdata  # type: ignore[attr-defined]
        for arg in args
        for item in (arg if isinstance(arg, list | tuple) else (arg,))
        if isinstance(item, sim) and item.is_inference() is inference
    }


def wrap_result(out: Any, args: tuple[Any, ...], sim: type[torch.Tensor]) -> Any:
    """``sim(out)`` for each plain tensor in ``out``, an op's results on the values inside
    (``sim``: the simulated tensor's class), inference tensors as torch makes them.

    A result whose values share the storage of an argument of the other kind than the
    mode makes (a normal argument in inference mode, an inference one outside it) is
    that argument's view, and its wrapper is made in that argument's mode.
    """
    inside = torch.is_inference_mode_enabled()
    return _wrapped(out, _bases(args, sim, inference=not inside), sim, not inside)


def _wrapped(out: Any, bases: set[int], sim: type[torch.Tensor], inference: bool) -> Any:
    if isinstance(out, list | tuple):
        wrapped = [_wrapped(item, bases, sim, inference) for item in out]
        return wrapped if isinstance(out, list) else tuple(wrapped)
    if not isinstance(out, torch.Tensor) or isinstance(out, sim):
        return out
    if bases and out.untyped_storage()._cdata in bases:
        with torch.inference_mode(inference):
            return sim(out)
    return sim(out)
