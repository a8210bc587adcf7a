"""The host-work watch of ``port --verify``: compute the ported program still does on the CPU.

A run on the simulated accelerator raises where a device value meets a host one;
it says nothing when a whole model, a raw ``requires_grad`` tensor or a layer
whose weight went back to the host computes on the CPU on its own. This watch,
a :class:`torch.overrides.TorchFunctionMode` beside the float64 watch of
:mod:`torchport.cli._port_child` (one mode, both watches), says those.

**The rule (the invariant the tests hold).** A torch call is *host work* when all of:

1. it is made from the user's code: the innermost frame in a file under ROOTS
   names the place (``file:line``), with no frame of the simulated accelerator
   between (its kernels compute on host tensors for the device; torchport's other
   frames pass the call on as it is: the CUDA redirect's mode, which every call of a
   run seen as CUDA goes through, names no place of its own); a call made while
   a ``DataLoader`` fetches (``torchport.diagnose.data_loading``: sampler,
   dataset, ``collate_fn``, in the main process; workers are other processes)
   or while an ``nn.Module``'s ``__init__`` runs (a model is built on the host,
   then placed) is not;
2. it has a tensor input and every tensor input (arguments, and tensors in a
   list or tuple argument, the first 8) is on the host;
3. it is real compute, one of:

   * **training on the host**: grad mode is on, an input is a host *leaf* that
     requires grad (a parameter, or a raw ``w.requires_grad_()`` tensor), and the
     call is not bookkeeping (:data:`_BOOKKEEPING`: attribute reads, moves,
     ``detach``, copies (``clone``: a snapshot for a history), ``item``/``numpy``/
     ``tolist``, sizes, hooks; predicates, ``is_*``;
     and torch's private helpers, ``_name`` but not ``__name__``);
   * **a backward on the host**: ``Tensor.backward`` of a host tensor whose graph
     reaches a host leaf that requires grad;
   * **an optimizer step on the host**: ``step()`` of an optimizer with a host
     parameter (heard through torch's global step hook);
   * **a heavy op** (:data:`HEAVY`: the matmul family, ``linear``, convolutions,
     ``einsum``, recurrent cells, ``embedding``, attention, normalisation), in any
     grad mode.

Everything else on host tensors is bookkeeping a program rightly does on the host
and is never reported: metrics on ``.cpu()`` results (their leaves are on the
device, or they do not require grad), ``.item()``, ``.numpy()``,
``torch.tensor(list)`` (no tensor input), indexing a CPU lengths tensor, loading,
small elementwise ops on host results.

Each place is reported once, with the number of host-work calls made there, named
by its weightiest call (a heavy op, then a backward, a step, an op on a leaf), at
most :data:`LIMIT` places.
A place is *chosen* (the program may mean it) when one of its host inputs was put
on the host by the program itself: the result of ``.cpu()``, of ``.to()`` with a
host device, of a call with ``device=`` the host (``model.cpu()`` and
``model.to("cpu")`` move each parameter that way, then set its ``.data``), or
computed from such a tensor. Marks are kept by ``id`` with the tensor's shape and
dtype, never a reference or a weakref (a weakref makes ``torch.utils.swap_tensors``
refuse, and module moves use it): a reused ``id`` can change a finding's wording,
never whether a place is reported.
"""

from __future__ import annotations

import sys
from types import FrameType
from typing import Any

import torch
from torch.optim.optimizer import register_optimizer_step_pre_hook
from torch.overrides import TorchFunctionMode

from torchport._device_types import CPU, MOVE_METHODS
from torchport._origin import of_project, of_simulator
from torchport.diagnose import data_loading

__all__ = ["HEAVY", "LIMIT", "HostWatch", "user_line"]

LIMIT = 50  # places named at most: the first ones say what to fix

