"""How CUDA words a device mismatch its dispatcher wrapper finds: naming the argument.

For most ops with a CUDA kernel, torch's codegen wraps the kernel in a function that
compares the devices of the tensor arguments, in schema order, before the kernel runs
(``c10::impl::common_device_check_failure``): "Expected all tensors to be on the same
device, but got offsets is on cpu, different from other tensors on cuda:0 (when
checking argument in method wrapper_CUDA___embedding_bag_forward_only)". Ops marked
``device_check: NoCheck`` in ``native_functions.yaml`` check in their kernel instead
(TensorIterator's "found at least two devices"), and so do ops without a CUDA entry.

The wrapper compares every tensor among the op's out and positional arguments
(torchgen's ``gen_device_check``, run for CUDA's keys only: ``device_guard`` is set for
CUDA-like keys, never for ``CompositeExplicitAutograd``), a 0-dim CPU tensor included:
:func:`wrapper_checks` names them for :mod:`torchport.sim._cpu_scalars`, which decides.
Which ops the wrapper checks is read from the ``native_functions.yaml`` torch ships (in
``torchgen``), on the mixed-device path only; this module words the refusal.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

__all__ = ["argument_names", "wrapper_checks", "wrapper_refusal"]

_FUNC = re.compile(r"^- func: ([\w.]+)\(")


@functools.cache
def _checked() -> dict[str, bool]:
    """``name.overload`` -> whether its wrapper is structured, for ops whose CUDA wrapper
    checks devices; empty where torch ships no ``native_functions.yaml``."""
    spec = importlib.util.find_spec("torchgen")  # shipped with torch; not imported
    if spec is None or spec.origin is None:  # pragma: no cover
        return {}
    path = Path(spec.origin).parent / "packaged/ATen/native/native_functions.yaml"
    if not path.is_file():  # pragma: no cover
        return {}
    checked: dict[str, bool] = {}
    entries = path.read_text().split("\n- func: ")
    for entry in entries[1:]:
        head = _FUNC.match("- func: " + entry)
        if head is None or "device_check: NoCheck" in entry:
            continue
        structured = "structured_delegate:" in entry
        cuda = re.search(r"^    [\w, ]*\bCUDA\b[\w, ]*:", entry, re.MULTILINE) is not None
        if cuda or structured:
            checked[head.group(1)] = structured
    return checked


# Ops whose CUDA path is another op's kernel, which checks (and names) the arguments:
# ``embedding`` indexes the weight with ``index_select(weight, 0, indices)``.
_STANDS_FOR = {"embedding": ("wrapper_CUDA__index_select", {"weight": "self", "indices": "index"})}


def _key(func: Any) -> str:
    schema = func._schema
    name = schema.name.removeprefix("aten::")
    return f"{name}.{schema.overload_name}" if schema.overload_name else name


@functools.cache
def wrapper_checks(func: Any) -> frozenset[str]:
    """The arguments whose devices CUDA's wrapper for ``func`` compares (its out and positional
    tensors: ``nextafter(t, s)``, ``clamp(t, min=s)`` raise there); empty where it checks none."""
    if _key(func) not in _checked():
        return frozenset()
    return frozenset(
        argument.name
        for argument in func._schema.arguments
        if not argument.kwarg_only or argument.is_out
    )


def _method(func: Any) -> str | None:
    schema = func._schema
    name = schema.name.removeprefix("aten::")
    if name in _STANDS_FOR:
        return _STANDS_FOR[name][0]
    structured = _checked().get(_key(func))
    if structured is None:
        return None
    overload = schema.overload_name
    if structured:
        return f"wrapper_CUDA_{name}" + (f"_{overload}" if overload else "")
    return f"wrapper_CUDA_{overload}_{name}"


def argument_names(func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> list[str]:
    """The schema name of each tensor in ``args`` then ``kwargs``, in the order the simulator
    collects them (a tensor list's tensors all take the list's name)."""
    arguments = func._schema.arguments
    names: list[str] = []
    values = [(arguments[i].name if i < len(arguments) else "", v) for i, v in enumerate(args)]
    values += list(kwargs.items())
    for name, value in values:
        items = value if isinstance(value, list | tuple) else [value]
        names += [name for item in items if isinstance(item, torch.Tensor)]
    return names


def wrapper_refusal(
    func: Any, tensors: Sequence[torch.Tensor], names: Sequence[str]
) -> RuntimeError | None:
    """CUDA's wrapper message for ``func``'s ``tensors`` (named ``names``), or ``None``
    where CUDA's wrapper does not check this op or the tensors share one device."""
    method = _method(func)
    if method is None or not tensors:
        return None
    common = tensors[0].device
    renamed = _STANDS_FOR.get(func._schema.name.removeprefix("aten::"), ("", {}))[1]
    for tensor, name in zip(tensors, names, strict=False):
        if tensor.device != common:
            name = renamed.get(name, name)
            return RuntimeError(
                f"Expected all tensors to be on the same device, but got {name} is on "
                f"{tensor.device}, different from other tensors on {common} (when checking "
                f"argument in method {method})"
            )
    return None
