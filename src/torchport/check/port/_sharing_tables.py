"""The names ``_shared_memory`` reads a use of a shared array or tensor by: what only reads,
what may give a view (the same memory), and what holds what it is handed where a later write is
out of the syntax-only walk's sight (``setattr``, ``functools.partial``, ``nn.Parameter``,
``xs.append``: b31an); and the file's own code a call runs (a function, a class's
``__init__``, a method), which the walk follows."""

from __future__ import annotations

import ast

from torchport.check.port._device_flow import names_of

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check.port._facts import PortFacts

__all__ = [
    "ARRAY_VIEWS",
    "COPYING",
    "HOLDERS",
    "HOLDING_METHODS",
    "ITEM_ITERATORS",
    "NUMPY_OUT_AT",
    "NUMPY_READERS",
    "READERS",
    "SHARING",
    "TENSOR_VIEWS",
    "WRITING_KEYWORDS",
    "own_attribute",
    "own_callees",
    "view_root",
]

# Makers whose tensor shares its memory with their argument (a copy on the device would not).
SHARING = frozenset({"torch.from_numpy", "torch.as_tensor", "torch.asarray", "torch.frombuffer"})
# Methods of an array that read it into a new value (never write it, never give a view).
COPYING = frozenset(
    {"copy", "astype", "sum", "mean", "max", "min", "std", "var", "any", "all", "argmax",
     "argmin", "tolist", "item", "tobytes", "round", "cumsum", "prod", "nonzero"}
)  # fmt: skip
ARRAY_VIEWS = frozenset({"T", "mT", "real", "imag", "flat", "base", "data"})  # (a view: followed)
# (not `max`/`min`/`sorted`/`list`: a 2-D array's items are its rows, views of it)
READERS = frozenset(
    {"len", "print", "repr", "str", "float", "int", "bool", "isinstance", "sum", "abs",
     "json.dumps", "pickle.dumps", "copy.deepcopy"}
)  # fmt: skip
# numpy functions that read an array into a new value, a number or a file, and never write it
# without `out=` (not `np.asarray`/`np.ravel`/`np.reshape`: the same memory, written later)
NUMPY_READERS = frozenset(
    {"mean", "sum", "max", "min", "amax", "amin", "std", "var", "median", "average", "argmax",
     "argmin", "percentile", "quantile", "allclose", "array_equal", "isclose", "isnan",
     "isfinite", "abs", "absolute", "exp", "log", "sqrt", "square", "dot", "matmul",
     "concatenate", "stack", "vstack", "hstack", "array", "copy", "unique", "sort", "argsort",
     "cumsum", "prod", "diff", "histogram", "corrcoef", "cov", "save", "savetxt", "savez",
     "count_nonzero", "any", "all", "round", "around", "clip", "polyfit", "shape", "ndim",
     "size", "linalg.norm"}
)  # fmt: skip
# Where a reader's positional `out` stands (`np.exp(a, a)`, `np.clip(a, 0, 1, a)`: a write,
# q31am); a call with that many positional arguments may write one of them.
NUMPY_OUT_AT = {
    **dict.fromkeys(("abs", "absolute", "exp", "log", "sqrt", "square", "isnan", "isfinite"), 1),
    **dict.fromkeys(("matmul", "dot", "concatenate", "stack", "round", "around", "max", "min",
                     "amax", "amin", "argmax", "argmin", "median", "any", "all"), 2),
    **dict.fromkeys(("clip", "cumsum", "sum", "mean", "std", "var", "prod", "percentile",
                     "quantile"), 3),
}  # fmt: skip
# Keywords that may make a reader write its array or hand it back (`np.median(a,
# overwrite_input=True)`, `a.astype(t, copy=False)`: q31am), or hide one (`**k`).
WRITING_KEYWORDS = ("out", "copy", "overwrite_input", None)

# Callables that keep, or hand back, what they are handed (a write through them is out of
# sight): `setattr(b, "x", t)`, `functools.partial(bump, t)`, `getattr(t, "mul_")`,
# `nn.Parameter(t)` (the same memory), `contextlib.nullcontext(t)`; every `operator` function
# (`operator.iadd`).
HOLDERS = frozenset(
    {"setattr", "getattr", "functools.partial", "contextlib.nullcontext", "torch.nn.Parameter",
     "torch.nn.parameter.Parameter", "torch.nn.Buffer", "torch.nn.parameter.Buffer"}
)  # fmt: skip
# Methods that keep what they are handed in their object (a container, a module's buffers).
HOLDING_METHODS = frozenset(
    {"append", "extend", "insert", "appendleft", "setdefault", "update", "put", "put_nowait",
     "register_buffer", "register_parameter", "add_module", "__setitem__", "__setattr__"}
)  # fmt: skip
# Builtins whose items are the items of what they are handed (a row of a tensor: a view).
ITEM_ITERATORS = frozenset({"enumerate", "zip", "reversed", "iter", "list", "tuple", "sorted"})

