"""Where a device mismatch's usual fix is wrong: the fix that applies instead.

Three kinds, each read from the error and the frames it unwound (on the error path only):

* **An argument with a required side.** Some ops want one argument on a given device
  whatever the others are on: ``pack_padded_sequence``'s ``lengths`` on the CPU, an
  index on the CPU or on the indexed tensor's device, a generator on the device of the
  tensor it fills. "Move every tensor to one device" is wrong there (they may all be on
  it already); :func:`side_rule` names the argument and its side.
* **A tensor made on the host inside the program.** ``torch.arange(n)`` or
  ``torch.zeros(...)`` without ``device=`` in ``forward`` lands on the CPU and meets the
  model's device wherever it is passed (a child module, an op further down). The fix is
  to create it on the input's device, not to move the model; :func:`host_factory` finds
  the assignment in any frame of the program the error went through.
* **A name through a helper.** An expression indexed inside a helper
  (``batch["idx"]`` in ``def gather(batch)``) is named as the caller wrote it too
  (``data["idx"]``): :func:`through_helper`.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import re
import textwrap
from collections.abc import Mapping, Sequence
from types import CodeType, FrameType
from typing import Any

import torch

from torchport._device_types import CPU, MOVE_METHODS
from torchport.diagnose._index_arguments import expression_at

__all__ = ["host_factory", "inline_factory", "side_rule", "through_helper"]

# (PyTorch's sentence, what it means, the fix)
_SIDES: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (
        re.compile(r"'lengths' argument should be a 1D CPU int64 tensor", re.IGNORECASE),
        "pack_padded_sequence reads the lengths on the host, so they must be a CPU tensor "
        "whatever device the padded data is on",
        "pass the lengths on the CPU: pack_padded_sequence(x, lengths.cpu(), ...) (only the "
        "padded data belongs on the device)",
    ),
    (
        re.compile(r"indices should be either on (\S+) or on the same device", re.IGNORECASE),
        "an index tensor must be on the CPU or on the device of the tensor it indexes",
        "move the index to the indexed tensor's device (index.to(x.device)), or keep it on the CPU",
    ),
    (
        re.compile(r"device type for generator but found", re.IGNORECASE),
        "a random generator must be on the device of the tensor it fills",
        "create the generator there: torch.Generator(device=x.device), or pass no generator",
    ),
)


def side_rule(said: str) -> tuple[str, str] | None:
    """(what the op requires, the fix) when PyTorch's sentence is about a required side."""
    for pattern, sentence, fix in _SIDES:
        if pattern.search(said):
            return sentence, fix
    return None


_FACTORIES = frozenset(
    {
        "arange",
        "as_tensor",
        "empty",
        "eye",
        "from_numpy",
        "full",
        "linspace",
        "logspace",
        "ones",
        "rand",
        "randint",
        "randn",
        "randperm",
        "tensor",
        "tril_indices",
        "triu_indices",
        "zeros",
    }
)
# Calls that put their result somewhere on purpose: an expression holding one is not a
# factory's forgotten device
_PLACING = frozenset({"to", "type_as", "pin_memory", *MOVE_METHODS})


def _function_tree(code: CodeType) -> tuple[ast.AST, int] | None:
    """The function of ``code`` parsed, and the line its source starts at."""
    try:
        lines, start = inspect.getsourcelines(code)
    except (OSError, TypeError):
        return None
    try:
        return ast.parse(textwrap.dedent("".join(lines))), max(start, 1)
    except SyntaxError:
        return None


def _factory_without_device(node: ast.AST) -> str | None:
    """``torch.arange`` (the name) when ``node`` calls a torch factory with no ``device=``."""
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else None
    if name not in _FACTORIES:
        return None
    if any(k.arg in ("device", "like", "out") for k in node.keywords):
        return None
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return f"{func.value.id}.{name}"
    return None


