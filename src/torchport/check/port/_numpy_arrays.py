"""Which numpy values are arrays, not scalars: what a device tensor refuses in an operator.

``t * a`` with ``t`` on the device and ``a`` a numpy array stops ("can't convert
cuda:0 device type tensor to numpy"); with a numpy scalar (``np.sqrt(2)``,
``a.mean()``, ``np.float32(x)``) it runs. :attr:`Kind.NUMPY` holds both, so TP522
asks here, and reports only a value that is an array by its own code: made by a
numpy array maker (``np.ones(4)``, ``np.random.rand(3)``), a tensor's ``.numpy()``,
an elementwise function or operator of an array, a slice or a reshaping of one, an
attribute the file's class stores one in, a function of the file that returns one, a
name a binding of which is one, a parameter a call site of the file hands one (the
others handing numpy values or numbers: the run that takes the array stops). Anything
else (an item ``a[0]``, a reduction, an int index) is not told to be an array, and not
reported. A comparison with a name every binding of which is a numpy call
(``pred == labels``) is reported as it was, with its own message.
Syntax only; nothing here imports numpy or torch.
"""

from __future__ import annotations

import ast
import weakref

from torchport.check._context import Context
from torchport.check.port._facts import PortFacts, PortScope
from torchport.check.port._kinds import Kind, ValueKinds
from torchport.check.port._value_kind import TENSORS
from torchport.check.semantic import BindingKind

__all__ = ["array_beside_device", "numpy_array"]

# `np.ones(4)`: an array whatever its arguments
_MAKERS = frozenset(
    {"array", "asarray", "ascontiguousarray", "asfarray", "copy", "ones", "zeros", "empty",
     "full", "ones_like", "zeros_like", "empty_like", "full_like", "arange", "linspace",
     "logspace", "eye", "identity", "stack", "vstack", "hstack", "dstack", "column_stack",
     "concatenate", "load", "loadtxt", "genfromtxt", "fromfile", "frombuffer", "tile",
     "diag", "tril", "triu", "outer", "meshgrid", "indices", "atleast_1d", "atleast_2d"}
)  # fmt: skip
# `np.random.rand(3)`: an array when given a size (a float when called with none)
_SIZED = frozenset({"rand", "randn", "random", "random_sample", "ranf", "sample"})
_SIZE_KEYWORD = frozenset(
    {"uniform", "normal", "randint", "choice", "binomial", "poisson", "exponential",
     "standard_normal", "permutation", "integers", "beta", "gamma", "multinomial"}
)  # fmt: skip
# Elementwise: an array when any argument is one
_ELEMENTWISE = frozenset(
    {"exp", "log", "log2", "log10", "log1p", "expm1", "sqrt", "square", "abs", "absolute",
     "sin", "cos", "tan", "tanh", "sinh", "cosh", "arctan", "arcsin", "arccos", "clip",
     "where", "maximum", "minimum", "power", "round", "around", "floor", "ceil", "sign",
     "multiply", "add", "subtract", "divide", "true_divide", "negative", "reciprocal",
     "transpose", "reshape", "squeeze", "expand_dims", "flip", "roll", "float32", "float64",
     "int64", "int32", "matmul", "cumsum", "cumprod", "sort", "swapaxes", "moveaxis"}
)  # fmt: skip
# Methods and attributes of an array that give an array back
_ARRAY_METHODS = frozenset(
    {"reshape", "astype", "copy", "flatten", "ravel", "transpose", "squeeze", "clip",
     "swapaxes", "repeat", "cumsum", "view", "__array__"}
)  # fmt: skip
_ARRAY_ATTRIBUTES = frozenset({"T", "real", "imag"})
# On the device once ported: a tensor the port places, a model's weight (`model.weight[0]`)
_PLACED = frozenset({Kind.DEVICE, Kind.MODEL})


def numpy_array(expr: ast.expr, kinds: ValueKinds) -> bool:
    """Whether ``expr`` is a numpy array by its own code (see the module docstring)."""
    return _Arrays(kinds).array(expr)


