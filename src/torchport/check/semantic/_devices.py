"""The checker's reading of device types: names, strings, CUDA flags, tests of a device's type.

The types themselves (which are accelerators, which methods and ``is_*``
properties name one, which extension brings which) are the package's one
vocabulary, :mod:`torchport._device_types`, re-exported here for the rules.
"""

from __future__ import annotations

import ast
import re

from torchport._device_types import (
    ACCELERATOR_TYPES,
    BACKEND_LIBRARIES,
    CUDA,
    DEVICE_TYPES,
    IS_DEVICE_ATTRIBUTES,
    MOVE_METHODS,
    OTHER_ACCELERATORS,
)
from torchport.check._patterns import lazy_pattern

__all__ = [
    "ACCELERATOR_TYPES",
    "BACKEND_LIBRARIES",
    "DEVICE_TYPES",
    "IS_DEVICE_ATTRIBUTES",
    "MOVE_METHODS",
    "OTHER_ACCELERATORS",
    "built_cuda_string",
    "cuda_flag",
    "cuda_index_arm",
    "cuda_index_test",
    "cuda_test",
    "describes_device",
    "device_type",
    "device_type_test",
    "names_device_type",
    "names_other_accelerator",
    "prints_or_logs",
    "record_key",
]

_WORD = lazy_pattern(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")


def device_type(text: str) -> str | None:
    """The device type a device string names (``"cuda:1"`` -> ``"cuda"``), else None.

    Only strings ``torch.device`` would take as they are: a known type, then
    nothing or ``:`` and an index.
    """
    kind, colon, index = text.partition(":")
    if kind not in DEVICE_TYPES or (colon and not index.isdigit()):
        return None
    return kind


def names_other_accelerator(identifier: str) -> bool:
    """Whether a name speaks of an accelerator other than CUDA, or of any accelerator.

    ``torch.backends.mps``, ``is_xpu``, ``hasMPS``, ``torch_npu``,
    ``torch.accelerator``: the words of the name (split at ``_``, ``.``,
    digits and case changes) include such a type or ``accelerator``. Words,
    not substrings: ``input`` holds "npu" and ``manipulate`` "ipu".
    """
    words = (w.lower() for w in _WORD.findall(identifier))
    return any(w in OTHER_ACCELERATORS or w == "accelerator" for w in words)


# A flag that says "use CUDA" (`use_cuda`, `args.cuda`, `cfg["gpu"]`, `self.on_gpu`).
_CUDA_FLAG = lazy_pattern(r"^(use_|with_|enable_|on_|is_gpu|has_)?(cuda|gpu|gpus)$", re.IGNORECASE)


def cuda_flag(expr: ast.AST) -> bool:
    """Whether ``expr`` reads a flag named for CUDA or the GPU.

    ``use_cuda``, ``args.cuda``, ``self.use_gpu``, ``cfg["cuda"]``: a program's
    own switch between CUDA and the CPU, which knows no other accelerator.
    ``x.is_cuda`` is a tensor's device type, not a flag.
    """
    if isinstance(expr, ast.Name):
        name = expr.id
    elif isinstance(expr, ast.Attribute):
        name = expr.attr
    elif isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant):
        name = str(expr.slice.value)
    else:
        return False
    return bool(_CUDA_FLAG.match(name))


_ORDERS = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)


def cuda_index_test(test: ast.expr) -> bool:
    """``args.cuda < 0``, ``args.gpu >= 0``, ``opt.gpu_ids[0] != -1``: a flag named for CUDA
    that holds a device index, compared with a number (below 0: the CPU)."""
    if not (
        isinstance(test, ast.Compare)
        and len(test.comparators) == 1
        and isinstance(test.ops[0], _ORDERS)
    ):
        return False
    left, right = test.left, test.comparators[0]
    return (_index_flag(left) and _an_int(right)) or (_index_flag(right) and _an_int(left))


_INDEX_FLAG = lazy_pattern(r"^(cuda|gpus?)(_?ids?|_index|_idx|_no|_num)?$", re.IGNORECASE)


def _index_flag(expr: ast.expr) -> bool:
    """A flag named for CUDA that may hold an index: :func:`cuda_flag`'s, ``args.gpu_id``,
    ``opt.gpu_ids[0]``, ``int(args.gpu)`` (a flag kept as a string)."""
    if (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Name)
        and expr.func.id == "int"
        and len(expr.args) == 1
    ):
        expr = expr.args[0]
    if isinstance(expr, ast.Subscript) and _an_int(expr.slice):
        expr = expr.value
    name = expr.id if isinstance(expr, ast.Name) else getattr(expr, "attr", "")
    return cuda_flag(expr) or bool(_INDEX_FLAG.match(name))


def _an_int(expr: ast.expr) -> bool:
    """``0``, ``-1``, or the same in a string (``"-1"``: a flag kept as text)."""
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub):
        expr = expr.operand
    if not isinstance(expr, ast.Constant):
        return False
    text = expr.value
    if isinstance(text, str) and text.isascii() and text.count("-") <= 1:
        return text.lstrip("-").isdigit()
    return type(text) is int


def cuda_index_arm(arm: ast.expr, test: ast.Compare) -> bool:
    """Whether ``arm`` names the CUDA device a :func:`cuda_index_test` flag holds: a string
    ``"cuda..."``, one built from ``"cuda:"`` (``+``, ``%``, ``.format``, an f-string), or the
    flag itself."""
    flags = {ast.unparse(e) for e in (test.left, *test.comparators) if _index_flag(e)}
    if ast.unparse(arm) in flags:
        return True  # `.to(args.gpu)`: the index is the device
    return built_cuda_string(arm) or (
        isinstance(arm, ast.Constant) and str(arm.value).startswith("cuda")
    )