HEAVY = frozenset(
    {
        "matmul", "__matmul__", "__rmatmul__", "mm", "bmm", "addmm", "addbmm", "baddbmm",
        "mv", "addmv", "chain_matmul", "multi_dot", "tensordot", "einsum", "bilinear",
        "linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
        "conv_transpose3d", "convolution", "_convolution", "conv_tbc", "lstm", "gru",
        "rnn_tanh", "rnn_relu", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell",
        "embedding", "embedding_bag", "scaled_dot_product_attention",
        "multi_head_attention_forward", "batch_norm", "layer_norm", "group_norm",
        "instance_norm", "cdist",
    }
)  # fmt: skip
_BOOKKEEPING = frozenset(
    {
        "__get__", "__set__", "__delete__", "detach", "detach_", "requires_grad_",
        "retain_grad", "register_hook", "register_post_accumulate_grad_hook", "item",
        "tolist", "numpy", "size", "dim", "numel", "nelement", "element_size", "stride",
        "storage_offset", "data_ptr", "is_contiguous", "is_floating_point", "is_complex",
        "is_pinned", "is_shared", "get_device", "untyped_storage", "storage", "_typed_storage",
        "to", "type", "pin_memory", "share_memory_", "__repr__", "__str__",
        "__format__", "__len__", "__hash__", "__deepcopy__", "__reduce_ex__", "__setstate__",
        "__getstate__", "__dlpack__", "__dlpack_device__", "__array__", "_is_view",
        "new_tensor", "new_zeros", "new_ones", "new_empty", "new_full", "backward", "clone",
        "contiguous",
    }
) | MOVE_METHODS  # fmt: skip
_CHOSEN_KEPT = 200_000  # marks kept at most
_RANK = {"grad": 0, "step": 1, "backward": 2, "heavy": 3}
_GRAPH_NODES = 20_000  # nodes of a backward's graph read at most for a host leaf


def user_line(
    frame: FrameType | None, roots: tuple[str, ...], *, direct: bool = False
) -> tuple[str, int] | None:
    """The innermost frame from ``frame`` up in a file under ``roots``: (path, line).

    ``direct``: None when the simulated accelerator's code (its kernels, which compute on
    host tensors for the device) lies between ``frame`` and it.
    """
    while frame is not None:
        filename = frame.f_code.co_filename
        if of_project(filename, roots):
            return filename, frame.f_lineno
        if direct and of_simulator(filename):
            return None
        frame = frame.f_back
    return None