# Methods (and ``torch`` functions of the tensor) that may return a view of it, or the tensor
# itself (a cast to its own dtype): a name bound to one shares the tensor's memory (b31al).
TENSOR_VIEWS = frozenset(
    {"view", "view_as", "reshape", "reshape_as", "T", "mT", "H", "mH", "t", "transpose",
     "permute", "unsqueeze", "squeeze", "narrow", "select", "expand", "expand_as", "flatten",
     "unflatten", "unfold", "split", "chunk", "unbind", "tensor_split", "detach", "contiguous",
     "as_strided", "diagonal", "movedim", "moveaxis", "swapaxes", "swapdims", "real", "imag",
     "data", "numpy", "to", "type", "float", "double", "half", "int", "long", "cpu",
     "view_as_real", "view_as_complex", "squeeze_", "unsqueeze_", "requires_grad_"}
)  # fmt: skip


def view_root(value: ast.expr, facts: PortFacts) -> ast.expr:
    """What ``value`` may be a view of: ``t`` of ``t[0]``, ``t.T``, ``t.view(-1)``,
    ``torch.flatten(t)``; else ``value`` itself."""
    while True:
        if isinstance(value, ast.Subscript) or (
            isinstance(value, ast.Attribute) and value.attr in TENSOR_VIEWS
        ):
            value = value.value
        elif isinstance(value, ast.Call) and isinstance(func := value.func, ast.Attribute):
            if func.attr not in TENSOR_VIEWS:
                return value
            torch_function = (facts.ctx.qualname(func) or "").startswith("torch.")
            # `torch.flatten(t)`: its first argument; `t.view(-1)`: what it is called on
            value = value.args[0] if torch_function and value.args else func.value
        else:
            return value


def own_callees(
    call: ast.Call, facts: PortFacts
) -> tuple[list[ast.FunctionDef | ast.AsyncFunctionDef] | None, int]:
    """The file's own functions ``call`` may run, with how many parameters it does not hand
    (1: a method's ``self``): a function, a class's ``__init__`` (``H(t)``), every method of
    the file's classes of the called name (``h.set(t)``); an empty list where the callee is
    the file's but out of sight (a lambda, a class with no ``__init__``); None for other code."""
    module = facts.ctx.scopes.module
    tree = facts.module.node
    if isinstance(call.func, ast.Attribute):
        if (facts.ctx.qualname(call.func) or "").startswith("torch."):
            return None, 0
        methods = [
            f
            for s in facts.scopes[1:]
            if s.cls is not None
            and isinstance(f := s.node, ast.FunctionDef | ast.AsyncFunctionDef)
            and f.name == call.func.attr
        ]
        return (methods or None), 1
    if not isinstance(call.func, ast.Name):
        return None, 0
    name = call.func.id
    func = facts.functions.get(name)
    if func is not None and facts.ctx.scopes.resolve(func.name, call.func) is module:
        return [func], 0
    for node in ast.walk(tree):  # `bump = lambda x: ...`, `class H:` (b31an)
        lambda_ = isinstance(node, ast.Assign) and isinstance(node.value, ast.Lambda)
        if lambda_ and any(name in names_of(t) for t in node.targets):  # type: ignore[attr-defined]
            return [], 0
        if isinstance(node, ast.ClassDef) and node.name == name:
            inits = [
                f
                for f in node.body
                if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef) and f.name == "__init__"
            ]
            return inits, 1
    return None, 0


def own_attribute(
    target: ast.expr, assign: ast.AST, facts: PortFacts
) -> tuple[ast.ClassDef, str] | None:
    """The class and the attribute where ``target`` is ``self.attr`` in a method of the
    file's class (``self`` its first parameter), else None."""
    scope = facts.scope_of.get(id(assign))
    func = scope.node if scope is not None else None
    if scope is None or scope.cls is None or not isinstance(func, ast.FunctionDef):
        return None
    first = (func.args.posonlyargs + func.args.args)[:1]
    if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)):
        return None
    if not first or target.value.id != first[0].arg:
        return None
    return scope.cls, target.attr
