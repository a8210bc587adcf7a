"""Which tensor of a model is on the wrong device, judged against the whole model, and the fix.

:func:`torchport.strict` reads the module calls an error unwound; this module turns them
into a sentence. The home device is decided from the *whole* model (the outermost module
called, its parents' and siblings' tensors included), weighted by elements, never from the
failing layer alone: a layer's own tensors can all be the strays. When the model itself
holds tensors on more than one device, the message says the model is split and the first
fix offered is the one that makes the whole forward run (``model.to(device)``, then the
inputs), not one that only gets past the failing op. A module with buffers but no
parameters (a loss built with ``weight=``) follows its inputs instead: the fix moves
the module, since moving the inputs to its buffer's device would fail at the next
tensor of the model.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

import torch
from torch import nn

from torchport._device_types import CPU

__all__ = ["ModuleCall", "describe_calls", "significant", "unwrap"]


@dataclass
class ModuleCall:
    """One module seen in the traceback, with what it was called with."""

    module: nn.Module
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] | None = None
    arg_names: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Held:
    role: str  # "parameter", "buffer" or "plain tensor attribute"
    name: str  # qualified under the root module, e.g. "encoder.0.weight"
    device: torch.device
    numel: int

    @property
    def registered(self) -> bool:
        return self.role != "plain tensor attribute"


def significant(t: object) -> TypeGuard[torch.Tensor]:
    """A tensor whose device matters: a 0-dim CPU tensor mixes with any device (a scalar)."""
    return isinstance(t, torch.Tensor) and not (t.device.type == CPU and t.dim() == 0)


def unwrap(module: nn.Module) -> nn.Module:
    """The user's model inside a wrapper: ``torch.compile``'s ``OptimizedModule._orig_mod``,
    ``DataParallel``/``DistributedDataParallel``'s ``.module``; else the module itself.

    Paths are then named as the user wrote the model (``encoder.0``, not
    ``_orig_mod.encoder.0`` or ``module.encoder.0``).
    """
    inner = vars(module).get("_modules", {})
    if type(module).__name__ == "OptimizedModule" and inner.get("_orig_mod") is not None:
        return unwrap(inner["_orig_mod"])
    parallel = (nn.DataParallel, nn.parallel.DistributedDataParallel)
    if isinstance(module, parallel) and isinstance(inner.get("module"), nn.Module):
        return unwrap(inner["module"])  # absent while the wrapper's __init__ runs
    return module


def _clean(path: str) -> str:
    return ".".join(part for part in path.split(".") if part and part != "_orig_mod")


def _held(root: nn.Module) -> list[_Held]:
    """Every parameter, buffer and public plain tensor attribute of ``root``, by qualified name."""
    found: list[_Held] = []
    for prefix, module in root.named_modules(remove_duplicate=True):
        prefix = _clean(prefix)
        dotted = f"{prefix}." if prefix else ""
        for name, p in module._parameters.items():
            if p is not None:
                found.append(_Held("parameter", dotted + name, p.device, p.numel()))
        for name, b in module._buffers.items():
            if significant(b):
                found.append(_Held("buffer", dotted + name, b.device, b.numel()))
        for name, v in vars(module).items():
            if significant(v) and not name.startswith("_"):
                found.append(_Held("plain tensor attribute", dotted + name, v.device, v.numel()))
    return found


def _path(root: nn.Module, calls: list[ModuleCall]) -> str:
    """Dotted path of the innermost module under the root, e.g. ``encoder.layers.2.proj``."""
    target = calls[-1].module
    for name, sub in root.named_modules():
        if sub is target:
            return _clean(name)
    parts = []  # not registered under the root: join the hops we can see
    for outer, inner in itertools.pairwise(calls):
        hop = next((n for n, s in outer.module.named_modules() if s is inner.module), None)
        if hop is None:
            outer_name = type(outer.module).__name__
            return f"<{type(target).__name__}, not a registered submodule of {outer_name}>"
        if _clean(hop):
            parts.append(_clean(hop))
    return ".".join(parts)


def _inputs(call: ModuleCall) -> list[tuple[str, torch.device]]:
    found = []
    for i, arg in enumerate(call.args):
        name = call.arg_names[i] if i < len(call.arg_names) else None
        label = f"input {i}" + (f" ({name!r})" if name else "")
        found += _leaves(label, arg)
    for name, arg in (call.kwargs or {}).items():
        found += _leaves(f"input {name!r}", arg)
    return found


def _leaves(label: str, value: Any, depth: int = 0) -> list[tuple[str, torch.device]]:
    if significant(value):
        return [(label, value.device)]
    if depth >= 2:  # enough to name the culprit in a typical batch
        return []
    if isinstance(value, (list, tuple)):
        return [x for i, v in enumerate(value) for x in _leaves(f"{label}[{i}]", v, depth + 1)]
    if isinstance(value, dict):
        return [x for k, v in value.items() for x in _leaves(f"{label}[{k!r}]", v, depth + 1)]
    return []


def _most(weights: Counter[torch.device]) -> torch.device | None:
    return weights.most_common(1)[0][0] if weights else None


CREATE_FIX = (
    "create tensors inside forward on the input's device, e.g. torch.zeros(n, device=x.device), "
    "or register them as buffers so model.to() moves them"
)


def _listed(items: list[_Held], limit: int = 3) -> str:
    shown = ", ".join(f"{h.role} {h.name!r} on {h.device}" for h in items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _register_fix(plain: list[_Held]) -> str:
    attr = plain[0].name.rsplit(".", 1)[-1]
    return f"register it with self.register_buffer({attr!r}, tensor) so model.to(device) moves it"


def describe_calls(
    calls: list[ModuleCall], *, names: Mapping[int, str] | None = None
) -> tuple[str, str | None]:
    """A sentence naming the culprit among the modules an error unwound, and the fix.

    Args:
        calls: The module calls, outermost first (at least one).
        names: ``id(module) -> how the program names it`` on the failing line
            (``criterion``), for a fix the reader can paste.

    Returns:
        ``(sentence, fix)``; ``fix`` is ``None`` when only the generic advice fits.
    """
    call = calls[-1]
    module = call.module
    root = unwrap(calls[0].module)
    kind = type(module).__name__
    path = _path(root, calls)
    root_name = type(root).__name__
    name = f"{kind} {path!r}" if path else kind
    if path:
        name += f" (in {root_name})"
    held = _held(root)
    registered = [h for h in held if h.registered]
    plain = [h for h in held if not h.registered]
    inputs = _inputs(call)
    input_devices = list(dict.fromkeys(d for _, d in _inputs(calls[0]) or inputs))
    weights: Counter[torch.device] = Counter()
    for h in registered:
        weights[h.device] += h.numel
    if not weights:
        return _without_parameters(name, inputs, plain)
    if not any(h.role == "parameter" for h in registered) and len(input_devices) == 1:
        follows = _follows_inputs(call.module, root, name, registered, input_devices[0], names)
        if follows is not None:
            return follows
    # Where the model belongs: the one device its inputs share when part of it is there
    # already (the data says where the run is), else where most of its elements are.
    home = _most(weights)
    if len(input_devices) == 1 and input_devices[0] in weights:
        home = input_devices[0]
    assert home is not None
    prefix = f"{path}." if path else ""
    own = [h for h in registered if h.name.startswith(prefix) and "." not in h.name[len(prefix) :]]
    stray = [h for h in registered if h.device != home]
    stray_plain = [h for h in plain if h.device != home]
    stray_inputs = [(label, d) for label, d in inputs if d != home]
    target = str(home)
    inputs_fix = f", then move the inputs with x.to({target!r})" if stray_inputs else ""
    plain_fix = f"; also {_register_fix(stray_plain)}" if stray_plain else ""
    if stray:
        fix = (
            f"call model.to({target!r}) after adding or replacing layers or parameters (it moves "
            f"every parameter and buffer){inputs_fix}{plain_fix}"
        )
        inside = [h for h in stray if h.name.startswith(prefix)]
        settled = [h for h in registered if h.name.startswith(prefix) and h.device == home]
        if len(inside) == len(stray) and settled:
            first = inside[0]
            local = first.name[len(prefix) :]
            split = " (the model itself is split across devices)" if path else ""
            return (
                f"{name} has its {first.role} {local!r} on {first.device} but the rest of its "
                f"parameters on {home}{split}",
                fix,
            )
        if path and len(inside) == len(stray):
            return (
                f"{name} is on {stray[0].device} while the rest of {root_name} is on {home}, so "
                "this layer was left behind",
                fix,
            )
        devices = ", ".join(f"{d} ({n} elements)" for d, n in weights.most_common())
        return (
            f"inside {name}: the model itself is split across devices ({devices}): "
            f"{_listed(stray)} while the rest is on {home}",
            fix,
        )
    if stray_plain:
        culprit = stray_plain[0]
        return (
            f"{name} uses the plain tensor attribute {culprit.name.rsplit('.', 1)[-1]!r} on "
            f"{culprit.device} (not a registered buffer, so model.to() does not move it) with "
            f"tensors on {home}",
            _register_fix(stray_plain) + inputs_fix,
        )
    first = own[0] if own else registered[0]
    whose = (
        f"its {first.role} {first.name[len(prefix) :]!r}" if own else f"{root_name}'s parameters"
    )
    verb = "is" if own else "are"
    if not stray_inputs:
        return f"inside {name} ({whose} {verb} on {home})", CREATE_FIX
    label, there = stray_inputs[0]
    return (
        f"{name} got {label} on {there} but {whose} {verb} on {home}",
        f"move the input with x.to({target!r}) (or torchport.to_device(batch, {target!r})),"
        f" or move the model with model.to({str(there)!r})",
    )


def _follows_inputs(
    module: nn.Module,
    root: nn.Module,
    name: str,
    registered: list[_Held],
    device: torch.device,
    names: Mapping[int, str] | None,
) -> tuple[str, str] | None:
    """A module of buffers only (a loss with ``weight=``) whose inputs agree on ``device``.

    Such a module has no parameters to say where the model is; its inputs come from
    the model, so it is the module that must move. Moving the inputs to its buffers'
    device instead would fail at the next op that meets the model's tensors.
    """
    stray = [h for h in registered if h.device != device]
    if not stray:
        return None
    known = names or {}
    called = known.get(id(root)) or known.get(id(module))
    target = str(device)
    mover = f"{called}.to({target!r})" if called else f"{type(root).__name__}(...).to({target!r})"
    return (
        f"{name} has no parameters and holds its {_listed(stray)}, while its inputs are "
        f"on {device}",
        f"move the module to its inputs' device: {mover} (once, after creating it); moving "
        f"the inputs to {stray[0].device} instead would fail at the model's next op",
    )


def _without_parameters(
    name: str, inputs: list[tuple[str, torch.device]], plain: list[_Held]
) -> tuple[str, str]:
    """A model with no parameters or buffers: only its inputs and plain attributes can disagree."""
    devices = list(dict.fromkeys(d for _, d in inputs))
    if len(devices) > 1:
        listed = ", ".join(f"{label} on {d}" for label, d in inputs)
        return f"{name} got {listed}", "move the inputs to one device with .to(device)"
    stray = [h for h in plain if inputs and h.device != inputs[0][1]]
    if stray:
        culprit = stray[0]
        return (
            f"{name} uses the plain tensor attribute {culprit.name.rsplit('.', 1)[-1]!r} on "
            f"{culprit.device} (not a registered buffer, so model.to() does not move it) with "
            f"tensors on {inputs[0][1]}",
            _register_fix(stray),
        )
    where = f" (its inputs are on {devices[0]})" if devices else ""
    return f"inside {name}{where}", CREATE_FIX