def _host_factory_in(value: ast.expr, held: Mapping[str, Any]) -> str | None:
    """The factory (``torch.arange``) a value is built from on the host, or ``None``.

    The value is built from a factory without ``device=`` when one appears in it
    (``torch.arange(n)``, ``torch.arange(n).unsqueeze(0)``, ``torch.tril(torch.ones(n,
    n)) == 0``), nothing in it names a device or moves a tensor (``device=``, ``.to()``,
    ``.cuda()``), and no other tensor on the host feeds it (``held``: the names the
    frame binds; a batch the program keeps on the host is not a factory's doing).
    """
    found: str | None = None
    for node in ast.walk(value):
        if isinstance(node, ast.Call):
            if any(k.arg is None or k.arg == "device" for k in node.keywords):
                return None
            if isinstance(node.func, ast.Attribute) and node.func.attr in _PLACING:
                return None
            found = found or _factory_without_device(node)
        elif isinstance(node, ast.Name):
            other = held.get(node.id)
            if isinstance(other, torch.Tensor) and other.device.type == CPU and other.dim() > 0:
                return None
    return found


def _helper_factory(call: ast.expr, frame: FrameType) -> tuple[str, str] | None:
    """(the helper's name, its factory) when ``call`` calls a function of the program
    (``make_mask(n)``, ``self._causal_mask(n)``) that returns a factory's tensor."""
    if not isinstance(call, ast.Call):
        return None
    func = call.func
    target: Any = None
    if isinstance(func, ast.Name):
        target = frame.f_locals.get(func.id, frame.f_globals.get(func.id))
    elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        owner = frame.f_locals.get(func.value.id)
        if owner is not None:
            try:
                target = inspect.getattr_static(type(owner), func.attr, None)
            except Exception:  # an odd metaclass: no helper
                return None
    target = getattr(target, "__func__", target)  # staticmethod, classmethod
    code = getattr(target, "__code__", None)
    if not isinstance(code, CodeType):
        return None
    parsed = _function_tree(code)
    if parsed is None:
        return None
    for node in ast.walk(parsed[0]):
        if isinstance(node, ast.Return) and node.value is not None:
            factory = _host_factory_in(node.value, {})
            if factory is not None:
                return ast.unparse(func), factory
    return None


def _missing(factory: str) -> str:
    """What the factory call lacks: ``device=``, or for ``from_numpy`` (which has no device
    and always makes a CPU tensor) a move."""
    return "without .to(device)" if factory.endswith("from_numpy") else "without device="


def _made_there(factory: str, on: str) -> str:
    """The factory call that makes the tensor on ``on`` (``inp.device``)."""
    if factory.endswith("from_numpy"):
        return f"{factory}(...).to({on})"
    return f"{factory}(..., device={on})"


def _device_input(frame: FrameType) -> str:
    """The name of an argument of the frame's function that holds a tensor off the host."""
    code = frame.f_code
    for name in code.co_varnames[: code.co_argcount]:
        value = frame.f_locals.get(name)
        if isinstance(value, torch.Tensor) and value.device.type != CPU:
            return name
    return ""


def host_factory(
    frames: Sequence[FrameType], on_host: Sequence[torch.Tensor], device: str | None
) -> str | None:
    """The sentence and fix for a CPU tensor made by a factory without ``device=``.

    The tensor is found by identity among the locals of each model frame the error went
    through (the child module that received it, the forward that made it), and its
    assignment is read in that frame's function: a factory in the value, or a helper of
    the program returning one.

    Args:
        frames: The program's frames the error unwound, outermost first.
        on_host: The CPU tensors the error involves (operands, a module's inputs).
        device: The other device of the mismatch, when known.
    """
    wanted = {id(t) for t in on_host}
    if not wanted:
        return None
    for frame in reversed(frames):
        if not isinstance(frame.f_locals.get("self"), torch.nn.Module):
            continue  # a model's own code: a script's batch made on the host is not this
        names = {name for name, value in frame.f_locals.items() if id(value) in wanted}
        if not names:
            continue
        parsed = _function_tree(frame.f_code)
        if parsed is None:
            continue
        tree, start = parsed
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, value = node.targets[0], node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                target, value = node.target, node.value
            else:
                continue
            if not (isinstance(target, ast.Name) and target.id in names):
                continue
            made = _made_by(value, frame)
            if made is None:
                continue
            through, factory = made
            line = start + node.lineno - 1
            text = linecache.getline(frame.f_code.co_filename, line).strip()
            where = device or "the input's device"
            on, whose = _fix_device(frame)
            return (
                f"'{target.id}' was made on the CPU by {through}{factory}() {_missing(factory)} "
                f"at {frame.f_code.co_filename}:{line} in {frame.f_code.co_name} (`{text}`), "
                f"and met tensors on {where}; create it on the input's device: "
                f"{_made_there(factory, on)}{whose}"
            )
    return None


