"""Which argument of an indexing op is on the wrong device, named as the program wrote it.

``gather``, ``index_select``, ``embedding``, ``scatter``, ``take`` and their kin take an
index tensor beside the tensor it indexes, and CUDA wants both on one device; ``x[i]``
wants the index on the CPU or on ``x``'s device. PyTorch's message names the op (and on
CUDA the argument: "when checking argument for argument index in method
wrapper_CUDA_gather"), never the expression. This module reads the failing line: the
call of the op, which expression each argument is, and the device each one holds, so
the message says "gather's index ``idx`` is on cpu but its input ``x`` is on cuda:0"
and the fix moves that expression.

Read on the error path only, from values already read as stored (no code of the
program runs again).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from types import FrameType
from typing import Any

import torch

from torchport._device_types import CPU, MOVE_METHODS
from torchport.diagnose._callsite import source_at

__all__ = ["expression_at", "index_culprit"]

# The op's parameters in the order its function form takes them (``torch.gather(input,
# dim, index)``); the method form's receiver is the first. Roles: "index" for the index
# tensors, "data" for the tensor indexed, "source" for values written.
_INPUT_DIM_INDEX = (("input", "data"), ("dim", ""), ("index", "index"))
_WRITES = (*_INPUT_DIM_INDEX, ("source", "source"))
_SCATTERS = (*_INPUT_DIM_INDEX, ("src", "source"))
_OPS: dict[str, tuple[tuple[str, str], ...]] = {
    "gather": _INPUT_DIM_INDEX,
    "index_select": _INPUT_DIM_INDEX,
    "index_fill": _INPUT_DIM_INDEX,
    "index_fill_": _INPUT_DIM_INDEX,
    "index_add": _WRITES,
    "index_add_": _WRITES,
    "index_copy": _WRITES,
    "index_copy_": _WRITES,
    "index_reduce": _WRITES,
    "index_reduce_": _WRITES,
    "scatter": _SCATTERS,
    "scatter_": _SCATTERS,
    "scatter_add": _SCATTERS,
    "scatter_add_": _SCATTERS,
    "scatter_reduce": _SCATTERS,
    "scatter_reduce_": _SCATTERS,
    "take": (("input", "data"), ("index", "index")),
    "take_along_dim": (("input", "data"), ("indices", "index")),
    "index_put": (("input", "data"), ("indices", "index"), ("values", "source")),
    "index_put_": (("input", "data"), ("indices", "index"), ("values", "source")),
    # F.embedding(input, weight): the input is the index, the weight the table indexed
    "embedding": (("input", "index"), ("weight", "data")),
    "embedding_bag": (("input", "index"), ("weight", "data"), ("offsets", "index")),
}
# What PyTorch names in its message for each op: the sim and meta name the aten op
# ("aten.embedding.default"); CUDA the kernel that checked ("wrapper_CUDA__index_select"
# for an embedding, whose CUDA path indexes the weight with index_select)
_NAMED_OP = re.compile(
    r"aten\.(\w+?)(?:\.\w+)?\)|method wrapper_(?:CUDA_)?_*(\w+)|arguments for torch\.(\w+)\("
)
_ALIASES = {"index_select": ("embedding",), "embedding_dense_backward": ("embedding",)}
_HOST_INDEX = re.compile(r"indices should be either on \S+ or on the same device", re.IGNORECASE)

_NAME = re.compile(r"[A-Za-z_][\w.]*(?:\[[^\[\]()]*\])?")

_MOVES = frozenset({"to", "type_as", *MOVE_METHODS})

_ROLE_WORD = {"index": "index", "data": "indexed tensor", "source": "source"}


def _label(param: str, role: str) -> str:
    """``index``, ``input (the indexed tensor)``, ``weight (the indexed tensor)``."""
    word = _ROLE_WORD[role]
    return param if param in (word, "indices") else f"{param} (the {word})"


def expression_at(frame: FrameType) -> ast.expr | None:
    """The expression the frame's current instruction evaluates (:func:`._callsite.source_at`);
    ``None`` where the positions or the source are missing, or the span does not parse."""
    try:
        found = source_at(frame)
    except SyntaxError:
        return None
    return None if found is None else found[0]


def _called_name(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else None


def _bind(call: ast.Call, name: str) -> list[tuple[str, str, ast.expr]]:
    """(parameter, role, expression) of each argument of the call of index op ``name``."""
    params = _OPS[name]
    func = call.func
    method = isinstance(func, ast.Attribute) and not _is_namespace(func.value)
    bound: list[tuple[str, str, ast.expr]] = []
    positional = list(call.args)
    if method:
        assert isinstance(func, ast.Attribute)
        positional.insert(0, func.value)
    for (param, role), arg in zip(params, positional, strict=False):
        if not isinstance(arg, ast.Starred):
            bound.append((param, role, arg))
    roles = dict(params)
    for keyword in call.keywords:
        if keyword.arg in roles:
            bound.append((keyword.arg, roles[keyword.arg], keyword.value))
    return [(param, role, arg) for param, role, arg in bound if role]


def _is_namespace(node: ast.expr) -> bool:
    """``torch``, ``F``, ``torch.nn.functional``: a module the op is called from, not a tensor."""
    text = ast.unparse(node)
    return text in ("torch", "F", "nn.functional", "torch.nn.functional", "functional")


def _device_of(expression: ast.expr, values: Mapping[str, Any]) -> str | None:
    """The device of the tensor an argument holds, read as stored: the expression itself
    when the line names it (``idx``, ``batch["idx"]``), else the tensor a chain of views
    and methods starts from (``idx.view(-1)``, ``x[:2].clone()``), which stays on its
    device unless the chain moves it."""
    node: ast.expr = expression
    while True:
        value = values.get(ast.unparse(node))
        if isinstance(value, (list, tuple)):  # index_put's indices
            value = next((v for v in value if isinstance(v, torch.Tensor)), None)
        if isinstance(value, torch.Tensor):
            return str(value.device)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in _MOVES or any(k.arg == "device" for k in node.keywords):
                return None
            node = node.func.value
        elif isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        else:
            return None


def index_culprit(
    sources: list[ast.AST],
    values: Mapping[str, Any],
    said: str,
    words: list[str],
    *,
    callers: Mapping[str, str] | None = None,
) -> tuple[str, str] | None:
    """The sentence naming the argument of an index op on the wrong device, and the fix.

    Args:
        sources: What failed, parsed, most precise first: the call the failing frame was
            making (from its instruction's source span), the failing line.
        values: What each name, attribute and subscript on the line holds (read as stored).
        said: PyTorch's sentence.
        words: The devices that sentence names, in order.
        callers: Expressions of a helper read from its parameters -> how its caller wrote
            them (``batch["idx"]`` in ``def pick(batch)`` -> ``data["idx"]``).

    Returns:
        ``(sentence, fix)``, or ``None`` when the line holds no index op this module knows
        or its arguments' devices cannot be told.
    """
    if _HOST_INDEX.search(said):
        return next(filter(None, (_subscript(tree, values) for tree in sources)), None)
    named = _NAMED_OP.search(said)
    op = next((g for g in named.groups() if g), None) if named else None
    wanted = {op, *_ALIASES.get(op or "", ())} if op else set()
    calls = [
        (node, name)
        for tree in sources
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and (name := _called_name(node)) in _OPS
    ]
    if not calls:
        return None
    exact = [(c, n) for c, n in calls if n == op]  # the op named, before ops it stands for
    call, name = next(iter(exact), None) or next(
        ((c, n) for c, n in calls if n in wanted), calls[0]
    )
    bound = _bind(call, name)
    devices = [_device_of(arg, values) for _, _, arg in bound]
    known = {str(d) for d in devices if d is not None}
    mentioned = list(dict.fromkeys(words))
    unknown = [i for i, d in enumerate(devices) if d is None]
    if len(mentioned) == 2 and len(known) == 1 and len(unknown) == 1:
        # a single argument not read from the line holds the other device of the message
        other = next(d for d in mentioned if d != next(iter(known)))
        devices[unknown[0]] = other
    placed = [(p, r, a, d) for (p, r, a), d in zip(bound, devices, strict=True) if d is not None]
    if len({str(d) for *_, d in placed}) < 2:
        return None
    home = next((d for *_, d in placed if d.partition(":")[0] != CPU), None)
    if home is None:
        return None
    strays = [(p, r, a, d) for p, r, a, d in placed if d != home]
    settled = [(p, r, a, d) for p, r, a, d in placed if d == home]
    param, role, arg, there = strays[0]
    text = ast.unparse(arg)
    anchor = ast.unparse(settled[0][2])
    # x.to(idx.device) where the anchor is a name; the device itself where it is a call
    on = f"{anchor}.device" if _NAME.fullmatch(anchor) else repr(str(home))
    outer = (callers or {}).get(text)
    whose = f" (the caller's `{outer}`)" if outer else ""
    sentence = (
        f"{name}'s {_label(param, role)} `{text}`{whose} is on {there} but its "
        f"{_label(settled[0][0], settled[0][1])} `{anchor}` is on {home}; {name} takes the "
        "index on the device of the tensor it indexes"
    )
    if role == "index":
        fix = (
            f"move the index to the tensor it indexes: {text}.to({on}) (or create it there with "
            f"device={on})"
        )
    else:
        fix = f"move `{text}` to the device of the rest: {text}.to({on})"
    return sentence, fix


def _subscript(tree: ast.AST, values: Mapping[str, Any]) -> tuple[str, str] | None:
    """``x[i]`` with ``i`` on an accelerator and ``x`` on the host: name both."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Subscript):
            continue
        base = values.get(ast.unparse(node.value))
        if not isinstance(base, torch.Tensor):
            continue
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        for part in parts:
            index = values.get(ast.unparse(part))
            if isinstance(index, torch.Tensor) and index.device != base.device:
                text, indexed = ast.unparse(part), ast.unparse(node.value)
                return (
                    f"the index `{text}` of `{indexed}[...]` is on {index.device} but `{indexed}` "
                    f"is on {base.device}; an index must be on the CPU or on the device of the "
                    "tensor it indexes",
                    f"move the index to the tensor it indexes: {text}.to({indexed}.device) (or "
                    f"{indexed}.to({text}.device) if the work belongs on {index.device})",
                )
    return None
