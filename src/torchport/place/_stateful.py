"""Moving stateful objects in place: ``nn.Module`` parameters and optimizer state.

A module keeps its ``Parameter`` objects when it moves (swap semantics), on
every device and under every ``torch.__future__`` flag, so an optimizer built
before the move still holds the model's parameters. An optimizer's state then
follows its parameters. Copies go through the hardware floor's copy routes, so
moving to the CPU returns pageable memory in the default mode.

The legacy reparametrizations (``torch.nn.utils.weight_norm`` and
``spectral_norm``) keep the weight they compute as a plain attribute that their
forward pre-hook sets again before each forward; after a move it is computed
again at once from the moved parameters, so it is never seen on the old device
(and never reported as an unregistered tensor, which it is by design).
"""

from __future__ import annotations

import functools
import importlib
import warnings
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch
from torch import nn
from torch.nn.parameter import is_lazy

from torchport import hardware
from torchport.errors import DeviceMismatchError, UnsupportedBatchError
from torchport.place._swappable import lazy_refusal, swap_refusal, swapping
from torchport.place._tree import flatten_tensors
from torchport.place._uncopyable import COPY_FAILURES, leaf_failure, uncopyable

__all__ = ["UnregisteredTensorWarning", "move_module", "move_optimizer"]

# The legacy reparametrization hooks (torch.nn.utils exports the functions under the
# modules' names, so the modules are imported by name).
_WEIGHT_NORM: Any = importlib.import_module("torch.nn.utils.weight_norm").WeightNorm
_SPECTRAL_NORM: Any = importlib.import_module("torch.nn.utils.spectral_norm").SpectralNorm

# Attributes every nn.Module has; never user tensors.
_MODULE_INTERNALS = frozenset(vars(nn.Module()))
# Parameters a move had to replace (swap refused, e.g. a weakref to the parameter):
# id(old) -> (weak old, weak new), so that to_device(optimizer) can follow them.
# Keyed by id because tensors compare elementwise (no WeakKeyDictionary); an entry
# leaves when the old parameter dies.
_REPLACED: dict[int, tuple[weakref.ref[torch.Tensor], weakref.ref[torch.Tensor]]] = {}


def _remember_replaced(old: torch.Tensor, new: torch.Tensor) -> None:
    key = id(old)
    _REPLACED[key] = (weakref.ref(old, lambda _: _REPLACED.pop(key, None)), weakref.ref(new))


def _replacement(old: torch.Tensor) -> torch.Tensor | None:
    entry = _REPLACED.get(id(old))
    if entry is None or entry[0]() is not old:
        return None
    return entry[1]()


class UnregisteredTensorWarning(UserWarning):
    """A module holds tensors as plain attributes, which ``module.to()`` does not move."""