def _tensors(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[torch.Tensor]:
    found: list[torch.Tensor] = []
    for value in (*args, *kwargs.values()) if kwargs else args:
        if isinstance(value, torch.Tensor):
            found.append(value)
        elif isinstance(value, (list, tuple)):
            found += [v for v in value[:8] if isinstance(v, torch.Tensor)]
    return found


def _names_host(value: Any) -> bool:
    if isinstance(value, torch.device):
        return value.type == CPU
    return isinstance(value, str) and value.split(":")[0] == CPU


def _building_a_module(frame: FrameType | None) -> bool:
    while frame is not None:
        if frame.f_code.co_name == "__init__" and isinstance(
            frame.f_locals.get("self"), torch.nn.Module
        ):
            return True
        frame = frame.f_back
    return False


def _host_leaf_in_graph(tensor: torch.Tensor) -> bool:
    """Whether the graph behind ``tensor`` reaches a host leaf that requires grad."""
    todo = [tensor.grad_fn]
    # id -> the node, held: torch 2.11 (not 2.13, 2.15) makes a new Python object for a C++
    # node at each read and frees it with its last reference, so a freed node's id comes
    # back as its grandchild's, which an id alone would take for seen
    seen: dict[int, Any] = {}
    while todo and len(seen) < _GRAPH_NODES:
        node = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen[id(node)] = node
        leaf = getattr(node, "variable", None)
        if isinstance(leaf, torch.Tensor) and leaf.device.type == CPU:
            return True
        todo += [nxt for nxt, _ in node.next_functions]
    return False


def _shown(func: Any) -> str:
    name = getattr(func, "__name__", None) or repr(func)
    if name in ("__matmul__", "__rmatmul__"):
        return "@ (matmul)"
    for prefix, space in (
        ("torch", torch),
        ("torch.nn.functional", torch.nn.functional),
        ("Tensor", torch.Tensor),
    ):
        if getattr(space, name, None) is func:
            return f"{prefix}.{name}"
    return name


class HostWatch(TorchFunctionMode):
    """The watch (see the module docstring). ``places`` gets one entry per place,
    ``[path, line, call, calls, kind, chosen]``, kind one of "grad", "backward",
    "step", "heavy". ``also(func, args, kwargs, result)``, when given, hears each
    call too, after it ran (the float64 watch: one mode for both)."""

    def __init__(
        self, prefixes: tuple[str, ...], places: list[list[Any]], also: Any = None
    ) -> None:
        super().__init__()
        self.prefixes = prefixes
        self.places = places
        self.also = also
        self.index: dict[tuple[str, int], list[Any]] = {}
        # put on the host by the program: id -> (shape, dtype). No reference and no weakref
        # (a weakref makes `torch.utils.swap_tensors`, which module moves use, refuse);
        # a reused id whose shape and dtype match can change a finding's wording only.
        self._chosen: dict[int, tuple[Any, Any]] = {}
        self._hook: Any = None
        self._left: set[tuple[str, int]] = set()  # places in loading or a module's __init__

    def __enter__(self) -> HostWatch:
        self._hook = register_optimizer_step_pre_hook(self._step)
        super().__enter__()  # type: ignore[no-untyped-call]
        return self

    def __exit__(self, *exc: object) -> None:
        super().__exit__(*exc)  # type: ignore[no-untyped-call]
        self._hook.remove()

    def __torch_function__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        host = self.before(func, args, kwargs)
        result = func(*args, **kwargs)
        self.after(func, args, kwargs, host, result)
        if self.also is not None:
            self.also(func, args, kwargs, result)
        return result

    def before(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool | None:
        """Hear one torch call of the program before it runs (a backward's graph is
        read before the backward frees it). Returns None when an input is not on the
        host (or there is none), else whether an input was put there by the program."""
        inputs = _tensors(args, kwargs)
        if not inputs:
            return None
        for t in inputs:
            if t.device.type != CPU:
                return None
        chosen = any(map(self._is_chosen, inputs))
        kind = self._kind(getattr(func, "__name__", ""), inputs)
        if kind:  # frames: before, __torch_function__, the caller
            self._record(sys._getframe(2), func, kind, chosen)
        return chosen

    def after(self, func: Any, args: Any, kwargs: dict[str, Any], host: Any, result: Any) -> None:
        """Mark ``result`` as put on the host by the program (``host``: what
        :meth:`before` returned)."""
        name = getattr(func, "__name__", "")
        if name == "__set__" and len(args) == 2 and self._is_chosen(args[1]):
            self._choose(args[0])  # `param.data = moved`, as `model.cpu()` does
        if not isinstance(result, torch.Tensor):
            return
        if (
            host  # computed from a tensor the program put on the host
            or name == CPU  # `x.cpu()`
            or (name == "to" and any(map(_names_host, (*args[1:], *kwargs.values()))))
            or (kwargs and _names_host(kwargs.get("device")))  # made there on purpose
        ):
            self._choose(result)

    def _kind(self, name: str, inputs: list[torch.Tensor]) -> str:
        if name in HEAVY:
            return "heavy"
        if not torch.is_grad_enabled():
            return ""
        if name == "backward":
            return "backward" if _host_leaf_in_graph(inputs[0]) else ""
        if name in _BOOKKEEPING or name[:3] == "is_" or (name[:1] == "_" and name[:2] != "__"):
            return ""  # predicates, torch's private helpers (`_has_compatible_shallow_copy_type`)
        return "grad" if any(t.requires_grad and t.grad_fn is None for t in inputs) else ""

    def _step(self, opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        params = [p for group in opt.param_groups for p in group["params"]]
        host = [p for p in params if isinstance(p, torch.Tensor) and p.device.type == CPU]
        if host:
            chosen = any(map(self._is_chosen, host))
            self._record(sys._getframe(1), f"{type(opt).__name__}.step", "step", chosen)

    def _is_chosen(self, tensor: Any) -> bool:
        known = self._chosen.get(id(tensor))
        if known is None or not isinstance(tensor, torch.Tensor):
            return False
        return known == (tensor.shape, tensor.dtype)

    def _choose(self, tensor: Any) -> None:
        if isinstance(tensor, torch.Tensor):
            if len(self._chosen) > _CHOSEN_KEPT:
                self._chosen.clear()  # bounded: only wording is lost
            self._chosen[id(tensor)] = (tensor.shape, tensor.dtype)

    def _record(self, frame: FrameType | None, func: Any, kind: str, chosen: bool) -> None:
        where = user_line(frame, self.prefixes, direct=True)
        if where is None:
            return
        entry = self.index.get(where)
        if entry is not None:
            entry[3] += 1
            if _RANK[kind] > _RANK[entry[4]]:  # the line is named by its weightiest call
                entry[2], entry[4] = func if isinstance(func, str) else _shown(func), kind
            return
        if where in self._left or len(self.places) >= LIMIT:
            return
        if data_loading(frame) or _building_a_module(frame):
            self._left.add(where)
            return
        shown = func if isinstance(func, str) else _shown(func)
        entry = [where[0], where[1], shown, 1, kind, chosen]
        self.index[where] = entry
        self.places.append(entry)
