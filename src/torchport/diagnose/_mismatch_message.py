"""What a device mismatch is, and the message that names its culprit.

:func:`is_device_mismatch` reads the error's text (every backend's wording, old releases'
too). :func:`describe_mismatch` reads the frames the error unwound, once, on the error path:
each ``Module._call_impl`` frame still holds its module and its inputs, so the message
names the innermost module, its path inside the outermost one (``encoder.layers.2.proj``),
which parameter, buffer, plain tensor attribute or input sits on which device, the user's
line with its operands, and the fix. Culprits outside the model (an optimizer's state, an
autograd.Function's backward, code torch.compile traced) are read by :mod:`._suspects`
first. What PyTorch said is kept: its sentence naming the devices, even when it is not the
message's first line. Nothing keeps tensors alive afterwards.
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import keyword
import linecache
import re
import types
from types import FrameType, TracebackType
from typing import Any

import torch
from torch import nn

from torchport._device_types import CPU, DEVICE_TYPES
from torchport._origin import is_library
from torchport.diagnose._culprit import ModuleCall, describe_calls, significant, unwrap
from torchport.diagnose._index_arguments import expression_at, index_culprit
from torchport.diagnose._remedies import host_factory, inline_factory, side_rule, through_helper
from torchport.diagnose._suspects import (
    HOOK_TYPES,
    autograd_function,
    compiled_code,
    gradient_hook,
    optimizer_state,
    type_device,
)
from torchport.errors import DeviceMismatchError

__all__ = ["describe_mismatch", "is_device_mismatch"]

# What each backend says when one op gets tensors on two devices. From PyTorch's sources
# (c10/aten TORCH_CHECKs, the autograd engine's validate_outputs, PackedSequence.cpp, the
# MPS and XPU backends) and, for old releases, the messages users report.
_MISMATCH = re.compile(
    "|".join(
        (
            # CUDA, ROCm, XPU, MPS (2.4+) and every backend that uses TensorIterator/checks
            r"expected all tensors to be on the same device",
            r"is not on the expected device",
            # checkDevice (TensorUtils.cpp), take_along_dim: "Expected tensor to have cuda:0
            # Device, but got tensor with cpu Device (while checking arguments for ...)"
            r"expected tensor to have \S+ device, but got tensor with \S+ device",
            # autograd: "returned an invalid gradient at index 0 - expected device cuda:0 but
            # got cpu"; index_put and mode: "expected device 'x' but got 'y'"
            r"expected device \S+ but got",
            r"(?:to be|are|be) on (?:the )?same device",
            r"same device as the indexed tensor",
            r"either on \S+ or on the same device",
            r"not at the same device",
            r"to have the same device",
            r"have the same device type",
            r"device type for generator",
            r"but expected it to be on",
            r"expected .{1,40} on the same device",
            r"tensors? (?:are |is )?on different devices",
            r"to a storage on different device",
            r"tensor device index mismatch",
            # before PyTorch 1.5 (TH): "Expected object of device type cuda but got device type cpu"
            r"expected object of device type \S+ but got device type",
            # MPS: a CPU tensor reached an MPS kernel (pytorch/pytorch#130790)
            r"placeholder storage has not been allocated on MPS device",
            r"passed CPU tensor to MPS op",
            # pack_padded_sequence's lengths on an accelerator; "1D cpu Int" is a dtype error
            r"'lengths' argument should be a 1D CPU int64 tensor, but got \d+D (?!cpu )\S",
            # nn.DataParallel (data_parallel.py): "module must have its parameters and
            # buffers on device cuda:0 (device_ids[0]) but found one of them on device: cpu"
            r"must have its parameters and buffers on device",
            # DistributedDataParallel (distributed.py): "...'s input module must be on the
            # same type of devices, but input module parameters locate in {'cpu', 'cuda'}"
            r"must be on the same type of devices",
            # FakeTensor propagation under torch.compile before 2.4: "Unhandled FakeTensor
            # Device Propagation for aten.add.Tensor, found two different devices cuda:0, cpu"
            r"FakeTensor Device Propagation",
            r"found two different devices",
        )
    ),
    re.IGNORECASE,
)
# "Expected tensor to have CPU Backend, but got tensor with CUDA Backend": a device mismatch
# only when the backends name different devices (SparseCPU vs CPU is a layout error)
_BACKEND_PAIR = re.compile(r"have (\w+) Backend, but got tensor with (\w+) Backend")
# conv: "Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be
# the same"; the same sentence also reports dtype-only mismatches, which are not ours
_TYPE_PAIR = re.compile(r"Input type \(([^)]*)\) and (?:weight|bias) type \(([^)]*)\) should be")


def _device_words(said: str) -> list[str]:
    """The devices PyTorch's sentence names, in order (``cuda:0``, ``cpu``, ``sim:0``).

    Every type of the vocabulary counts, and the name this process gave PyTorch's
    PrivateUse1 backend (``npu``, the simulated ``sim``), which no fixed list can know.
    """
    types = set(DEVICE_TYPES)
    types.add(torch._C._get_privateuse1_backend_name())
    # a two-letter type ("ve") counts only with its index: as a bare word it is prose
    words = "|".join(
        sorted(map(re.escape, (t for t in types if len(t) > 2)), key=len, reverse=True)
    )
    short = "|".join(map(re.escape, (t for t in types if len(t) <= 2)))
    return re.findall(rf"\b((?:{words})(?::\d+)?|(?:{short}):\d+)\b", said)


_backend = type_device  # "CUDA" (a backend) and "torch.cuda.FloatTensor" (a type) alike


def is_device_mismatch(err: BaseException) -> bool:
    """Whether ``err`` is PyTorch reporting tensors of one op on different devices."""
    if not isinstance(err, (RuntimeError, IndexError, ValueError)):
        return False
    if isinstance(err, DeviceMismatchError):
        return False
    message = str(err)
    for pairs in (_TYPE_PAIR, _BACKEND_PAIR):
        pair = pairs.search(message)
        if pair is not None:
            return _backend(pair.group(1)) != _backend(pair.group(2))
    hook = HOOK_TYPES.search(message)
    if hook is not None:  # a tensor hook's gradient changed type: ours if its device did
        return type_device(hook.group(2)) != type_device(hook.group(3))
    return _MISMATCH.search(message) is not None


# -- reading the traceback ------------------------------------------------------------

_CALL_CODES = frozenset({nn.Module._call_impl.__code__, nn.Module._wrapped_call_impl.__code__})


def _frames(tb: TracebackType | None) -> list[tuple[FrameType, int]]:
    """Each frame the error unwound, with the line it was at (not the frame's current line)."""
    frames = []
    while tb is not None:
        frames.append((tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    return frames


def _module_calls(frames: list[tuple[FrameType, int]]) -> list[ModuleCall]:
    calls: list[ModuleCall] = []
    for frame, _ in frames:
        owner = frame.f_locals.get("self")
        if not isinstance(owner, nn.Module):
            continue
        wrapper = owner
        owner = unwrap(owner)  # torch.compile's OptimizedModule stands for the module it wraps
        wrapped = frame.f_locals.get("module")
        if owner is wrapper and _is_parallel(owner) and isinstance(wrapped, nn.Module):
            owner = unwrap(wrapped)  # a (Distributed)DataParallel still being built
        if not calls or calls[-1].module is not owner:
            calls.append(ModuleCall(owner))
        call = calls[-1]
        code = frame.f_code
        if code in _CALL_CODES:
            call.args = tuple(frame.f_locals.get("args", ()))
            call.kwargs = dict(frame.f_locals.get("kwargs", {}) or {})
        elif not call.arg_names and code.co_name == "forward":
            call.arg_names = tuple(code.co_varnames[1 : code.co_argcount])
            if not call.args and not call.kwargs:  # forward() called directly
                call.kwargs = {n: frame.f_locals.get(n) for n in call.arg_names}
    return calls


def _is_parallel(module: nn.Module) -> bool:
    return isinstance(module, (nn.DataParallel, nn.parallel.DistributedDataParallel))


_NOT_FOUND = object()


def _attribute(owner: Any, name: str) -> Any:
    """``owner.name`` as stored, without running a property or ``__getattr__`` of user code.

    The failing line already ran once; evaluating it again could have side effects.
    """
    if isinstance(owner, nn.Module):
        stored = vars(owner)
        for table in ("_parameters", "_buffers", "_modules"):
            held = stored.get(table, {})
            if name in held:
                return held[name]
    try:
        value = inspect.getattr_static(owner, name, _NOT_FOUND)
    except Exception:  # an odd metaclass: give up on this name
        return _NOT_FOUND
    if isinstance(value, types.MemberDescriptorType):  # a __slots__ field: read by C, no code
        return value.__get__(owner, type(owner))
    if hasattr(type(value), "__get__") and not isinstance(value, torch.Tensor):
        return _NOT_FOUND  # a property, method or other descriptor: would run code
    return value


def _lookup(node: ast.expr, frame: FrameType) -> Any:
    """Value of a name, ``a.b`` or ``batch["x"]`` in a frame; never runs the program's code."""
    if isinstance(node, ast.Name):
        return frame.f_locals.get(node.id, frame.f_globals.get(node.id, _NOT_FOUND))
    if isinstance(node, ast.Attribute):
        owner = _lookup(node.value, frame)
        return _NOT_FOUND if owner is _NOT_FOUND else _attribute(owner, node.attr)
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        container, key = _lookup(node.value, frame), node.slice.value
        # The base types' own lookups: no subclass __getitem__, no defaultdict insertion,
        # and never indexing a tensor (that is an op)
        try:
            if isinstance(container, dict):
                return dict.get(container, key, _NOT_FOUND)
            if isinstance(container, (list, tuple)) and isinstance(key, int):
                base = list if isinstance(container, list) else tuple
                return base.__getitem__(container, key)  # type: ignore[index]
        except (IndexError, TypeError):
            return _NOT_FOUND
    return _NOT_FOUND


def _line_values(frame: FrameType, lineno: int) -> tuple[str, list[tuple[str, Any]]]:
    """The source line a frame stopped at, and what each name on it holds (read as stored)."""
    code = linecache.getline(frame.f_code.co_filename, lineno).strip()
    try:
        tree = ast.parse(code.rstrip(":"), mode="exec")
    except SyntaxError:  # one line of a longer statement: fall back to its dotted names
        dotted = re.findall(r"[A-Za-z_][\w.]*", code)
        names = [n for n in dotted if not any(keyword.iskeyword(p) for p in n.split("."))]
        tree = ast.parse("\n".join(names) or "pass")
    nodes = [n for n in ast.walk(tree) if isinstance(n, (ast.Name, ast.Attribute, ast.Subscript))]
    found: list[tuple[str, Any]] = []
    seen: set[str] = set()
    for node in nodes:
        try:
            value = _lookup(node, frame)
        except Exception:  # reading a stored value should not fail; this is a best guess
            continue
        name = ast.unparse(node)
        if value is not _NOT_FOUND and name not in seen:
            seen.add(name)
            found.append((name, value))
    return code, found


def _said(message: str) -> str:
    """PyTorch's sentence about the devices: the first line, or the line that names them.

    Dynamo puts "Tensor device mismatch" first and the devices on an "Explanation:"
    line; older FakeTensor errors put the traced call first.
    """
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    first = lines[0]
    if is_device_mismatch(RuntimeError(first)):
        return first
    for line in lines[1:]:
        if is_device_mismatch(RuntimeError(line)):
            line = line.removeprefix("Explanation:").strip()
            return f"{first}: {line}" if len(first) <= 60 else line
    return first


def describe_mismatch(err: BaseException, tb: TracebackType | None) -> str:
    """The message of the :class:`~torchport.DeviceMismatchError` raised from ``err``, read
    from the frames of ``tb`` (the traceback the error unwound)."""
    frames = _frames(tb)
    message = str(err)
    said = _said(message) or type(err).__name__
    calls = _module_calls(frames)
    user = [(f, n) for f, n in frames if not is_library(f.f_code.co_filename)]
    code, values = _line_values(*user[-1]) if user else ("", [])
    operands = [(name, v.device) for name, v in values if significant(v)][:8]
    parts: list[str] = []
    fix = "move every tensor of that op to one device with .to(device) or torchport.to_device"
    traced = compiled_code(message)
    if traced:
        parts += [traced, _op_devices(said)]
    suspect = optimizer_state(frames, [f for f, _ in user]) or gradient_hook(message)
    if suspect is None:
        function = autograd_function(message, (v for _, v in values))
        if function is not None and (function.found or not calls):
            suspect = function
    side = side_rule(said)
    made = _made_on_host(user, calls, values, said) if side is None else None
    if suspect is not None:
        parts.append(suspect.sentence)
        fix = suspect.fix
    elif calls:
        names = {id(v): name for name, v in values if isinstance(v, nn.Module)}
        head, culprit_fix = describe_calls(calls, names=names)
        parts.append(head)
        fix = culprit_fix or fix
    index = _index_argument(user, code, values, said) if suspect is None else None
    if index is not None:  # an index op: which of its arguments, as the line writes it
        parts.append(index[0])
        fix = index[1]
    elif side is not None and suspect is None:  # the op needs that argument on one side
        parts.append(side[0])
        fix = side[1]
    if made is not None and suspect is None:
        parts.append(made)
        fix = "create that tensor on the input's device (device=x.device) where it is made"
    if user:
        frame, lineno = user[-1]
        where = "called at" if traced else "at"
        line = f"{where} {frame.f_code.co_filename}:{lineno} in {frame.f_code.co_name}"
        if code:  # no source for `python -c`, exec'd strings, deleted files: no empty quote
            line += f": `{code}`"
        if operands:
            outer = dict(through_helper(user, operands))
            line += " with " + ", ".join(
                f"{n} on {d}" + (f" (the caller's {outer[n]})" if n in outer else "")
                for n, d in operands
            )
        parts.append(line)
    if not traced and not operands and not calls and suspect is None and side is None:
        parts.append(_op_devices(said))
    return "device mismatch: " + "; ".join(parts) + f". To fix: {fix}. (PyTorch said: {said})"


def _index_argument(
    user: list[tuple[FrameType, int]], code: str, values: list[tuple[str, Any]], said: str
) -> tuple[str, str] | None:
    """The index op's argument on the wrong device, read from the call the program's
    innermost frame was making (its exact source span) and from the failing line, named
    as a helper's caller wrote it too."""
    sources: list[ast.AST] = []
    try:
        expression = expression_at(user[-1][0]) if user else None
        if expression is not None:
            sources.append(expression)
        with contextlib.suppress(SyntaxError):
            sources.append(ast.parse(code.rstrip(":"), mode="exec"))
        callers = dict(through_helper(user, values))
        return index_culprit(sources, dict(values), said, _device_words(said), callers=callers)
    except Exception:  # a diagnosis that fails must not hide the real error
        return None


def _made_on_host(
    user: list[tuple[FrameType, int]],
    calls: list[ModuleCall],
    values: list[tuple[str, Any]],
    said: str,
) -> str | None:
    """A CPU tensor of the mismatch made by a torch factory without device= in the program."""
    words = _device_words(said)
    devices = [d for d in dict.fromkeys(words) if d != "cpu"]
    if "cpu" not in words or not devices:
        return None
    on_host = [v for _, v in values if significant(v) and v.device.type == "cpu"]
    for call in calls:
        for arg in [*call.args, *(call.kwargs or {}).values()]:
            if significant(arg) and arg.device.type == "cpu":
                on_host.append(arg)
    try:
        found = host_factory([f for f, _ in user], on_host, devices[0])
        named_on_host = any(v.device.type == CPU for _, v in values if significant(v))
        if found is None and user and not named_on_host:
            # nothing on the line holds the host tensor: it was made there, unnamed, in the
            # model's own code (not a child module's, whose input would be named)
            frame = user[-1][0]
            if not calls or frame.f_locals.get("self") is calls[-1].module:
                found = inline_factory(frame, devices[0])
        return found
    except Exception:  # a diagnosis that fails must not hide the real error
        return None


def _op_devices(said: str) -> str:
    devices = list(dict.fromkeys(_device_words(said)))
    devices.sort(key=lambda device: device != "cpu")  # torch's wording orders them by version
    if len(devices) > 1:
        return "the op mixed tensors on " + " and ".join(devices)
    return "the op mixed tensors on different devices"
