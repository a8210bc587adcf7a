"""Whether a move that hands back its own receiver on the CPU leaves the receiver reachable.

On an accelerator ``t.cpu()`` (``t.to("cpu")``, ``t.to(torch.device("cpu"))``) makes a new
host tensor and leaves ``t`` on the device, and ``h.to(device)`` of a host tensor makes a
new device tensor. On the CPU run that predicts it, either call hands back its receiver:
one object stands for two tensors of the accelerator run, and the audit cannot tell a
read of the host copy (no wait) from a read of ``t`` (a wait), nor a second
``.to(device)`` of the device tensor (no copy) from one of ``h`` (a copy).

The object is the move's result alone when nothing but the result can reach the receiver
after the statement, which the call site and the calling frame say:

* the receiver is a temporary: an operator's result (``(pred == gt).cpu()``,
  ``(x * 2).to("cpu")``), a torch method or factory that always makes a new tensor
  (``x.argmax(1).cpu()``, ``x.detach().cpu()``, ``torch.randn(3, device=d).cpu()``,
  ``x.new_zeros(3).cpu()``), a wrapper that makes a new tensor object (``Variable(t).cuda()``,
  ``x.data.cpu()``: detached aliases), or a method that may hand back its own
  receiver called on a temporary (``(a == b).float().cpu()``), and no local name of the
  calling frame holds it (``x.float().cpu()`` of a float ``x`` is ``x`` itself, still the
  device's, and ``self.buf.float().cpu()`` is ``self.buf``: neither is a temporary);
* the statement rebinds the receiver's only name: ``z = z.cpu()``, where no other local
  name holds the same tensor.

Anything else (``y = x.cpu()``, ``self.buf.cpu()``, ``batch[0].cpu()``, ``model(x).cpu()``
of a function that may return a tensor it keeps, a receiver passed in as a parameter)
stays unknown: the audit then keeps predicting the wait for reads of the object, as it
did for every such move before.
"""

from __future__ import annotations

import ast
import linecache
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any

from torchport._device_types import TENSOR_MOVE_METHODS
from torchport._origin import Origin
from torchport.diagnose._callsite import call_source_at, instruction_span, program_frame

__all__ = ["inlined_scope", "move_names", "only_the_result_remains", "used_in_its_line"]

# (code, instruction) -> the receiver's name when the statement rebinds it ("" when it is a
# temporary), or None when it may be held elsewhere after the statement
_SEEN: dict[tuple[CodeType, int], str | None] = {}
# Operators on tensors always make a new tensor
_OPERATORS = (ast.Compare, ast.BinOp, ast.UnaryOp)
# Tensor methods and torch functions that always make a new tensor object
_NEW = frozenset(
    {
        "abs", "all", "amax", "amin", "any", "argmax", "argmin", "cat", "clone", "cumsum",
        "detach", "eq", "exp", "flatten", "ge", "gt", "le", "log", "log_softmax", "logical_and",
        "logical_not", "logical_or", "lt", "mean", "ne", "norm", "permute", "prod", "round",
        "sigmoid", "softmax", "sqrt", "squeeze", "stack", "sum", "t", "tanh", "transpose",
        "unsqueeze", "view", "where",
        # factories (torch.as_tensor and torch.asarray may hand back their argument)
        "arange", "empty", "empty_like", "eye", "from_numpy", "full", "full_like", "linspace",
        "new_empty", "new_full", "new_ones", "new_tensor", "new_zeros", "ones", "ones_like",
        "rand", "rand_like", "randint", "randn", "randn_like", "randperm", "tensor", "zeros",
        "zeros_like",
    }
)  # fmt: skip
# Callables that wrap a tensor in a new tensor object: ``torch.autograd.Variable(t)`` is
# ``t.detach()`` (a new object sharing ``t``'s memory, on ``t``'s device) since torch 0.4;
# the legacy typed classes make a new object from sizes, data or a tensor
# (``torch.FloatTensor(state).to(device)``)
_WRAPPERS = frozenset(
    {
        "Variable", "Tensor", "DoubleTensor", "FloatTensor", "HalfTensor", "BFloat16Tensor",
        "LongTensor", "IntTensor", "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor",
    }
)  # fmt: skip
# Attributes whose every read makes a new tensor object: ``x.data`` (a detached alias)
_NEW_ATTRIBUTES = frozenset({"data"})
# Methods that may hand back their receiver (a no-op conversion or move): a temporary on a
# temporary
_SAME_OR_NEW = TENSOR_MOVE_METHODS | frozenset(
    {
        "bfloat16", "bool", "byte", "char", "contiguous", "double", "float", "half", "int",
        "long", "short", "to", "type", "type_as",
    }
)  # fmt: skip


