"""strict(): turn PyTorch's device-mismatch errors into ones that name the culprit.

Nothing is installed while the block runs, so the fast path costs nothing: no
hooks, no modes. When an error escapes the block, its traceback still holds the
frames it unwound, and each ``Module._call_impl`` frame still holds its module
and its inputs. From those, the message names the innermost module, its path
inside the outermost one (``encoder.layers.2.proj``), which parameter, buffer,
plain tensor attribute or input sits on which device, and the fix. The frames
are read once, on the error path; nothing keeps tensors alive afterwards.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import itertools
import linecache
import os
import re
from collections import Counter
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any, ParamSpec, TypeGuard, TypeVar, overload

import torch
from torch import nn

import torchport
from torchport.errors import ConfigError, DeviceMismatchError

__all__ = ["is_device_mismatch", "note_oom", "strict"]

P = ParamSpec("P")
R = TypeVar("R")

_MISMATCH = re.compile(
    "|".join(
        (
            r"expected all tensors to be on the same device",
            r"is not on the expected device",
            r"expected device \S+ but got device",
            r"(?:to be|are|be) on the same device",
            r"same device as the indexed tensor",
            r"either on \S+ or on the same device",
            r"not at the same device",
            r"to have the same device",
            r"have the same device type",
            r"device type for generator",
            r"but expected it to be on",
            r"expected .{1,40} on the same device",
            r"tensors? (?:are |is )?on different devices",
        )
    ),
    re.IGNORECASE,
)
# conv: "Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be
# the same"; the same sentence also reports dtype-only mismatches, which are not ours
_TYPE_PAIR = re.compile(r"Input type \(([^)]*)\) and (?:weight|bias) type \(([^)]*)\) should be")
_BACKENDS = ("cuda", "hip", "mps", "xpu", "meta", "hpu", "mtia", "privateuse")
_DEVICE_WORD = re.compile(r"\b(cpu|meta|cuda(?::\d+)?|mps(?::\d+)?|xpu(?::\d+)?|hpu(?::\d+)?)\b")


def _backend(type_name: str) -> str:
    lowered = type_name.lower()
    return next((b for b in _BACKENDS if b in lowered), "cpu")


def is_device_mismatch(err: BaseException) -> bool:
    """Whether ``err`` is PyTorch reporting tensors of one op on different devices."""
    if not isinstance(err, (RuntimeError, IndexError, ValueError)):
        return False
    if isinstance(err, DeviceMismatchError):
        return False
    message = str(err)
    pair = _TYPE_PAIR.search(message)
    if pair is not None:
        return _backend(pair.group(1)) != _backend(pair.group(2))
    return _MISMATCH.search(message) is not None


def note_oom(err: BaseException) -> None:
    """Attach the memory diagnosis to an out-of-memory error, once; never raises.

    Reads only the error; does not synchronize.
    """
    if getattr(err, "_torchport_oom_noted", False):
        return
    for name in ("torchport.diagnose._oom", "torchport.diagnose._memory"):
        try:
            explain = importlib.import_module(name).explain_oom
        except (ImportError, AttributeError):
            continue
        try:
            err.add_note(f"torchport: {explain(err)}")
            err._torchport_oom_noted = True  # type: ignore[attr-defined]
        except Exception:  # a diagnosis that fails must not hide the real error
            pass
        return


# -- reading the traceback ------------------------------------------------------------

_CALL_CODES = frozenset({nn.Module._call_impl.__code__, nn.Module._wrapped_call_impl.__code__})
_INTERNAL = tuple(
    os.path.dirname(os.path.abspath(m.__file__ or "")) + os.sep for m in (torch, torchport)
)


class _Call:
    """One module seen in the traceback, with what it was called with."""

    def __init__(self, module: nn.Module) -> None:
        self.module = module
        self.args: tuple[Any, ...] = ()
        self.kwargs: dict[str, Any] = {}
        self.arg_names: list[str] = []


def _frames(tb: TracebackType | None) -> list[tuple[FrameType, int]]:
    """Each frame the error unwound, with the line it was at (not the frame's current line)."""
    frames = []
    while tb is not None:
        frames.append((tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    return frames


def _module_calls(frames: list[tuple[FrameType, int]]) -> list[_Call]:
    calls: list[_Call] = []
    for frame, _ in frames:
        owner = frame.f_locals.get("self")
        if not isinstance(owner, nn.Module):
            continue
        if not calls or calls[-1].module is not owner:
            calls.append(_Call(owner))
        call = calls[-1]
        code = frame.f_code
        if code in _CALL_CODES:
            call.args = tuple(frame.f_locals.get("args", ()))
            call.kwargs = dict(frame.f_locals.get("kwargs", {}) or {})
        elif not call.arg_names and code.co_name == "forward":
            call.arg_names = list(code.co_varnames[1 : code.co_argcount])
            if not call.args and not call.kwargs:  # forward() called directly
                call.kwargs = {n: frame.f_locals.get(n) for n in call.arg_names}
    return calls


def _path(calls: list[_Call]) -> str:
    """Dotted path of the innermost module under the outermost, e.g. ``encoder.layers.2.proj``."""
    root, target = calls[0].module, calls[-1].module
    for name, sub in root.named_modules():
        if sub is target:
            return str(name)
    parts = []  # not registered under the root: join the hops we can see
    for outer, inner in itertools.pairwise(calls):
        hop = next((n for n, s in outer.module.named_modules() if s is inner.module), None)
        if hop is None:
            outer_name = type(outer.module).__name__
            return f"<{type(target).__name__}, not a registered submodule of {outer_name}>"
        if hop:
            parts.append(hop)
    return ".".join(parts)


def _significant(t: object) -> TypeGuard[torch.Tensor]:
    # a 0-dim CPU tensor mixes with any device (it acts as a scalar)
    return isinstance(t, torch.Tensor) and not (t.device.type == "cpu" and t.dim() == 0)


def _module_tensors(module: nn.Module) -> list[tuple[str, str, torch.device]]:
    found = [("parameter", n, p.device) for n, p in module._parameters.items() if p is not None]
    found += [("buffer", n, b.device) for n, b in module._buffers.items() if _significant(b)]
    found += [
        ("plain tensor attribute", n, v.device)
        for n, v in vars(module).items()
        if _significant(v) and not n.startswith("_")
    ]
    return found


def _inputs(call: _Call) -> list[tuple[str, torch.device]]:
    found = []
    for i, arg in enumerate(call.args):
        name = call.arg_names[i] if i < len(call.arg_names) else None
        label = f"input {i}" + (f" ({name!r})" if name else "")
        found += _leaves(label, arg)
    for name, arg in call.kwargs.items():
        found += _leaves(f"input {name!r}", arg)
    return found


def _leaves(label: str, value: Any, depth: int = 0) -> list[tuple[str, torch.device]]:
    if _significant(value):
        return [(label, value.device)]
    if depth >= 2:  # enough to name the culprit in a typical batch
        return []
    if isinstance(value, (list, tuple)):
        return [x for i, v in enumerate(value) for x in _leaves(f"{label}[{i}]", v, depth + 1)]
    if isinstance(value, dict):
        return [x for k, v in value.items() for x in _leaves(f"{label}[{k!r}]", v, depth + 1)]
    return []


def _majority(devices: list[torch.device]) -> torch.device | None:
    counts = Counter(devices)
    return counts.most_common(1)[0][0] if counts else None


_NOT_FOUND = object()


def _lookup(node: ast.expr, frame: FrameType) -> Any:
    """Value of a name, ``a.b`` or ``batch["x"]`` in a frame; never calls anything but getattr."""
    if isinstance(node, ast.Name):
        return frame.f_locals.get(node.id, frame.f_globals.get(node.id, _NOT_FOUND))
    if isinstance(node, ast.Attribute):
        owner = _lookup(node.value, frame)
        return _NOT_FOUND if owner is _NOT_FOUND else getattr(owner, node.attr, _NOT_FOUND)
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        container, key = _lookup(node.value, frame), node.slice.value
        if isinstance(container, (dict, list, tuple)):  # never index a tensor: that is an op
            try:
                return container[key]  # type: ignore[index]
            except (KeyError, IndexError, TypeError):
                return _NOT_FOUND
    return _NOT_FOUND


def _operands(frame: FrameType, lineno: int) -> tuple[str, list[tuple[str, torch.device]]]:
    """The source line a frame stopped at and the tensors it names, with their devices."""
    code = linecache.getline(frame.f_code.co_filename, lineno).strip()
    try:
        tree = ast.parse(code.rstrip(":"), mode="exec")
    except SyntaxError:  # one line of a longer statement: fall back to its dotted names
        tree = ast.parse("\n".join(re.findall(r"[A-Za-z_][\w.]*", code)) or "pass")
    nodes = [n for n in ast.walk(tree) if isinstance(n, (ast.Name, ast.Attribute, ast.Subscript))]
    found: list[tuple[str, torch.device]] = []
    seen: set[str] = set()
    for node in nodes:
        try:
            value = _lookup(node, frame)
        except Exception:  # a property may raise; this is a best guess
            continue
        name = ast.unparse(node)
        if _significant(value) and name not in seen:
            seen.add(name)
            found.append((name, value.device))
    return code, found[:8]


def _describe(err: BaseException, frames: list[tuple[FrameType, int]]) -> str:
    calls = _module_calls(frames)
    user = [(f, n) for f, n in frames if not f.f_code.co_filename.startswith(_INTERNAL)]
    said = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    parts: list[str] = []
    fix = "move every tensor of that op to one device with .to(device) or torchport.to_device"
    if calls:
        head, culprit_fix = _module_sentence(calls)
        parts.append(head)
        fix = culprit_fix or fix
    if user:
        frame, lineno = user[-1]
        code, operands = _operands(frame, lineno)
        line = f"at {frame.f_code.co_filename}:{lineno} in {frame.f_code.co_name}: `{code}`"
        if operands:
            line += " with " + ", ".join(f"{n} on {d}" for n, d in operands)
        parts.append(line)
        if not operands and not calls:
            parts.append(_op_devices(said))
    elif not calls:
        parts.append(_op_devices(said))
    return "device mismatch: " + "; ".join(parts) + f". To fix: {fix}. (PyTorch said: {said})"


def _op_devices(said: str) -> str:
    devices = list(dict.fromkeys(_DEVICE_WORD.findall(said)))
    if len(devices) > 1:
        return "the op mixed tensors on " + " and ".join(devices)
    return "the op mixed tensors on different devices"


_CREATE_FIX = (
    "create tensors inside forward on the input's device, e.g. torch.zeros(n, device=x.device), "
    "or register them as buffers so model.to() moves them"
)


def _module_sentence(calls: list[_Call]) -> tuple[str, str | None]:
    call = calls[-1]
    module = call.module
    kind = type(module).__name__
    path = _path(calls)
    root = type(calls[0].module).__name__
    name = f"{kind} {path!r}" if path else kind
    if path and len(calls) > 1:
        name += f" (in {root})"
    own = _module_tensors(module)
    registered = [(r, n, d) for r, n, d in own if r != "plain tensor attribute"]
    plain = [(r, n, d) for r, n, d in own if r == "plain tensor attribute"]
    inputs = _inputs(call)
    home = _majority([d for _, _, d in registered])
    if home is None:  # no parameters: the inputs disagree among themselves
        devices = list(dict.fromkeys(d for _, d in inputs))
        if len(devices) > 1:
            listed = ", ".join(f"{label} on {d}" for label, d in inputs)
            return f"{name} got {listed}", "move the inputs to one device with .to(device)"
        if plain and inputs and any(d != inputs[0][1] for _, _, d in plain):
            return _plain_sentence(name, plain, inputs[0][1])
        where = f" (its inputs are on {devices[0]})" if devices else ""
        return f"inside {name}{where}", _CREATE_FIX
    mixed = [(r, n, d) for r, n, d in registered if d != home]
    if mixed:
        r, n, d = mixed[0]
        return (
            f"{name} has its {r} {n!r} on {d} but the rest of its parameters on {home}",
            f"call model.to({str(home)!r}) after adding or replacing the {r} {n!r}",
        )
    stray_plain = [p for p in plain if p[2] != home]
    if stray_plain:
        return _plain_sentence(name, stray_plain, home)
    stray = [(label, d) for label, d in inputs if d != home]
    first = registered[0]
    if not stray:
        return (
            f"inside {name} (its {first[0]} {first[1]!r} is on {home})",
            _CREATE_FIX,
        )
    label, there = stray[0]
    root_home = _majority(_root_devices(calls[0].module))
    sentence = f"{name} got {label} on {there} but its {first[0]} {first[1]!r} is on {home}"
    if len(calls) > 1 and root_home is not None and root_home == there:
        return (
            sentence + f" while most of {root} is on {there}, so this layer was left behind",
            f"call model.to({str(there)!r}) after adding or replacing layers",
        )
    return (
        sentence,
        f"move the input with x.to({str(home)!r}) (or torchport.to_device(batch, {str(home)!r})),"
        f" or move the model with model.to({str(there)!r})",
    )


def _plain_sentence(
    name: str, plain: list[tuple[str, str, torch.device]], home: torch.device
) -> tuple[str, str]:
    _, attr, where = plain[0]
    return (
        f"{name} uses the plain tensor attribute {attr!r} on {where} (not a registered buffer, "
        f"so model.to() does not move it) with tensors on {home}",
        f"register it with self.register_buffer({attr!r}, tensor) so model.to(device) moves it",
    )


def _root_devices(root: nn.Module) -> list[torch.device]:
    devices = [p.device for p in root.parameters()]
    return devices + [b.device for b in root.buffers() if _significant(b)]


# -- the public face ---------------------------------------------------------------------


class _Strict(contextlib.ContextDecorator):
    """The context manager and decorator behind :func:`strict`; holds no state."""

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is None:
            return
        if isinstance(exc, torch.OutOfMemoryError):
            note_oom(exc)
            return
        if not is_device_mismatch(exc):
            return
        try:
            message = _describe(exc, _frames(tb))
        except Exception:  # never let the explanation hide the original error
            return
        raise DeviceMismatchError(message) from exc

    def __repr__(self) -> str:
        return "torchport.strict()"


@overload
def strict() -> _Strict: ...
@overload
def strict(func: Callable[P, R], /) -> Callable[P, R]: ...
def strict(func: Callable[P, R] | None = None, /) -> _Strict | Callable[P, R]:
    """Make device mismatches inside a block or function name their culprit.

    Use it as ``with tp.strict():``, ``@tp.strict()`` or ``@tp.strict``. When
    PyTorch raises a device-mismatch error inside, a
    :class:`~torchport.DeviceMismatchError` (a ``RuntimeError``) is raised from it
    instead, naming the module path (``encoder.layers.2.proj``) and class, which
    parameter, buffer, plain tensor attribute or input is on which device, the
    source line, and the fix. Other errors pass through unchanged; an
    out-of-memory error gets a note explaining it. Nothing is hooked while the
    code runs, so results and speed are unchanged. Never synchronizes.

    Mismatches are found where PyTorch reports them. Kernels of the ``meta``
    device skip some device checks (``matmul``, ``conv``), so there a mix may pass.

    Args:
        func: The function to wrap, when used as ``@tp.strict`` without parentheses.

    Returns:
        A context manager that is also a decorator, or the wrapped function.

    Raises:
        ConfigError: When ``func`` is not callable.
    """
    if func is None:
        return _Strict()
    # a class or a module would come back as a plain function: refuse rather than surprise
    if not callable(func) or isinstance(func, (type, nn.Module)):
        what = func.__name__ if isinstance(func, type) else type(func).__name__
        raise ConfigError(
            f"tp.strict got {what} {_short_repr(func)}; pass a function or method to decorate "
            "(@tp.strict), or nothing and wrap the calls: with tp.strict(): model(x)"
        )
    wrapped: Callable[P, R] = _Strict()(func)  # ContextDecorator applies functools.wraps
    return wrapped


def _short_repr(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


strict.__module__ = "torchport"