def _made_by(value: ast.expr, frame: FrameType) -> tuple[str, str] | None:
    """The host factory that makes ``value`` (``torch.arange(n)``), directly or through a
    helper of the program that returns one: ``(through, factory)``, ``through`` being
    the words naming the helper ("" when direct); None when neither is found."""
    factory = _host_factory_in(value, frame.f_locals)
    if factory is not None:
        return "", factory
    helper = _helper_factory(value, frame)
    if helper is None:
        return None
    return f"{helper[0]}(), which returns a tensor of ", helper[1]


def _fix_device(frame: FrameType) -> tuple[str, str]:
    """The device the fix creates the tensor on (``idx.device``, from ``forward``'s input)
    and, where no input is known, the words saying what ``x`` stands for."""
    given = _device_input(frame)
    if given:
        return f"{given}.device", ""
    return "x.device", " with x an input of that function"


def inline_factory(frame: FrameType, device: str | None) -> str | None:
    """The sentence and fix for a host tensor made on the failing line itself, never bound
    to a name: ``x + torch.arange(n)``, ``scores + causal_mask(n)`` (a helper of the
    program that returns a factory's tensor).

    Args:
        frame: The model frame (its ``self`` a module) whose line failed, at the failing
            instruction.
        device: The other device of the mismatch, when known.
    """
    if not isinstance(frame.f_locals.get("self"), torch.nn.Module):
        return None
    expression = expression_at(frame)
    if expression is None:
        return None
    for node in ast.walk(expression):
        if not isinstance(node, ast.Call):
            continue
        made = _made_by(node, frame)
        if made is None:
            continue
        through, factory = made
        on, whose = _fix_device(frame)
        return (
            f"`{ast.unparse(node)}` was made on the CPU by {through}{factory}() "
            f"{_missing(factory)} on that line, and met tensors on "
            f"{device or 'the input device'}; create it on the input's device: "
            f"{_made_there(factory, on)}{whose}"
        )
    return None


def _call_args(caller: FrameType, lineno: int, callee: str) -> tuple[dict[int, str], bool] | None:
    """Position -> source text of the arguments of the call of ``callee`` the caller was
    running, and whether it was called as an attribute (``self.gather(batch)``).

    The call is the caller's current instruction's (:func:`expression_at`); where the
    positions are missing, a call of ``callee`` on the caller's line when the line has
    exactly one. A line calling it more than once (``print(f(5), f(x))``) names none then:
    the first call did not always raise.
    """
    running = expression_at(caller)
    if isinstance(running, ast.Call) and _called(running) == callee:
        calls = [running]
    else:
        text = linecache.getline(caller.f_code.co_filename, lineno).strip()
        try:
            tree = ast.parse(text.rstrip(":"), mode="exec")
        except SyntaxError:
            return None
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and _called(n) == callee]
    if len(calls) != 1:
        return None
    (call,) = calls
    args = {i: ast.unparse(arg) for i, arg in enumerate(call.args)}
    return args, isinstance(call.func, ast.Attribute)


def _called(call: ast.Call) -> str | None:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)


def through_helper(
    frames: Sequence[tuple[FrameType, int]], operands: Sequence[tuple[str, Any]]
) -> list[tuple[str, str]]:
    """(name in the helper, the caller's expression) for operands read from a parameter.

    ``frames``: the program's frames with the line each was at when the error unwound
    it, outermost first; the last is the helper's.
    """
    if len(frames) < 2:
        return []
    helper, (caller, line) = frames[-1][0], frames[-2]
    code = helper.f_code
    params = code.co_varnames[: code.co_argcount]
    called = _call_args(caller, line, code.co_name)
    if not called:
        return []
    args, as_attribute = called
    bound = 1 if as_attribute and params[:1] in (("self",), ("cls",)) else 0
    found = []
    for name, _ in operands:
        root = re.match(r"[A-Za-z_]\w*", name)
        if root is None or root.group(0) not in params:
            continue
        position = params.index(root.group(0)) - bound
        if position in args:
            outer = args[position] + name[len(root.group(0)) :]
            if outer != name:
                found.append((name, outer))
    return found
