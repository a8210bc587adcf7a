"""Moving things to a device: ``to_device``.

Small flat batches (a tensor; a tuple, list or dict of plain tensors) are moved
directly (a tensor here, the containers by ``place/_direct.py``), with C-level checks
and one ``Tensor.to`` per tensor. A batch that is one object with its own ``.to``
(PyG's ``Batch``, a ``TensorDict``), or small builtin dicts, lists and tuples holding
such objects, tensors and values at any depth, moves each object by the whole-object
path (``place/_whole.py``, ``place/_whole_held.py``), deferring to the walker wherever
anything is held twice or not decided yet. Every other
batch is flattened once by the one walker (``place/_tree.py``) and its distinct
tensors go through the hardware floor's copy engine (``torchport.hardware``),
which plans the copies once (which stay, which go one by one, which are packed)
and runs them; the batch is rebuilt around the copies. Modules and optimizers
are moved in place (``place/_stateful.py``). Nothing here imports ``feed``.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable
from typing import Any, TypeVar

import torch
from torch import nn

from torchport import _skipped_copies, hardware
from torchport._device_types import CPU, META, MPS
from torchport.errors import ConfigError, UnsupportedBatchError
from torchport.hardware import parse_device
from torchport.place._direct import NOT_FLAT, move_few, move_flat, move_user_dict, plain_user_dict
from torchport.place._leaf_kinds import OBJECT_NODES
from torchport.place._own_to import call_own_to
from torchport.place._redirected import ACTIVE as _REDIRECTS
from torchport.place._redirected import resolve_device
from torchport.place._refusals import refusal
from torchport.place._stateful import UnregisteredTensorWarning, move_module, move_optimizer
from torchport.place._tree import flatten_batch, skip_key_set
from torchport.place._uncopyable import COPY_FAILURES, check_hidden, named_copy_failure
from torchport.place._whole import move_whole, whole_tensors
from torchport.place._whole_held import move_held

__all__ = ["UnregisteredTensorWarning", "to_device"]

T = TypeVar("T")

_CPU = parse_device(CPU)
_META = parse_device(META)
_TENSOR = torch.Tensor
# Types that are batches, never training state: no need to ask refusal() about them.
_BATCH_TYPES: frozenset[type] = frozenset({dict, list, tuple})
# Whether a type is an object the walker moves with its own .to (place/_whole.py).
_MOVED_WHOLE = OBJECT_NODES.get
# The floor's cache of parsed device strings, read directly on the hot path.
_PARSED_GET = hardware.parsed_cache().get


def to_device(
    obj: T,
    device: str | torch.device | int,
    *,
    non_blocking: bool | None = None,
    dtype: torch.dtype | None = None,
    pack: bool | None = None,
    skip_keys: Collection[Hashable] = (),
) -> T:
    """Move a tensor, a nested batch, a module or an optimizer to ``device``.

    * A batch: tensors, containers and objects at any depth. The promise: when
      this returns, every tensor reachable from the result (through container
      items, the attributes of container subclasses, dataclass, attrs and
      pydantic fields, and the ``__dict__`` and ``__slots__`` of any object) is
      on ``device``, except values under ``skip_keys`` and tensors an object's
      own ``.to`` keeps where they are (below); the input is unchanged;
      every value is unchanged; a tensor that appears twice is copied once and
      stays shared, and so does a container or object held in two places (also
      inside an object with its own ``.to``, or a ``MappingProxyType``, which keeps
      showing the batch's mapping); where that ``.to`` gives back such a container
      holding other objects, the move raises. Otherwise
      :class:`~torchport.UnsupportedBatchError` names the path of what could not
      be moved. Containers (dict, ``OrderedDict`` in
      its own order, ``defaultdict``, list, tuple, namedtuple, set, frozenset,
      ``deque``, ``MappingProxyType`` and their subclasses) are rebuilt without
      calling their constructors. Objects without a ``.to`` (dataclasses, attrs
      and pydantic models, ``torch.distributions``, ``UserDict`` such as
      HuggingFace's ``BatchEncoding``, custom ``Mapping``s, plain classes) are
      copied without their constructor, their attributes (caches included)
      moved; one in which nothing moves comes back as the very object. An
      object with a ``.to`` and attributes (PyTorch Geometric's ``Data``/``Batch``,
      ``TensorDict``, a tensorclass) gives what its ``.to`` gives on a shallow copy
      (``copy.copy``): the tensors it moves are moved, those it keeps on the host
      stay there (PyG's ``_slice_dict``, so ``get_example`` works), payload is shared,
      the input is left as it was, and when its tensors are all on ``device``
      already it comes back as it is, with no call. (One that shares a tensor with
      the rest of the batch, holds one twice, nests such objects inside its
      storages, or is moved with ``dtype`` is instead deep-copied around the
      batch's moved tensors before its ``.to`` runs, so every tensor it holds
      moves and sharing is kept.) So a tensor its ``.to`` leaves off ``device``
      stays there only when it is the input's own and the object was moved on a
      shallow copy (PyG's bookkeeping); otherwise it moves too (a tensorclass's
      non-tensor field ``extra={"k": t}`` comes back with ``t`` on ``device``,
      though its own ``.to`` leaves ``t``). A tensor ``.to`` itself makes off
      ``device`` raises, and so does a ``.to`` that changes the input through the
      shallow copy (the input put back first) or changes one of the input's
      tensors in place (``copy_``, ``add_``, ``resize_``: not undone). An object
      whose state torchport cannot read is moved by its ``.to`` as it is. Values
      (numbers, strings, classes, functions, modules, ``Enum`` members, weak
      references, objects without attributes) come back as they are, and so do
      mapping keys. Modules, optimizers, LR schedulers and ``GradScaler``s
      inside a batch are refused (move them on their own), and so are iterators
      (generators, ``map``, ``zip``: what they yield exists only once iterated).
      A numpy array of Python objects or a dict's values or items view holding a
      tensor not already on ``device`` is refused too. A tensor already on
      ``device`` with the right dtype is returned as is.
    * ``nn.Module``: moved in place and returned. Every ``Parameter`` keeps its
      identity (swap semantics, also to ``meta`` and under
      ``torch.__future__.set_overwrite_module_params_on_conversion(True)``), so an
      optimizer built before the move still holds the model's parameters, and
      each keeps its attributes and the autograd hooks registered on it; where
      that cannot be (torch refuses to swap a parameter something holds by weak
      reference or a live graph uses, and cannot set its data in place either), or
      a tensor cannot be copied to ``device``, :class:`~torchport.UnsupportedBatchError`
      names it before anything moved. Tensors held as plain attributes (not
      registered parameters or buffers) that are not on ``device`` afterwards are
      named in one :class:`UnregisteredTensorWarning`.
    * ``torch.optim.Optimizer``: move the model first. Each parameter's state
      tensors (lists of them too, as LBFGS keeps) are moved to that parameter's
      device, and floating state is cast to its dtype, as
      ``Optimizer.load_state_dict`` does; ``step`` stays on the CPU unless the
      parameter group is ``capturable`` or ``fused``. Returned as the same
      object. A parameter that is not on ``device`` (or, with ``dtype``, not of
      that dtype) raises :class:`~torchport.DeviceMismatchError`.
    * An LR scheduler or a ``GradScaler``: refused with what to do instead (a
      scheduler holds nothing to move; a scaler is built for its device).

    Inside ``torchport.redirect(target)`` (and ``torchport run``) a device that
    names CUDA means ``target``, where ``.cuda()`` goes there.

    Synchronization, with ``non_blocking=None`` (the default, "as fast as is
    safe"):

    * Copies into CUDA and other accelerators are asynchronous and this does not
      wait for them. From pinned memory the copy is truly asynchronous (do not
      write to the pinned source until the current stream has passed the copy);
      from pageable memory CUDA stages the copy and the source may be reused as
      soon as this returns. Pageable sources are not pinned first: that would
      cost a host copy plus a pinned allocation to save a staging copy CUDA
      does anyway.
    * Copies to the CPU land in ordinary pageable memory (torch would return
      page-locked memory for ``non_blocking=True``, and offloading a model that
      way would lock a large share of RAM). They are issued asynchronously, then
      the host waits ONCE, on the current stream of each accelerator the sources
      are on, before this returns. Copies to MPS likewise end with one MPS
      synchronization. So the caller never sees a half-written tensor.
    * Packing (see ``pack``) may wait for an earlier packed copy that still reads
      the staging buffer it needs.
    * A module's parameters and buffers, and an optimizer's state, follow the
      same rules. Objects with their own ``.to`` synchronize as that method does
      (they get ``non_blocking=True`` only for accelerator targets and MPS).

    ``non_blocking=True`` issues every copy asynchronously and never waits
    (copies to the CPU then land in pinned memory): before reading a result on
    the CPU (or on MPS) the caller must synchronize the source device (e.g.
    ``torch.accelerator.synchronize()``). ``non_blocking=False`` makes every copy
    blocking.

    Args:
        obj: What to move.
        device: Target device: a string, a ``torch.device`` or an index on the
            current accelerator. ``"cuda"`` without an index means the current
            CUDA device, as for ``Tensor.to`` (and for ``DeviceLoader``);
            ``"cpu:0"`` is the CPU.
        non_blocking: ``None`` for the safe fast default described above.
        dtype: Cast floating-point tensors (and a module's floating parameters)
            to this dtype in the same copy; integer and bool tensors are untouched.
        pack: ``True`` copies the batch's host tensors through one staging buffer
            in one copy (each result still gets a storage of its own and the
            strides ``.to`` would give it); ``None`` does so only for a CUDA target with at least 4
            tensors of at most 256 KiB on average (64 MiB in total), where one
            copy beats many; ``False`` copies tensor by tensor. Tensors that need
            grad, sparse, quantized or nested tensors, subclasses and tensors
            already on ``device`` are never packed.
        skip_keys: Values under these keys (one key, or a collection of keys) of
            any mapping (dict, ``UserDict``, ``Mapping``), at any depth, are left as
            they are. ``skip_keys="ids"`` is the one key ``"ids"``.

    Returns:
        The moved object, of the same type.

    Raises:
        DeviceError: ``device`` is malformed or not present.
        ConfigError: ``dtype`` is not a floating-point dtype, or ``skip_keys`` is
            neither a key nor a collection of keys.
        DeviceMismatchError: An optimizer's parameters are not on ``device``.
        UnsupportedBatchError: The batch holds an object that cannot be
            rebuilt faithfully, a cycle, or training state (a module, optimizer,
            scheduler or scaler); or ``obj`` is a scheduler or a scaler; or it
            holds a tensor torch cannot copy to ``device`` (a quantized or nested
            tensor to ``meta``, a meta tensor anywhere). The message names the
            path and says what to do.
    """
    target = _PARSED_GET(device) if type(device) is str and not _REDIRECTS else None
    if target is None:
        target = resolve_device(device, argument="device")
    if _skipped_copies.listeners:  # an audit counts the copies an accelerator run makes
        _tell_staying(obj, target)
    try:
        if dtype is None and pack is not True and not skip_keys:
            cls = type(obj)
            # The direct paths first: they are what most training loops call, and every
            # check costs as much as the copy itself. The floor returns one object for
            # the CPU and one for meta, so identity tells them apart.
            if cls is _TENSOR:
                t: torch.Tensor = obj  # type: ignore[assignment]
                if target is _META:
                    return t if t.is_meta else t.to(_META, None, non_blocking is not False)  # type: ignore[return-value]
                if target is _CPU:
                    if t.is_cpu:
                        return obj
                elif t.device == target:
                    return obj
                elif target.type != MPS:
                    return t.to(target, None, non_blocking is not False)  # type: ignore[return-value]
            elif cls is tuple or cls is list:
                moved = move_few(obj, cls, target, non_blocking, pack)
                if moved is NOT_FLAT:  # objects with their own .to inside: each moved whole
                    moved = move_held(obj, target, non_blocking, pack)
                if moved is not NOT_FLAT:
                    return moved  # type: ignore[no-any-return]
            elif cls is dict:
                moved = move_flat(obj, cls, target, non_blocking, pack)
                if moved is NOT_FLAT:
                    moved = move_held(obj, target, non_blocking, pack)
                if moved is not NOT_FLAT:
                    return moved  # type: ignore[no-any-return]
            elif _MOVED_WHOLE(cls):  # PyG Data/Batch, TensorDict: its own .to on a shallow copy
                inside = whole_tensors(obj)
                if inside is not None:
                    return move_whole(obj, inside, target, non_blocking)  # type: ignore[no-any-return]
            elif plain_user_dict(cls):
                moved = move_user_dict(obj, cls, target, non_blocking, pack)
                if moved is not NOT_FLAT:
                    return moved  # type: ignore[no-any-return]
        if dtype is not None and not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
            raise ConfigError(
                f"dtype={dtype!r} is not a floating-point dtype; to_device casts floating "
                "tensors only, so pass e.g. torch.float16 or torch.bfloat16, or None"
            )
        if skip_keys:
            skip_key_set(skip_keys)  # a bad value is reported whatever the batch
        if isinstance(obj, torch.Tensor):
            plan = hardware.plan_copy([obj], target, dtype=dtype, pack=pack, distinct=True)
            return plan.run(non_blocking=non_blocking, measure=False).tensors[0]  # type: ignore[return-value]
        if isinstance(obj, nn.Module):
            move_module(obj, target, non_blocking, dtype)
            return obj
        if isinstance(obj, torch.optim.Optimizer):
            move_optimizer(obj, target, non_blocking, dtype)
            return obj
        kind: type = type(obj)
        if kind not in _BATCH_TYPES:
            refused = refusal(kind, "the object", str(target))
            if refused is not None:
                raise UnsupportedBatchError(f"to_device: {refused}")
        layout = flatten_batch(obj, skip_keys=skip_keys)
        check_hidden(layout, target, dtype)
        if dtype is not None:
            layout.keep_own()  # the engine casts (floating tensors only), not the object's .to
        tensors = layout.to_copy()  # not those an object's own .to moves
        # Movers first: their own .to synchronizes as it does, before the engine's one wait.
        new_movers = [call_own_to(m, target, non_blocking, dtype) for m in layout.movers] or None

        def call_to(m: Any) -> Any:
            # Its tensors are the engine's copies, floating ones cast already: a dtype
            # passed on would cast its integer and bool tensors too (TensorDict's does).
            return call_own_to(m, target, non_blocking, None)

        plan = hardware.plan_copy(tensors, target, dtype=dtype, pack=pack, distinct=True)
        if not plan.noop:
            tensors = plan.run(non_blocking=non_blocking, measure=False).tensors
        return layout.rebuild(  # type: ignore[return-value]
            layout.merge(tensors), new_movers, call_to=call_to, target=target, dtype=dtype
        )
    except (*COPY_FAILURES, UnsupportedBatchError) as exc:
        # torch has no kernel to copy some tensor there: name it by its path (also where
        # an object's .to met it and the rebuild named only that object).
        if isinstance(obj, nn.Module | torch.optim.Optimizer):
            raise
        failure = named_copy_failure(obj, target, exc)
        if failure is None:
            raise
        try:
            raise failure from failure.__cause__
        finally:
            del failure  # no cycle between this frame and the error it raises


def _tell_staying(obj: Any, target: torch.device) -> None:
    """Tell an audit which tensors of ``obj`` are already on ``target`` (no copy here).

    On a CPU run they stay where they are; on an accelerator each is a copy, which the
    audit predicts. A module's tied tensors are told once; an optimizer's ``step``
    counters stay on the host on every machine. Never raises: the move that follows
    reports what is wrong with ``obj``.
    """
    try:
        if isinstance(obj, torch.Tensor):
            tensors: list[Any] = [obj]
        elif isinstance(obj, nn.Module):
            unique = {id(t): t for t in (*obj.parameters(), *obj.buffers())}
            tensors = list(unique.values())
        elif isinstance(obj, torch.optim.Optimizer):
            tensors = [
                value
                for state in obj.state.values()
                for key, value in state.items()
                if key != "step" and isinstance(value, torch.Tensor)
            ]
        else:
            tensors = flatten_batch(obj).tensors
    except Exception:
        return
    _skipped_copies.tell(tensors, target, by="torchport.to_device")