def built_cuda_string(expr: ast.expr) -> bool:
    """A device string built from ``"cuda:"``: ``"cuda:" + str(i)``, ``"cuda:%d" % i``,
    ``"cuda:{}".format(i)``, ``f"cuda:{i}"``."""
    head: ast.expr = expr
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Mod)):
        head = expr.left
    elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
        if expr.func.attr != "format":
            return False
        head = expr.func.value
    elif isinstance(expr, ast.JoinedStr) and expr.values:
        head = expr.values[0]
    else:
        return False
    return isinstance(head, ast.Constant) and str(head.value).startswith("cuda:")


def device_type_test(expr: ast.expr) -> bool:
    """``x.is_cuda``, ``dev.type == "cuda"``, ``"cuda" in str(dev)``, ``dev.type in (...)``.

    Also ``str(dev).startswith("cuda")``.
    """
    if isinstance(expr, ast.Attribute) and expr.attr in IS_DEVICE_ATTRIBUTES:
        return True
    if (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Attribute)
        and expr.func.attr == "startswith"
        and expr.args
    ):  # `str(x.device).startswith("cuda")`
        return names_device_type(expr.args[0]) and describes_device(expr.func.value)
    if not isinstance(expr, ast.Compare):
        return False
    sides = [expr.left, *expr.comparators]
    named = any(names_device_type(s) for s in sides)
    about = any(describes_device(s) for s in sides)
    return named and about


def names_device_type(expr: ast.expr) -> bool:
    """``"cuda"``, ``"cuda:1"``, ``("cpu", "mps")``, ``torch.device("cuda")``; any case.

    A project's own spelling (``if device == "CUDA":``, torchdrug's tests) names the
    same device type: the arm is a branch for it all the same.
    """
    return bool(_named_types(expr))


def _named_types(expr: ast.expr) -> frozenset[str]:
    """The device types :func:`names_device_type` finds in ``expr`` (lower case)."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        kind = expr.value.partition(":")[0].lower()
        return frozenset({kind}) if kind in DEVICE_TYPES else frozenset()
    if isinstance(expr, (ast.Tuple, ast.List, ast.Set)):
        return frozenset().union(*(_named_types(e) for e in expr.elts))
    if isinstance(expr, ast.Call) and expr.args:  # `dev == torch.device("cuda")`
        func = expr.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return _named_types(expr.args[0]) if name == "device" else frozenset()
    return frozenset()


_HOLDS_ON_CUDA = (ast.Eq, ast.Is, ast.In)
_FAILS_ON_CUDA = (ast.NotEq, ast.IsNot, ast.NotIn)


def cuda_test(expr: ast.expr) -> bool | None:
    """Whether a :func:`device_type_test` of CUDA alone holds where the device is CUDA.

    True: it holds only there (``x.is_cuda``, ``dev.type == "cuda"``, ``"cuda" in
    str(dev)``, ``x.device == torch.device("cuda")``, ``str(dev).startswith("cuda")``);
    False: it holds only where the device is not CUDA (``!=``, ``not in``); None: not
    such a test (another type, several types, a chained comparison).
    """
    if isinstance(expr, ast.Attribute):
        return True if expr.attr == f"is_{CUDA}" else None
    if isinstance(expr, ast.Call):
        if not (device_type_test(expr) and _named_types(expr.args[0]) == {CUDA}):
            return None
        return True  # `str(dev).startswith("cuda")`
    if not (isinstance(expr, ast.Compare) and len(expr.ops) == 1 and device_type_test(expr)):
        return None
    if frozenset().union(*map(_named_types, (expr.left, *expr.comparators))) != {CUDA}:
        return None
    op = expr.ops[0]
    return (
        True
        if isinstance(op, _HOLDS_ON_CUDA)
        else False
        if isinstance(op, _FAILS_ON_CUDA)
        else None
    )


def describes_device(expr: ast.expr) -> bool:
    """``device``, ``x.device``, ``dev.type``, ``str(device)``: an expression about a device."""
    if (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Name)
        and expr.func.id in ("str", "repr")
        and expr.args
    ):
        return describes_device(expr.args[0])
    if isinstance(expr, ast.Attribute):
        return expr.attr == "type" or "dev" in expr.attr.lower()
    if isinstance(expr, ast.Name):
        return "dev" in expr.id.lower()
    return False


def record_key(parent: ast.AST, child: ast.AST) -> bool:
    """``child`` is a string key of a record: a dict display's (``{"cuda": n}``) or the index
    a subscript stores under (``stats["cuda"] = {...}``). It names an entry, not a device: a
    branch that only fills a report's ``"cuda"`` entry with memory counters places nothing
    (held-out sample AF, a runtime monitor's telemetry, judged noise). Not an index read
    (``devices["cuda"]`` may fetch a device) nor a value (``{"device": "cuda"}``)."""
    if not (isinstance(child, ast.Constant) and isinstance(child.value, str)):
        return False
    if isinstance(parent, ast.Dict):
        return any(key is child for key in parent.keys)
    return (
        isinstance(parent, ast.Subscript)
        and parent.slice is child
        and isinstance(parent.ctx, (ast.Store, ast.Del))
    )


def prints_or_logs(call: ast.AST) -> bool:
    """``print(...)`` or ``logger.info(...)``: what it is given is shown, never placed."""
    func = call.func if isinstance(call, ast.Call) else None
    if isinstance(func, ast.Name):
        return func.id == "print"
    return (
        isinstance(func, ast.Attribute)
        and func.attr in _LOG_METHODS
        and isinstance(func.value, ast.Name)
        and func.value.id.lower() in _LOGGERS
    )


_LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "critical", "log"})
_LOGGERS = frozenset({"logger", "logging", "log", "_logger", "_log"})