def move_module(
    module: nn.Module, target: torch.device, non_blocking: bool | None, dtype: torch.dtype | None
) -> None:
    """Move a module's parameters, gradients and buffers in place, keeping every Parameter.

    Goes through ``Module._apply`` (so overrides such as RNN's weight flattening
    run) with ``torch.__future__``'s swap semantics switched on for the call: a
    parameter keeps its identity even to ``meta`` and under
    ``set_overwrite_module_params_on_conversion(True)``. The flag is process-wide
    while the call runs; torchport's own calls take it one at a time. A parameter
    torch would refuse to swap (something holds a weak reference to it, or a
    computation graph still uses it) is moved by torch's own conversion when that
    sets every tensor's data in place (keeping every Parameter), else raises
    ``UnsupportedBatchError`` naming it; so does a tensor torch cannot copy to
    ``target``; both before anything moved: every copy is made before the first
    swap (so a cast on one device holds the old and the new tensors at once, as
    ``model.to(dtype)`` does; for lazy modules too). For lazy modules (whose
    uninitialized parameters a swap would break), and where torch refuses a swap
    the check did not foresee, the move uses torch's default, which may replace a
    parameter; the replacement is remembered so that ``to_device(optimizer)``
    follows it (an uninitialized lazy parameter it would replace, to ``meta`` or under
    the overwrite flag, raises before anything moved: the layer would stop being
    lazy). A swapped Parameter keeps its attributes and the autograd hooks registered
    on it (``register_hook``, ``register_post_accumulate_grad_hook``), which the swap
    alone would drop (the hooks would never fire again).

    Synchronization: as ``to_device`` documents (one wait after copies to the CPU
    from an accelerator or to MPS in the default mode; pageable results).
    """
    if _already_there(module, target, dtype):
        _recompute_reparametrized(module)
        _warn_unregistered(module, target)
        return
    pending: set[torch.device] = set()

    def convert(t: torch.Tensor) -> torch.Tensor:
        return hardware.copy_one(t, target, dtype=dtype, non_blocking=non_blocking, pending=pending)

    if any(map(is_lazy, module.parameters())):
        # Swapping would turn an UninitializedParameter into a plain empty Parameter
        # and break the lazy module; torch's own conversion keeps it (set_data). Every
        # copy is still made first, so one torch refuses is named before anything moved.
        try:
            premade = _copies(module, convert, target)
            broken = lazy_refusal(module, premade, target)  # (torch would replace one)
            if broken is not None:
                raise UnsupportedBatchError(broken)
        except BaseException:
            hardware.wait_for_copies(pending, target)
            raise
        try:
            _apply_recording_replacements(module, functools.partial(_premade, premade, convert))
        finally:
            premade.clear()
            hardware.wait_for_copies(pending, target)
        _recompute_reparametrized(module)
        _warn_unregistered(module, target)
        return
    _release_reparametrized(module)
    try:
        # Everything that can fail is asked first, so a failed move leaves the module as
        # it was: whether torch can swap each parameter, then every copy, made before
        # the first swap (each device ends with what it would hold anyway).
        made = _copies(module, convert, target)
        refused = swap_refusal(module, target)
        if refused is not None and not _set_in_place(module, made):
            raise UnsupportedBatchError(refused)
    except BaseException:
        _recompute_reparametrized(module)  # the weight the hook computes, as it was
        hardware.wait_for_copies(pending, target)
        raise

    def install(t: torch.Tensor) -> torch.Tensor:
        copy = made.pop(id(t), None)
        return convert(t) if copy is None else copy

    if refused is not None:
        # torch cannot swap them, but its own conversion sets each one's data in place,
        # which keeps every Parameter object: the move is whole either way.
        try:
            _apply_recording_replacements(module, install)
        finally:
            made.clear()
            hardware.wait_for_copies(pending, target)
        _recompute_reparametrized(module)
        _warn_unregistered(module, target)
        return
    # What each Parameter holds as attributes (Megatron's tensor_model_parallel, a
    # no-weight-decay flag): the swap exchanges __dict__ with the new tensor's.
    attributes = [(p, _attributes(p)) for p in module.parameters() if vars(p)]
    try:
        with swapping(True):
            module._apply(install)  # type: ignore[no-untyped-call]
    except RuntimeError as exc:
        if "swap" not in str(exc):
            raise
        # torch refused a swap that swap_refusal did not foresee (its own check looks
        # deeper); the ones before it are moved. Finish with torch's default and
        # remember what it replaced, so that to_device(optimizer) follows.
        _apply_recording_replacements(module, install)
    finally:
        made.clear()
        hardware.wait_for_copies(pending, target)
        _rehook(module, attributes)
    _recompute_reparametrized(module)
    _warn_unregistered(module, target)


def _attributes(p: nn.Parameter) -> dict[str, Any]:
    """The attributes a user set on ``p``, to set back after a swap.

    Left out: tensors (the data of a tensor subclass, such as the simulated
    accelerator's ``_raw``, belongs to the tensor swapped out) and torch's own
    ``_is_param`` mark.
    """
    return {
        k: v for k, v in vars(p).items() if k != "_is_param" and not isinstance(v, torch.Tensor)
    }


