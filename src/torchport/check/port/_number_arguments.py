"""Arguments of torch's calls that are numbers, never data: sizes, dims, counts, flags.

What the device flow (:mod:`._device_flow`) does not meet with the tensor a call makes or is
asked of: ``torch.ones((batch_size,) + input_size)``, ``x.view(n, -1)``, ``out.topk(k)``.
"""

from __future__ import annotations

__all__ = ["NUMBER_ARGUMENTS", "SHAPE_METHODS", "SIZED"]

# Creators whose arguments are sizes and numbers, never data: what meets their tensor does not
# meet those (`torch.ones((batch_size,) + input_size)`: no tensor there to move; d31ai).
SIZED = frozenset(
    f"torch.{n}"
    for n in ("zeros", "ones", "empty", "full", "arange", "linspace", "logspace", "eye", "rand",
              "randn", "randint", "randperm", "tril_indices", "triu_indices")
)  # fmt: skip
# Tensor methods whose arguments are sizes, dims or offsets, never data: `x.view(n, -1)`.
SHAPE_METHODS = frozenset(
    {"view", "reshape", "narrow", "expand", "repeat", "permute", "transpose", "unsqueeze",
     "squeeze", "flatten", "unflatten", "movedim", "swapaxes", "unfold", "chunk", "select",
     "roll", "t", "contiguous"}
)  # fmt: skip
# Tensor methods whose every argument is a count, a dim or a flag (`out.topk(k)`): asked of a
# device value, what they are given is read as a number, never met as data (issue 31, n31al).
NUMBER_ARGUMENTS = frozenset(
    {"topk", "kthvalue", "softmax", "log_softmax", "argmax", "argmin", "argsort", "cumsum",
     "cumprod", "logsumexp", "tril", "triu", "diagonal", "flip", "tile", "split", "sum",
     "mean", "prod", "std", "var", "all", "any", "median", "mode", "nansum", "nanmean"}
)  # fmt: skip
