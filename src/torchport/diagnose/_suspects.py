"""Culprits of a device mismatch outside the model's own tensors, for :func:`torchport.strict`.

:mod:`._culprit` judges a model's parameters, buffers and inputs. Three other places
put a tensor on the wrong device, and PyTorch's message says which one it was:

* an **optimizer's state** (``exp_avg`` left on the CPU after ``model.to(device)``, a
  checkpoint's state loaded elsewhere): the error unwinds through the optimizer's
  ``step``, whose ``self`` is the optimizer, so its state is compared with each
  parameter;
* a custom **autograd.Function** whose ``backward`` returns a gradient on another
  device: the autograd engine names its node (``"Function MyFnBackward returned an
  invalid gradient at index 0 - expected device meta but got cpu"``), and the graph
  of the tensors on the failing line leads to the node, the node to its class;
* a **gradient hook** (``tensor.register_hook``) returning its gradient on another
  device: the autograd engine names the hook and both tensor types ("hook 'scale' has
  changed the type of value (was torch.cuda.FloatTensor got torch.FloatTensor)");
* code **torch.compile traced**: Dynamo keeps the traced line in its message (``from
  user code: File "train.py", line 4, in f``), the only place it survives, since the
  traced frame never ran.

Each reader returns ``None`` when its culprit is not the one, and never raises past
:mod:`._strict`, which asks them before the module calls.
"""

from __future__ import annotations

import inspect
import linecache
import re
from collections.abc import Iterable
from dataclasses import dataclass
from types import FrameType
from typing import Any

import torch
from torch import nn

from torchport.diagnose._culprit import significant

__all__ = [
    "HOOK_TYPES",
    "Suspect",
    "autograd_function",
    "compiled_code",
    "gradient_hook",
    "optimizer_state",
    "type_device",
]


@dataclass(frozen=True)
class Suspect:
    """What a reader found: the sentence naming the culprit, and the fix.

    ``found`` is false when the culprit is named from the message alone (the object
    itself was not found): a module call the error unwound says more then.
    """

    sentence: str
    fix: str
    found: bool = True


# -- an optimizer's state -------------------------------------------------------------


def _parameter_names(frames: Iterable[FrameType]) -> dict[int, str]:
    """``id(parameter) -> "fc.weight"`` for the models the program's frames hold."""
    names: dict[int, str] = {}
    seen: set[int] = set()
    for frame in frames:
        for value in (*frame.f_locals.values(), *frame.f_globals.values()):
            if isinstance(value, nn.Module) and id(value) not in seen:
                seen.add(id(value))
                for name, p in value.named_parameters():
                    names.setdefault(id(p), name)
    return names


def optimizer_state(frames: list[tuple[FrameType, int]], user: list[FrameType]) -> Suspect | None:
    """The optimizer the error unwound through, when its state sits elsewhere than a parameter.

    Args:
        frames: Every frame the error unwound, outermost first.
        user: The program's own frames among them, innermost last (where its models are).
    """
    optimizer = next(
        (
            owner
            for frame, _ in frames
            if isinstance(owner := frame.f_locals.get("self"), torch.optim.Optimizer)
        ),
        None,
    )
    if optimizer is None:
        return None
    strays: list[tuple[int, int, torch.Tensor, str, torch.device]] = []
    for g, group in enumerate(optimizer.param_groups):
        for i, p in enumerate(group["params"]):
            if not isinstance(p, torch.Tensor):
                continue
            for key, value in optimizer.state.get(p, {}).items():
                if significant(value) and value.device != p.device:
                    strays.append((g, i, p, repr(key), value.device))
    if not strays:
        return None
    names = _parameter_names(reversed(user))
    g, i, p, key, device = strays[0]
    name = names.get(id(p))
    which = repr(name) if name else f"param_groups[{g}]['params'][{i}]"
    more = f" (and {len(strays) - 1} more like it)" if len(strays) > 1 else ""
    kind = type(optimizer).__name__
    return Suspect(
        f"the {kind} optimizer holds state {key} of parameter {which} (shape "
        f"{tuple(p.shape)}) on {device}, but the parameter is on {p.device}{more}",
        f"move the optimizer's state to its parameters with "
        f"torchport.to_device(optimizer, {str(p.device)!r}), or create the optimizer (or "
        "load its state_dict, which casts the state to each parameter's device) after "
        "model.to(device)",
    )


# -- a custom autograd.Function --------------------------------------------------------

_INVALID_GRADIENT = re.compile(
    r"Function (\w+) returned an invalid gradient at index (\d+) - "
    r"expected device (\S+) but got (\S+)"
)
_GRAPH_LIMIT = 10_000  # nodes looked at before giving up on finding the Function


def _find_node(roots: Iterable[Any], name: str) -> Any | None:
    """The autograd node called ``name`` in the graphs behind ``roots``' tensors."""
    stack: list[Any] = [t.grad_fn for t in roots if isinstance(t, torch.Tensor)]
    # id -> the node, held: on torch 2.11 (not 2.13, 2.15) a C++ node's Python object is
    # made at each read and freed with its last reference, and a freed one's id can come
    # back as a node not yet seen
    seen: dict[int, Any] = {}
    while stack and len(seen) < _GRAPH_LIMIT:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen[id(node)] = node
        if node.name() == name:
            return node
        stack += [n for n, _ in node.next_functions]
    return None