def _temporary(node: ast.expr) -> bool:
    """Whether ``node``'s value is a tensor no one else holds (see the module docstring)."""
    if isinstance(node, _OPERATORS):
        return True
    if isinstance(node, ast.Attribute):
        return node.attr in _NEW_ATTRIBUTES  # x.data: a new tensor at every read
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Name):
        return func.id in _NEW or func.id in _WRAPPERS  # Variable(t), zeros(3)
    if not isinstance(func, ast.Attribute):
        return False
    name = func.attr
    if name in _NEW or name in _WRAPPERS:
        return True  # x.argmax(1), torch.cat(...), torch.autograd.Variable(t)
    return name in _SAME_OR_NEW and _temporary(func.value)


def only_the_result_remains(
    frame: FrameType | None, origin_of: Callable[[CodeType], Origin], tensor: object
) -> bool:
    """Whether ``tensor``, which a move handed back as itself, is the move's result alone
    in the accelerator run (see the module docstring).

    Args:
        frame: The frame that called the move, or one below it; the first frame of the
            user's or installed code at or above it is read.
        origin_of: Whose code a code object is (:func:`torchport._origin.code_origin`, cached).
        tensor: The move's receiver (and result).
    """
    frame = program_frame(frame, origin_of)
    if frame is None:
        return False
    key = (frame.f_code, frame.f_lasti)
    if key in _SEEN:
        rebound = _SEEN[key]
    else:
        try:
            rebound = _read(frame)
        except Exception:  # odd source or positions: unknown, the wait is predicted
            rebound = None
        if len(_SEEN) > 4096:  # long-running programs: a bounded cache
            _SEEN.clear()
        _SEEN[key] = rebound
    if rebound is None:
        return False
    holders = [name for name, value in frame.f_locals.items() if value is tensor]
    return holders == ([rebound] if rebound else [])


def _read(frame: FrameType) -> str | None:
    found = _move_call(frame)
    if found is None:
        return None
    call, statement = found
    func = call.func
    if not isinstance(func, ast.Attribute):
        return None
    receiver = func.value
    if _temporary(receiver):
        return ""
    if not isinstance(receiver, ast.Name):
        return None
    # z = z.cpu(): the statement whose value is this call rebinds the receiver's name
    if (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
        and statement.targets[0].id == receiver.id
        and statement.value is call
    ):
        return receiver.id
    return None


# torch's makers from data that may hand back their argument (a move of it)
_FROM_DATA = frozenset({"as_tensor", "asarray", "tensor"})
# file name -> (its lines, (last line, end column) of each call -> (the call, its statement))
_FILES: dict[str, tuple[list[str], dict[tuple[int, int], tuple[ast.Call, ast.stmt]]]] = {}


def _readable_move_call(frame: FrameType) -> tuple[ast.Call, ast.stmt] | None:
    """:func:`_move_call`, None also where odd source or positions cannot be read."""
    try:
        return _move_call(frame)
    except Exception:
        return None


def _move_call(frame: FrameType) -> tuple[ast.Call, ast.stmt] | None:
    """The method call ``frame`` is making and the statement holding it, read from the
    parsed file: Python 3.11 gives a method call's instruction the span of
    ``.to(dev)`` alone when the receiver starts on an earlier line, so the span is matched
    by where it ends. Falls back on the span itself (:func:`call_source_at`) where the
    file cannot be parsed as a whole."""
    code = frame.f_code
    position = instruction_span(frame)
    if position is None:
        return None
    lines = linecache.getlines(code.co_filename, frame.f_globals)
    if not lines:
        return None
    known = _FILES.get(code.co_filename)
    if known is None or known[0] is not lines:
        calls: dict[tuple[int, int], tuple[ast.Call, ast.stmt]] = {}
        try:
            tree = ast.parse("".join(lines))
        except (SyntaxError, ValueError):
            tree = None
        if tree is not None:
            for statement in ast.walk(tree):
                if not isinstance(statement, ast.stmt):
                    continue
                for node in ast.iter_child_nodes(statement):
                    if isinstance(node, ast.stmt):
                        continue  # a nested statement holds its own calls
                    for inner in ast.walk(node):
                        if isinstance(inner, ast.Call) and inner.end_lineno is not None:
                            end = (inner.end_lineno, inner.end_col_offset or 0)
                            calls.setdefault(end, (inner, statement))
        if len(_FILES) > 256:
            _FILES.clear()
        known = _FILES[code.co_filename] = (lines, calls)
    found = known[1].get((position[1], position[3]))  # both count UTF-8 bytes
    if found is not None:
        return found
    at = call_source_at(frame)  # source not parsed as a whole: the span alone
    if at is None:
        return None
    call, span_lines, first = at
    for statement in ast.parse(span_lines[first - 1].strip()).body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Call) and ast.dump(node) == ast.dump(call):
                return node, statement
    return None


# (code, instruction) -> whether the move's result is used up by its own line
_USED: dict[tuple[CodeType, int], bool] = {}