class _Arrays:
    def __init__(self, kinds: ValueKinds) -> None:
        self.kinds = kinds
        self.ctx = kinds.ctx
        self.known: dict[int, bool] = {}  # by node id; False while worked out (a cycle)

    def array(self, expr: ast.expr) -> bool:
        key = id(expr)
        if key not in self.known:
            self.known[key] = False
            self.known[key] = self._array(expr)
        return self.known[key]

    def _array(self, expr: ast.expr) -> bool:
        if isinstance(expr, ast.Call):
            return self._call(expr)
        if isinstance(expr, ast.Name):
            return self._name(expr)
        if isinstance(expr, ast.Attribute):
            if expr.attr in _ARRAY_ATTRIBUTES:
                return self.array(expr.value)
            return self._attribute(expr)
        if isinstance(expr, ast.Subscript):
            index = expr.slice
            parts = index.elts if isinstance(index, ast.Tuple) else [index]
            sliced = any(isinstance(p, ast.Slice) or self.array(p) for p in parts)
            return sliced and self.array(expr.value)  # `a[:, 1:]`, `a[mask]`
        if isinstance(expr, ast.BinOp):
            if not (self.array(expr.left) or self.array(expr.right)):
                return False
            kinds = (self.kinds.of(expr.left), self.kinds.of(expr.right))
            return all(k in (Kind.NUMPY, Kind.OTHER) for k in kinds)
        if isinstance(expr, ast.UnaryOp):
            return not isinstance(expr.op, ast.Not) and self.array(expr.operand)
        return False

    def _call(self, call: ast.Call) -> bool:
        func = call.func
        name = self.ctx.qualname(func) or ""
        if name.startswith("numpy."):
            tail = name.rpartition(".")[2]
            if name.startswith("numpy.random."):
                if tail in _SIZED:
                    return bool(call.args)
                return tail in _SIZE_KEYWORD and any(k.arg == "size" for k in call.keywords)
            if tail in _MAKERS:
                return True
            if tail in _ELEMENTWISE:
                return any(self.array(a) for a in call.args)
            return False
        if isinstance(func, ast.Name) and not name:
            return self._returned(func)
        if not isinstance(func, ast.Attribute) or name:
            return False
        if func.attr == "numpy" and not call.args:
            return self.kinds.of(func.value) in TENSORS  # `t.numpy()`: an array, 0-d too
        if func.attr in _ARRAY_METHODS:
            return self.kinds.of(func.value) is Kind.NUMPY and self.array(func.value)
        return False

    def _returned(self, func: ast.Name) -> bool:
        """``make_mask(n)`` of a function of the file a ``return`` of which is an array."""
        found = self.kinds.scopes.bindings(func.id, func)
        node = found[0].node if len(found) == 1 else None
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return False
        values = self.kinds.callers.return_values(node) or []
        return any(self.array(v) for v in values)

    def _attribute(self, expr: ast.Attribute) -> bool:
        """``self.mask`` in a method of the file's class, ``h.mask`` of ``h = Holder()``:
        every value the class's methods store there is an array (its kind NUMPY)."""
        kinds = self.kinds
        value = expr.value
        if isinstance(value, ast.Name) and value.id == "self":
            holder = kinds.facts.scope_of.get(id(expr))
            cls = holder.cls if holder is not None else None
        else:
            cls = kinds.instance_class(value)
        if cls is None or kinds.attributes.own_attribute(cls, expr.attr) is not Kind.NUMPY:
            return False
        stored = kinds.attributes.stored(cls, expr.attr)
        return bool(stored) and all(self.array(v) for v in stored)

    def _name(self, name: ast.Name) -> bool:
        """Some binding that may reach ``name`` is an array (the run that takes it stops)."""
        for b in self.kinds.reaching.may_reach(name):
            if b.value is not None and self.array(b.value):
                return True
            node = b.node
            parameter = b.kind is BindingKind.PARAMETER and isinstance(node, ast.arg)
            if parameter and isinstance(node, ast.arg) and self._parameter(node):
                return True
        return False

    def _parameter(self, arg: ast.arg) -> bool:
        """A parameter some call site of the file hands an array, the others numpy values
        or numbers (its kind NUMPY or OTHER by every one)."""
        callers = self.kinds.callers
        args = self.kinds.scopes.parent(arg)
        func = self.kinds.scopes.parent(args) if args is not None else None
        if func is None or not isinstance(args, ast.arguments):
            return False
        sites = callers.call_sites(func)
        if not sites:
            return False
        positional = [*args.posonlyargs, *args.args]
        if callers.method_of(func) is not None:
            positional = positional[1:]
        index = next((i for i, p in enumerate(positional) if p is arg), None)
        for call, _ in sites:
            given = next((k.value for k in call.keywords if k.arg == arg.arg), None)
            if given is None and index is not None and index < len(call.args):
                given = call.args[index]
            if given is not None and self.array(given):
                # (the callers' kinds last: they are worked out for this alone)
                kinds = callers.given(arg)
                return bool(kinds) and kinds <= {Kind.NUMPY, Kind.OTHER}
        return False


