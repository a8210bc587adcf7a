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
from collections.abc import Sequence
from types import FrameType
from typing import Any

import torch

__all__ = ["host_factory", "side_rule", "through_helper"]

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
        "zeros",
        "ones",
        "full",
        "empty",
        "eye",
        "linspace",
        "logspace",
        "rand",
        "randn",
        "randint",
        "randperm",
        "tril_indices",
        "triu_indices",
    }
)


def _function_tree(frame: FrameType) -> tuple[ast.AST, int] | None:
    """The frame's function parsed, and the line its source starts at."""
    try:
        lines, start = inspect.getsourcelines(frame.f_code)
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


def host_factory(
    frames: Sequence[FrameType], on_host: Sequence[torch.Tensor], device: str | None
) -> str | None:
    """The sentence and fix for a CPU tensor made by a factory without ``device=``.

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
        parsed = _function_tree(frame)
        if parsed is None:
            continue
        tree, start = parsed
        for node in ast.walk(tree):
            if not isinstance(node, ast.Assign) or len(node.targets) != 1:
                continue
            target = node.targets[0]
            if not (isinstance(target, ast.Name) and target.id in names):
                continue
            factory = _factory_without_device(node.value)
            if factory is None:
                continue
            line = start + node.lineno - 1
            text = linecache.getline(frame.f_code.co_filename, line).strip()
            where = device or "the input's device"
            return (
                f"'{target.id}' was made on the CPU by {factory}() without device= at "
                f"{frame.f_code.co_filename}:{line} in {frame.f_code.co_name} (`{text}`), and "
                f"met tensors on {where}; create it on the input's device: "
                f"{factory}(..., device=x.device) with x an input of that function"
            )
    return None


def _call_args(caller: FrameType, lineno: int, callee: str) -> tuple[dict[int, str], bool] | None:
    """Position -> source text of the arguments of the call of ``callee`` on the caller's
    line, and whether it was called as an attribute (``self.gather(batch)``)."""
    text = linecache.getline(caller.f_code.co_filename, lineno).strip()
    try:
        tree = ast.parse(text.rstrip(":"), mode="exec")
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name == callee:
                args = {i: ast.unparse(arg) for i, arg in enumerate(node.args)}
                return args, isinstance(func, ast.Attribute)
    return None


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