def _rehook(module: nn.Module, attributes: list[tuple[nn.Parameter, dict[str, Any]]]) -> None:
    """Give each swapped Parameter back its attributes and the autograd hooks registered on it.

    ``torch.utils.swap_tensors`` keeps the Python object and its hook dicts
    (``register_hook``'s, ``register_post_accumulate_grad_hook``'s) but not their
    registration with autograd, which belongs to the tensor it swapped out: the hooks
    would never fire again. Setting a dict again registers it (torch clears what was
    registered first, so a hook that survived is not doubled). The swap also gives
    the object the new tensor's ``__dict__``: ``attributes`` (what each held before)
    are set back.
    """
    for p, held in attributes:
        vars(p).update(held)
    for p in module.parameters():
        hooks = p._backward_hooks
        if hooks is not None:
            p._backward_hooks = hooks
        after = p._post_accumulate_grad_hooks
        if after is not None:
            p._post_accumulate_grad_hooks = after


def _copies(
    module: nn.Module, convert: Callable[[torch.Tensor], torch.Tensor], target: torch.device
) -> dict[int, torch.Tensor]:
    """The copy of every parameter, gradient and buffer (by id), or the error naming one.

    Raises:
        UnsupportedBatchError: torch cannot copy one of them to ``target`` (a quantized
            or nested tensor to ``meta``, a meta tensor to a device with data).
    """
    made: dict[int, torch.Tensor] = {}
    for name, t in _named_tensors(module):
        if id(t) in made:
            continue
        try:
            made[id(t)] = convert(t)
        except COPY_FAILURES as exc:
            if not leaf_failure(exc):  # out of memory, a failed device: as torch raised it
                raise
            where = f"{type(module).__name__} {name!r}"
            last = "then move the module; nothing was moved"
            raise uncopyable(where, t, target, exc, last) from exc
    return made


def _premade(
    made: dict[int, torch.Tensor], convert: Callable[[torch.Tensor], torch.Tensor], t: torch.Tensor
) -> torch.Tensor:
    """The copy of ``t`` made beforehand (taken out of ``made``), or a new one."""
    copy = made.pop(id(t), None)
    return convert(t) if copy is None else copy


def _set_in_place(module: nn.Module, made: dict[int, torch.Tensor]) -> bool:
    """Whether torch's own conversion would set every tensor's data in place (``set_data``).

    It does, keeping each ``Parameter`` object, when the copy's tensor type is one the
    original can take (a dtype cast; a copy between devices of the same kind of
    tensor) and ``set_overwrite_module_params_on_conversion`` is off.
    """
    if torch.__future__.get_overwrite_module_params_on_conversion():
        return False
    return all(
        id(t) not in made or torch._has_compatible_shallow_copy_type(t, made[id(t)])
        for _, t in _named_tensors(module)
    )


def _named_tensors(module: nn.Module) -> Iterable[tuple[str, torch.Tensor]]:
    """What ``Module._apply`` converts: each parameter, its gradient, each buffer."""
    for name, p in module.named_parameters(remove_duplicate=True):
        yield name, p
        if p.grad is not None:
            yield f"{name}.grad", p.grad
    yield from module.named_buffers(remove_duplicate=True)


def _reparametrized(module: nn.Module) -> Iterable[tuple[nn.Module, str, Any]]:
    """(submodule, attribute, hook) for each weight a legacy reparametrization hook computes."""
    for sub in module.modules():
        for hook in sub._forward_pre_hooks.values():
            if isinstance(hook, _WEIGHT_NORM | _SPECTRAL_NORM):
                legacy: Any = hook
                yield sub, legacy.name, legacy


def _release_reparametrized(module: nn.Module) -> None:
    """Let go of the autograd graph a legacy-reparametrized weight holds, before a swap.

    ``torch.nn.utils.weight_norm`` (and the legacy ``spectral_norm``) keep the
    computed ``weight`` as a plain attribute whose graph holds ``weight_g`` and
    ``weight_v``; torch refuses to swap a parameter something else holds that way,
    and its fallback would give the module new ``weight_g``/``weight_v`` objects (a
    captured ``list(model.parameters())`` would keep the old ones). The weight is
    detached here and computed again from the moved parameters afterwards.
    """
    for sub, name, _ in _reparametrized(module):
        value = vars(sub).get(name)
        if isinstance(value, torch.Tensor) and value.grad_fn is not None:
            setattr(sub, name, value.detach())