def array_beside_device(node: ast.AST, scope: PortScope, facts: PortFacts) -> str | None:
    """TP522's message for the numpy array of ``w * a``, ``t += a``, ``t == a`` where another
    operand is on the device (a forward's output or what is made from it, a model's weight,
    a tensor the port places): torch reads the array as a CPU tensor there, or hands the
    device tensor to numpy, and stops. None: no such operator."""
    if isinstance(node, ast.BinOp):
        operands = [node.left, node.right]
    elif isinstance(node, ast.AugAssign):
        operands = [node.target, node.value]
    elif isinstance(node, ast.Compare):
        operands = [node.left, *node.comparators]
        name = _numpy_name_compared_with_a_device_tensor(node, scope, facts)
        if name is not None:
            return (
                f"call `.cpu()` on the device value before comparing it with the numpy "
                f"array `{name}` (or make `{name}` a tensor on `device`)"
            )
    else:
        return None
    tested = _arrays(facts)
    if tested is None:
        return None
    kinds = tested.kinds
    arrays = [o for o in operands if tested.array(o)]
    if not arrays:
        return None
    # (not the array itself: a name the flow marks a device value by another binding)
    others = [o for o in operands if o not in arrays]
    if not any(facts.on_device(o, scope) or kinds.of(o) in _PLACED for o in others):
        return None
    text = ast.unparse(arrays[0])
    named = f"`{text}`" if len(text) <= 40 else "the numpy array"
    return (
        f"make {named} a tensor on `device` (`torch.as_tensor(..., device=device)`): a numpy "
        "array meets a device tensor here, which torch refuses"
    )


def _arrays(facts: PortFacts) -> _Arrays | None:
    """The file's array test, made once per walk; None where its text names no numpy (no
    import of it, no ``.numpy()``) and has no star import that could bring it: no array."""
    memo = facts.ctx.memo
    found = memo.get("port.numpy_arrays", False)
    if found is False:
        source = facts.ctx.source
        if "numpy" in source or "import *" in source:
            from torchport.check.port._kinds import value_kinds

            found = _Arrays(value_kinds(facts))
        else:
            found = None
        memo["port.numpy_arrays"] = found
    assert found is None or isinstance(found, _Arrays)
    return found


def _numpy_name_compared_with_a_device_tensor(
    node: ast.Compare, scope: PortScope, facts: PortFacts
) -> str | None:
    """The name of a numpy array compared with a device tensor (``pred == labels``)."""
    operands = [node.left, *node.comparators]
    if not any(facts.on_device(o, scope) for o in operands):
        return None
    for operand in operands:
        if isinstance(operand, ast.Name) and _a_numpy_name(operand.id, scope, facts):
            return operand.id
    return None


def _a_numpy_name(name: str, scope: PortScope, facts: PortFacts) -> bool:
    """Whether every binding of ``name`` in ``scope`` is a numpy call; once per name and scope
    (asked per comparison, a loop over a name's every binding each time was quadratic)."""
    ctx = facts.ctx
    known = _NUMPY_NAMES.setdefault(ctx, {})
    key = (id(scope), name)
    if key not in known:
        values = facts.bindings(name, scope) or []
        known[key] = bool(values) and all(
            isinstance(v, ast.Call) and (ctx.qualname(v.func) or "").startswith("numpy.")
            for v in values
        )
    return known[key]


_NUMPY_NAMES: weakref.WeakKeyDictionary[Context, dict[tuple[int, str], bool]] = (
    weakref.WeakKeyDictionary()
)