_Function = type[torch.autograd.Function]


def _function_classes(node_name: str) -> list[_Function]:
    """Every autograd.Function subclass whose backward node is called ``node_name``."""
    found: list[_Function] = []
    stack: list[_Function] = [torch.autograd.Function]
    while stack:
        for sub in stack.pop().__subclasses__():
            stack.append(sub)
            if f"{sub.__name__}Backward" == node_name:
                found.append(sub)
    return found


def autograd_function(said: str, values: Iterable[Any]) -> Suspect | None:
    """The autograd.Function whose backward returned a gradient on the wrong device.

    The class is found through the graph of the tensors on the failing line (the loss);
    when the line holds none (``fn.apply(x).sum().backward()``), among the Function
    subclasses whose node has that name, if only one has.

    Args:
        said: PyTorch's message.
        values: The values the failing line names (the loss, its tensors), to search
            their graphs for the node PyTorch named.
    """
    match = _INVALID_GRADIENT.search(said)
    if match is None:
        return None
    node_name, index, expected, got = match.groups()
    expected = expected.strip("'\",")
    got = got.strip("'\",.")
    node = _find_node(values, node_name)
    forward_cls = getattr(node, "_forward_cls", None)
    cls: _Function | None = None
    if isinstance(forward_cls, type) and issubclass(forward_cls, torch.autograd.Function):
        cls = forward_cls
    else:
        named = _function_classes(node_name)
        cls = named[0] if len(named) == 1 else None
    if cls is not None:
        where = ""
        try:
            backward = inspect.unwrap(cls.backward)
            where = f" ({inspect.getsourcefile(backward)}:{backward.__code__.co_firstlineno})"
        except (TypeError, AttributeError):  # a backward with no Python source
            pass
        title = f"autograd.Function {cls.__qualname__}{where}"
        method = f"{cls.__name__}.backward"
    else:
        base = node_name.removesuffix("Backward")
        title = f"the autograd function {node_name} (autograd.Function {base}?)"
        method = f"{base}.backward"
    return Suspect(
        f"the backward of {title} returned its gradient for input {index} on {got}, but "
        f"that input is on {expected}",
        f"make {method} build each gradient on its input's device: derive it from "
        "grad_output (torch.zeros_like(grad_output), ... device=grad_output.device), or save "
        "the device in forward (ctx.device = x.device) and return grad.to(ctx.device)",
        found=cls is not None,
    )


# -- a gradient hook -------------------------------------------------------------------

# python_hook.cpp: "hook 'name' has changed the type of value (was torch.cuda.FloatTensor
# got torch.FloatTensor)"; the same sentence reports a dtype change, which is not ours
HOOK_TYPES = re.compile(r"hook '([^']*)' has changed the type of value \(was (\S+) got (\S+?)\)")
_TYPE_DEVICES = ("cuda", "hip", "mps", "xpu", "meta", "hpu", "mtia", "privateuse")


def type_device(type_name: str) -> str:
    """The device type a tensor type names: ``torch.cuda.FloatTensor`` -> ``cuda``,
    ``torch.FloatTensor`` -> ``cpu``, ``MetaFloatType`` -> ``meta``."""
    lowered = type_name.lower()
    return next((d for d in _TYPE_DEVICES if d in lowered), "cpu")


def gradient_hook(said: str) -> Suspect | None:
    """A hook registered on a tensor that returned its gradient on another device."""
    match = HOOK_TYPES.search(said)
    if match is None:
        return None
    name, was, got = match.groups()
    expected, returned = type_device(was), type_device(got)
    if expected == returned:
        return None
    return Suspect(
        f"the gradient hook '{name}' (tensor.register_hook) returned its gradient on "
        f"{returned}, but the tensor and its gradient are on {expected}",
        f"make '{name}' return its gradient on the device of the gradient it receives: "
        "compute it from that gradient (grad * scale, torch.zeros_like(grad)), or end with "
        ".to(grad.device)",
    )


# -- code torch.compile traced --------------------------------------------------------

_USER_CODE = re.compile(r"^from user code:\s*$", re.MULTILINE)
_TRACED_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+), in (\S+)\s*$')


def compiled_code(said: str) -> str | None:
    """Where inside code torch.compile traced the mismatch happened, from Dynamo's message.

    Returns:
        ``'inside code torch.compile traced, at f.py:4 in f: `return c + b`'``, or
        ``None`` when the message holds no traced frame.
    """
    found = _USER_CODE.search(said)
    if found is None:
        return None
    lines = said[found.end() :].splitlines()
    last: tuple[str, int, str, str] | None = None
    for i, line in enumerate(lines):
        frame = _TRACED_FRAME.match(line)
        if frame is None:
            continue
        path, number, function = frame.group(1), int(frame.group(2)), frame.group(3)
        following = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if not following or _TRACED_FRAME.match(lines[i + 1]):
            following = linecache.getline(path, number).strip()
        last = (path, number, function, following)
    if last is None:
        return None
    path, number, function, code = last
    shown = f": `{code}`" if code else ""
    return f"inside code torch.compile traced, at {path}:{number} in {function}{shown}"