def _recompute_reparametrized(module: nn.Module) -> None:
    """Compute each legacy-reparametrized weight again from the moved parameters, as its hook would.

    Without a power iteration for ``spectral_norm``: that would change the module's
    ``u``/``v`` estimates, which only a forward pass in training mode may do.
    """
    for sub, name, hook in _reparametrized(module):
        if isinstance(vars(sub).get(name), torch.Tensor):
            if isinstance(hook, _SPECTRAL_NORM):
                setattr(sub, name, hook.compute_weight(sub, do_power_iteration=False))
            else:
                setattr(sub, name, hook.compute_weight(sub))


def _apply_recording_replacements(
    module: nn.Module, convert: Callable[[torch.Tensor], torch.Tensor]
) -> None:
    """``module._apply(convert)`` with torch's own rules (set_data, never a swap: the flag
    another thread's move or the user set is off for the call); remember replaced parameters."""
    named_before = dict(module.named_parameters(remove_duplicate=False))
    with swapping(False):
        module._apply(convert)  # type: ignore[no-untyped-call]
    for name, p in module.named_parameters(remove_duplicate=False):
        old = named_before.get(name)
        if old is not None and old is not p:
            _remember_replaced(old, p)


def _already_there(module: nn.Module, target: torch.device, dtype: torch.dtype | None) -> bool:
    """Whether every parameter, gradient and buffer is on ``target`` with its final dtype."""
    for t in _module_tensors(module):
        if t.device != target and not (target.index is None and t.device.type == target.type):
            return False
        if dtype is not None and t.is_floating_point() and t.dtype != dtype:
            return False
    return True


def _module_tensors(module: nn.Module) -> Iterable[torch.Tensor]:
    for p in module.parameters():
        yield p
        if p.grad is not None:
            yield p.grad
    yield from module.buffers()


def _warn_unregistered(module: nn.Module, target: torch.device) -> None:
    strays = list(_unregistered_tensors(module, target))
    if not strays:
        return
    listing = ", ".join(f"{path!r} ({device})" for path, device in strays)
    noun, them = (
        ("tensor attribute is", "it") if len(strays) == 1 else ("tensor attributes are", "them")
    )
    warnings.warn(
        UnregisteredTensorWarning(
            f"{len(strays)} {noun} not registered as parameters or buffers of "
            f"{type(module).__name__}, so module.to() left {them} off {target}: {listing}; "
            "register each with self.register_buffer(name, tensor) "
            "(persistent=False keeps it out of state_dict) or wrap it in nn.Parameter"
        ),
        stacklevel=4,
    )


def _unregistered_tensors(
    module: nn.Module, target: torch.device
) -> Iterable[tuple[str, torch.device]]:
    computed = {(id(sub), name) for sub, name, _ in _reparametrized(module)}
    for prefix, sub in module.named_modules():
        for name, value in vars(sub).items():
            if name in _MODULE_INTERNALS or (id(sub), name) in computed:
                continue
            if isinstance(value, torch.Tensor):
                found: Sequence[torch.Tensor] = [value]
            elif isinstance(value, list | tuple | dict):
                try:
                    found, _ = flatten_tensors(value)
                except UnsupportedBatchError:  # a cyclic attribute: not ours to judge
                    continue
            else:
                continue
            path = f"{prefix}.{name}" if prefix else name
            for t in found:
                if not _same_device(t.device, target):
                    yield path, t.device
                    break


def _same_device(a: torch.device, b: torch.device) -> bool:
    return a.type == b.type and (a.index is None or b.index is None or a.index == b.index)


