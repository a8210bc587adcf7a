"""CUDA's device rules, as the simulated accelerator enforces them.

Which mixes of devices an op accepts, and the errors CUDA raises for the rest,
worded as CUDA words them with ``sim:0`` in place of ``cuda:0``:

* Tensors of one op must share a device, except a 0-dim CPU tensor where CUDA takes
  it as a scalar: which ops, which arguments and how many is
  :mod:`torchport.sim._cpu_scalars`' (never an output, never for ops whose wrapper
  checks devices, one per TensorIterator, only ``tensor2`` of ``addcmul``, ...).
* Lengths CUDA reads on the host may stay there (``ctc_loss``'s lengths).
* Indices of ``x[index]`` may stay on the host (CUDA copies them to the device);
  indices on the device for a host tensor are refused. Where the value ``index_put_``
  writes may be is :mod:`torchport.sim._index_put`'s.
* ``pack_padded_sequence``'s lengths must be a CPU tensor.
* A random op that fills a device tensor draws from a generator of that device: a
  ``torch.Generator()`` of the CPU passed to it is refused (ATen's ``check_generator``).
* ``.numpy()`` of a device tensor is refused with CUDA's ``TypeError``.

Which ops make the host wait is not decided here: :mod:`torchport.diagnose`'s op
table answers that for the simulated device and the audit alike.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import torch

from torchport.sim._cpu_scalars import refused
from torchport.sim._wrapper_check import wrapper_refusal

__all__ = ["HOST_OUTPUTS", "check_devices", "check_generator", "check_written", "numpy_refusal"]

_aten = torch.ops.aten

# Ops whose indices may live on the host while the indexed tensor is on the device.
_HOST_INDICES = frozenset(
    {
        _aten.index.Tensor,
        _aten.index_put_.default,
        _aten.index_put.default,
        _aten._index_put_impl_.default,
    }
)

# Ops one of whose outputs stays on the host on CUDA: output position -> kept on the host.
HOST_OUTPUTS: dict[Any, frozenset[int]] = {
    _aten._pack_padded_sequence.default: frozenset({1}),  # batch_sizes
}

_LENGTHS_ON_HOST = frozenset({_aten._pack_padded_sequence.default})

# Ops that may take some arguments (by position among the tensors) on the host.
_HOST_ARGUMENTS: dict[Any, frozenset[int]] = {
    _aten._ctc_loss.Tensor: frozenset({2, 3}),  # input_lengths, target_lengths
    _aten.ctc_loss.Tensor: frozenset({2, 3}),
}


def layout_refusal(layout: torch.layout) -> NotImplementedError:
    """What the simulated device raises for a tensor it cannot hold (sparse layouts).

    ``NotImplementedError``, what torch raises for a kind of tensor a backend cannot hold,
    so ``to_device``, ``DeviceLoader`` and module moves name the tensor's path.
    """
    return NotImplementedError(
        f"a {layout} tensor cannot live on the simulated accelerator (it holds strided "
        "tensors only; on a real accelerator this copy works); keep it on the CPU, or call "
        ".to_dense() before moving it"
    )


def numpy_refusal(device: torch.device) -> TypeError:
    """The ``TypeError`` CUDA raises for ``.numpy()`` of a device tensor."""
    return TypeError(
        f"can't convert {device} device type tensor to numpy. Use Tensor.cpu() to copy the "
        "tensor to host memory first."
    )


def _mixed(first: torch.device, second: torch.device, func: Any) -> RuntimeError:
    return RuntimeError(
        f"Expected all tensors to be on the same device, but found at least two devices, "
        f"{first} and {second}! (when checking argument for {func})"
    )


def check_devices(
    func: Any,
    tensors: Sequence[torch.Tensor],
    device: torch.device,
    names: Callable[[], Sequence[str]] | None = None,
) -> None:
    """Raise as CUDA would when ``func``'s tensor arguments mix ``device`` with the host.

    Args:
        func: The aten overload about to run.
        tensors: Its tensor arguments, in schema order (``self`` first).
        device: The simulated device.
        names: The schema name of each tensor, asked only to word a refusal as CUDA's
            dispatcher wrapper words it (naming the argument) for the ops it checks.

    Raises:
        RuntimeError: The arguments mix devices in a way CUDA refuses.
    """
    if func in _LENGTHS_ON_HOST:
        lengths = tensors[1]
        if lengths.device.type != "cpu":
            raise RuntimeError(
                "'lengths' argument should be a 1D CPU int64 tensor, but got "
                f"{lengths.dim()}D {lengths.device} {_type_name(lengths)} tensor"
            )
        return
    if func in _HOST_INDICES:
        base = tensors[0]
        if base.device.type == "cpu":
            indices = tensors[1:] if func is _aten.index.Tensor else tensors[1:-1]  # not values
            for index in indices:
                if index.device != base.device and index.dim() > 0:
                    raise RuntimeError(
                        "indices should be either on cpu or on the same device as the indexed "
                        "tensor (cpu)"
                    )
        return
    on_host = _HOST_ARGUMENTS.get(func, frozenset())
    if all(tensor.device == device for tensor in tensors):
        return
    known = list(names()) if names is not None else [""] * len(tensors)
    if on_host:  # lengths CUDA reads on the host: out of the comparison
        kept = [p for p in range(len(tensors)) if p not in on_host]
        tensors, known = [tensors[p] for p in kept], [known[p] for p in kept]
    found = refused(func, tensors, known, device)
    if found is not None:
        position, words = found
        if words is not None:
            raise RuntimeError(words)
        named = wrapper_refusal(func, tensors, known) if names is not None else None
        raise named or _mixed(device, tensors[position].device, func)


@functools.cache
def _generator_positions(func: Any) -> tuple[int, ...]:
    """Positions of ``func``'s generator arguments passed by position (``rrelu_with_noise``);
    most schemas take theirs by keyword only, which arrives in ``kwargs``."""
    return tuple(
        position
        for position, argument in enumerate(func._schema.arguments)
        if not argument.kwarg_only and "Generator" in str(argument.type)
    )


def check_generator(
    func: Any, args: Sequence[Any], kwargs: dict[str, Any], device: torch.device
) -> None:
    """Raise as CUDA would when a random op on ``device`` is given another device's generator.

    ATen's ``check_generator`` (``ATen/core/Generator.h``) compares the generator's device
    type with the kernel's: ``torch.randn(3, device="cuda", generator=torch.Generator())``
    raises ``RuntimeError: Expected a 'cuda' device type for generator but found 'cpu'``.

    Args:
        func: The aten overload about to run on ``device``.
        args: Its positional arguments.
        kwargs: Its keyword arguments.
        device: The simulated device.

    Raises:
        RuntimeError: The generator belongs to another device type.
    """
    generator = kwargs.get("generator")
    if generator is None:
        positions = _generator_positions(func)
        if not positions:
            return
        generator = next(
            (args[p] for p in positions if p < len(args) and args[p] is not None), None
        )
    if isinstance(generator, torch.Generator) and generator.device.type != device.type:
        raise RuntimeError(
            f"Expected a '{device.type}' device type for generator but found "
            f"'{generator.device.type}'"
        )


def check_written(func: Any, written: torch.Tensor, device: torch.device) -> None:
    """Raise as CUDA would when a device op writes into a host tensor (``out=``, ``t.add_``)."""
    if written.device != device:
        raise _mixed(device, written.device, func)


def _type_name(tensor: torch.Tensor) -> str:
    names = {torch.int64: "Long", torch.int32: "Int", torch.float32: "Float"}
    return names.get(tensor.dtype, str(tensor.dtype).removeprefix("torch."))