def used_in_its_line(
    frame: FrameType | None, origin_of: Callable[[CodeType], Origin]
) -> FrameType | None:
    """The program's frame of a move to the device whose result its line uses and lets
    go, or None: the move is inside an index (``x[hidx.to(dev)]``, ``m[:, hi.cuda()] = v``)
    or its value is thrown away (``hidx.to(dev)`` as a statement, ``_ = hidx.to(dev)``).

    On this host such a move of a tensor the program still holds hands back that tensor
    itself: it is the device copy for the line and the host's tensor after it
    (:meth:`._host_held.HostHeld.lend`). A result bound to a name, an attribute, a
    list or returned is not used up by its line.

    Args:
        frame: The frame that called the move, or one below it.
        origin_of: Whose code a code object is (:func:`torchport._origin.code_origin`, cached).
    """
    frame = program_frame(frame, origin_of)
    if frame is None:
        return None
    key = (frame.f_code, frame.f_lasti)
    used = _USED.get(key)
    if used is None:
        try:
            used = _used_up(frame)
        except Exception:  # odd source or positions: not known to be used up
            used = False
        if len(_USED) > 4096:  # long-running programs: a bounded cache
            _USED.clear()
        _USED[key] = used
    return frame if used else None


def _used_up(frame: FrameType) -> bool:
    found = _move_call(frame)
    if found is None:
        return False
    call, statement = found
    value: Any = getattr(statement, "value", None)
    thrown_away = isinstance(statement, ast.Expr) or (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
        and statement.targets[0].id == "_"
    )
    if thrown_away and value is call:
        return True
    return any(
        isinstance(node, ast.Subscript) and any(inner is call for inner in ast.walk(node.slice))
        for node in ast.walk(statement)
    )


def move_names(
    frame: FrameType | None, origin_of: Callable[[CodeType], Origin], tensor: object
) -> tuple[FrameType, str, str] | None:
    """The program's frame of a move, the name its receiver is read by (``x`` of
    ``x.cpu()``; "" for any other receiver) and the name the statement binds the result
    to (``y`` of ``y = x.cpu()``; "" when the result is not bound to a name by itself),
    read from the parsed file; None where the call cannot be read. A receiver's name that
    does not hold ``tensor`` in the frame (a module's move of its tensors) is ""."""
    frame = program_frame(frame, origin_of)
    if frame is None:
        return None
    found = _readable_move_call(frame)
    if found is None:
        return None
    call, statement = found
    func = call.func
    receiver = ""
    maker = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if maker in _FROM_DATA:
        if call.args and isinstance(call.args[0], ast.Name):
            receiver = call.args[0].id  # torch.as_tensor(x, device="cpu")
    elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        receiver = func.value.id  # x.cpu(), h.to(dev)
    if receiver and frame.f_locals.get(receiver) is not tensor:
        receiver = ""  # m.to(dev) of a module: its tensors are no name's
    target = ""
    if (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
        and statement.value is call
    ):
        target = statement.targets[0].id
    return frame, receiver, target


# Comprehensions that run in a frame of their own on Python 3.11 and, since Python 3.12
# (PEP 709), inline in the frame that holds them (by its code's name before); a generator
# expression and a lambda always have their own
_INLINED: dict[type[ast.expr], str] = {
    ast.ListComp: "<listcomp>",
    ast.SetComp: "<setcomp>",
    ast.DictComp: "<dictcomp>",
}


def _scope_parts(node: ast.expr) -> list[ast.AST]:
    """The parts of a comprehension or lambda that run in its own scope: all but its first
    iterable (a lambda's defaults), which the enclosing scope evaluates."""
    if isinstance(node, ast.Lambda):
        return [node.body]
    if isinstance(node, ast.DictComp):
        parts: list[ast.AST] = [node.key, node.value]
    elif isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
        parts = [node.elt]
    else:
        return []
    for number, generator in enumerate(node.generators):
        parts += [generator.target, *generator.ifs]
        if number:
            parts.append(generator.iter)
    return parts


def inlined_scope(frame: FrameType) -> tuple[int, int, int, int] | None:
    """The source span (first line, first column, last line, end column; columns in
    UTF-8 bytes) of the comprehension a move in ``frame`` runs inside, where Python runs
    that comprehension inline in ``frame`` (PEP 709, Python 3.12 and later): the names
    it binds end with it, as its own frame's did before (``batch = [t.to(dev) for t in
    batch]``). None where the move is in no comprehension, the comprehension has a frame
    of its own (Python 3.11, a generator expression, a lambda), or the call cannot be read.

    Args:
        frame: The program's frame making the move (see :func:`move_names`).
    """
    found = _readable_move_call(frame)
    if found is None:
        return None
    call, statement = found
    innermost: ast.expr | None = None
    for node in ast.walk(statement):  # outer nodes first: the last holder is the innermost
        if isinstance(node, ast.expr) and any(
            inner is call for part in _scope_parts(node) for inner in ast.walk(part)
        ):
            innermost = node
    own = _INLINED.get(type(innermost)) if innermost is not None else None
    if innermost is None or own is None or frame.f_code.co_name == own:
        return None  # no comprehension, or one with its own frame (ended with it)
    if innermost.end_lineno is None or innermost.end_col_offset is None:
        return None
    return (
        innermost.lineno,
        innermost.col_offset,
        innermost.end_lineno,
        innermost.end_col_offset,
    )