def move_optimizer(
    optimizer: torch.optim.Optimizer,
    target: torch.device,
    non_blocking: bool | None,
    dtype: torch.dtype | None,
) -> None:
    """Move optimizer state next to its parameters, which must already be on ``target``.

    Parameters a module move had to replace are followed first (the optimizer is
    rebound to the model's new parameter objects). Every state tensor, including
    those in lists (LBFGS's ``old_dirs``, ``old_stps``, ``ro``, ``al``), goes to
    its parameter's device; floating state takes the parameter's dtype, as
    ``Optimizer.load_state_dict`` does. ``step`` stays a CPU scalar unless the
    group is ``capturable`` or ``fused``.

    Synchronization: as ``to_device`` documents.

    Raises:
        DeviceMismatchError: a parameter is not on ``target`` or, with ``dtype``,
            a floating parameter is not of that dtype: its state must sit with it,
            so move (or cast) the model first.
    """
    _follow_replaced(optimizer)
    for g, group in enumerate(optimizer.param_groups):
        for i, param in enumerate(group["params"]):
            if not _same_device(param.device, target):
                raise DeviceMismatchError(
                    f"to_device(optimizer, {str(target)!r}): parameter {i} of param group {g} "
                    f"({tuple(param.shape)}) is on {param.device}, but an optimizer's state "
                    "must sit with its parameters; move the model first "
                    f"(to_device(model, {str(target)!r})), then the optimizer. If the model "
                    "was moved with model.to() and torch replaced its parameters (to 'meta', "
                    "or under set_overwrite_module_params_on_conversion(True)), this optimizer "
                    "still holds the old ones: move the model with to_device, which keeps "
                    "them, or build the optimizer after the move"
                )
            if dtype is not None and param.is_floating_point() and param.dtype != dtype:
                raise DeviceMismatchError(
                    f"to_device(optimizer, dtype={dtype}): parameter {i} of param group {g} "
                    f"is {param.dtype}; the state takes its parameter's dtype, so cast the "
                    f"model first (to_device(model, {str(target)!r}, dtype={dtype})), "
                    "then the optimizer"
                )
    pending: set[torch.device] = set()
    # Every copy first, then the state is written: a copy torch cannot make raises
    # before any state changed.
    updates: list[tuple[dict[str, Any], str, Any]] = []
    try:
        for group in optimizer.param_groups:
            step_on_device = bool(group.get("capturable") or group.get("fused"))
            for param in group["params"]:
                state = optimizer.state.get(param)
                if state:
                    updates += _moved_state(state, param, step_on_device, non_blocking, pending)
    finally:
        hardware.wait_for_copies(pending, target)
    for state, key, value in updates:
        state[key] = value


def _moved_state(
    state: dict[str, Any],
    param: torch.Tensor,
    step_on_device: bool,
    non_blocking: bool | None,
    pending: set[torch.device],
) -> list[tuple[dict[str, Any], str, Any]]:
    """The moved value of each entry of ``state`` that moves, as (state, key, value)."""
    device = param.device
    cast = param.dtype if param.is_floating_point() else None

    def move(value: torch.Tensor, dtype: torch.dtype | None) -> torch.Tensor:
        try:
            return hardware.copy_one(
                value, device, dtype=dtype, non_blocking=non_blocking, pending=pending
            )
        except COPY_FAILURES as exc:
            if not leaf_failure(exc):
                raise
            where = f"the optimizer state {key!r} of a {tuple(param.shape)} parameter"
            last = "then move the optimizer; no state was changed"
            raise uncopyable(where, value, device, exc, last) from exc

    found: list[tuple[dict[str, Any], str, Any]] = []
    for key, value in list(state.items()):
        if isinstance(value, torch.Tensor):
            if key == "step":
                if step_on_device:
                    found.append((state, key, move(value, torch.float32)))
                # else: a CPU scalar; reading it costs no device sync
            else:
                found.append((state, key, move(value, cast)))
        elif isinstance(value, list | tuple) and any(isinstance(v, torch.Tensor) for v in value):
            moved = [move(v, cast) if isinstance(v, torch.Tensor) else v for v in value]
            found.append((state, key, type(value)(moved) if isinstance(value, tuple) else moved))
    return found


def _follow_replaced(optimizer: torch.optim.Optimizer) -> None:
    """Rebind the optimizer to parameters a module move replaced, state included."""
    if not _REPLACED:
        return
    for group in optimizer.param_groups:
        params = group["params"]
        for i, old in enumerate(params):
            new = _replacement(old)
            if new is None:
                continue
            params[i] = new
            if old in optimizer.state:
                optimizer.state[new] = optimizer.state.pop(old)
