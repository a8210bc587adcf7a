"""Whose method a call calls, and whether a device value is data: what a fix may rewrite.

The invariant every device fix keeps: it rewrites a call only where the receiver is known to be
torch's (a tensor, a module, a torch device, a torch API), never a method of a class of the
program (a batch class with its own ``.cuda()``, a config whose ``.to()`` takes a string), of
another library (numba, CuPy, JAX, TensorFlow), and never a device value used as data (an
operand of a comparison, an assertion, a test's expectation) or CUDA used on purpose to fail (a
negative test). Where it cannot be told, the rule reports without a fix.

:func:`receiver_owner` answers TORCH, OTHER or UNKNOWN for the receiver of a
method call, following names through the one resolver
(:class:`~torchport.check.semantic._scope.ScopeMap`) a few hops:

* TORCH: a value made by a torch call (``torch.ones(2)``, ``nn.Linear(2, 2)``),
  an instance of a class of the file whose bases lead to torch's
  (``class Net(nn.Module)``) and that does not define the method itself, a
  chain of tensor methods over one of these;
* OTHER: an instance of a class of the file that defines the method itself (or a class of
  the program among its bases does, beside torch's too; or it is given at run time:
  ``Box.cuda = f``, ``semantic/_dynamic_methods.py``), or whose bases lead nowhere but to
  ``object``, a value of a look-alike library (:data:`LOOKALIKE_LIBRARIES`), a literal, a
  function or class object;
* UNKNOWN: everything else (a parameter, an attribute, a call of an imported helper).

:func:`may_rewrite` is the decision: TORCH, or UNKNOWN in a file where no
class defines a method of that name (the call cannot be the program's own
method of this file, nor of a class of a project module it imports anything from, in a
function too: that module's ``make_batch()`` may return one). Names bound by
imports of the project's own modules are read there, through the port's project
view (``port/_project_owners.py``): a class of a sibling module (or a base of a
class of the file) answers as one of the file would; a name of the project that cannot be
read (a module that does not parse, a star or dynamic import) is OTHER: reported."""

from __future__ import annotations

import ast
import enum
import weakref

from torchport._device_types import CUDA
from torchport.check._nodes import nodes_among
from torchport.check._patterns import may_give_methods
from torchport.check.semantic._binding import BindingKind, ScopeKind
from torchport.check.semantic._devices import device_type

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check._context import Context

__all__ = [
    "LOOKALIKE_LIBRARIES",
    "Owner",
    "device_as_data",
    "enters_call_named",
    "may_rewrite",
    "meant_to_fail",
    "receiver_owner",
    "value_fixable",
]

# Libraries whose objects have `.cuda`/`.to`/`device` of their own and are never torch's.
LOOKALIKE_LIBRARIES = frozenset(
    {"numba", "cupy", "cupyx", "jax", "jaxlib", "tensorflow", "keras", "numpy", "mxnet",
     "paddle", "cudf", "pycuda", "tensorrt", "cuda", "tinygrad", "mlx", "dask", "pandas"}
)  # fmt: skip
_HOPS = 8
# Methods of tensors and modules whose result is torch's when the receiver is.
_TORCH_CHAIN = frozenset(
    {"to", "cuda", "cpu", "float", "double", "half", "bfloat16", "long", "int", "bool",
     "detach", "clone", "contiguous", "view", "reshape", "squeeze", "unsqueeze", "permute",
     "transpose", "flatten", "sum", "mean", "train", "eval", "requires_grad_", "type",
     "pin_memory", "share_memory_", "t", "expand", "repeat", "abs", "exp", "log", "sqrt"}
)  # fmt: skip


class Owner(enum.Enum):
    """Whose value a receiver is."""

    TORCH = "torch"
    OTHER = "other"
    UNKNOWN = "unknown"


def _library_owner(qualified: str) -> Owner:
    root = qualified.partition(".")[0]
    if root == "torch":
        return Owner.TORCH
    if root in LOOKALIKE_LIBRARIES:
        return Owner.OTHER
    return Owner.UNKNOWN


def receiver_owner(expr: ast.expr, method: str, ctx: Context) -> Owner:
    """Whose method ``expr.<method>(...)`` calls: torch's, another's, or unknown."""
    scopes = ctx.scopes
    for _ in range(_HOPS):
        if isinstance(expr, ast.Name):
            if expr.id not in ctx.import_tails and not scopes.bindings(expr.id, expr):
                return _project_owner(
                    expr, method, ctx, instance=False, owner=Owner.UNKNOWN
                )  # a builtin, a star's
            binding = scopes.binding_at(expr)
            if binding is None:
                return Owner.UNKNOWN
            if binding.kind is BindingKind.IMPORT:
                owner = (
                    Owner.UNKNOWN
                    if binding.qualified is None
                    else _library_owner(binding.qualified)
                )
                return _project_owner(expr, method, ctx, instance=False, owner=owner)
            if binding.kind in (BindingKind.DEF, BindingKind.CLASS):
                return Owner.OTHER  # a function or class object has no `.cuda()`
            if binding.value is None:
                return Owner.UNKNOWN
            expr = binding.value
            continue
        if isinstance(expr, (ast.Constant, ast.JoinedStr, ast.List, ast.Tuple, ast.Dict, ast.Set)):
            return Owner.OTHER
        if isinstance(expr, (ast.ListComp, ast.DictComp, ast.SetComp, ast.Lambda)):
            return Owner.OTHER
        if isinstance(expr, ast.Attribute):
            name = ctx.qualname(expr)
            owner = Owner.UNKNOWN if name is None else _library_owner(name)
            return _project_owner(expr, method, ctx, instance=False, owner=owner)
        if not isinstance(expr, ast.Call):
            return Owner.UNKNOWN
        name = ctx.qualname(expr.func)
        if name is not None:
            owner = _library_owner(name)
            return _project_owner(expr.func, method, ctx, instance=True, owner=owner)
        func = expr.func
        if isinstance(func, ast.Attribute):
            if func.attr not in _TORCH_CHAIN:  # `batch.Batch(x)` after `from . import batch`
                return _project_owner(func, method, ctx, instance=True, owner=Owner.UNKNOWN)
            if method in ("cuda", "to") and func.attr in ("cuda", "to", "cpu"):
                # `Batch(x).cuda().to(...)`: whoever made the receiver answers
                expr = func.value
                continue
            expr = func.value
            continue
        if isinstance(func, ast.Name):
            binding = scopes.binding_at(func)
            if binding is not None and binding.kind is BindingKind.CLASS:
                assert isinstance(binding.node, ast.ClassDef)
                return _class_answer(binding.node, method, ctx, 0)[0]
            if binding is not None and binding.kind is BindingKind.IMPORT:
                return _project_owner(func, method, ctx, instance=True, owner=Owner.UNKNOWN)
            if binding is None and func.id not in ctx.import_tails:
                return _project_owner(func, method, ctx, instance=True, owner=Owner.UNKNOWN)
        return Owner.UNKNOWN
    return Owner.UNKNOWN


_DECIDED = {"torch": Owner.TORCH, "other": Owner.OTHER, "unknown": Owner.UNKNOWN}


def _project_owner(
    expr: ast.expr, method: str, ctx: Context, *, instance: bool, owner: Owner
) -> Owner:
    """``owner``, or where it is UNKNOWN and ``expr`` (a name, ``alias.name``) is bound by an
    import of the project's own modules, what the project view says of it (a star import's
    name where ``expr`` is bound by nothing): see ``port/_project_owners.py``."""
    if owner is not Owner.UNKNOWN:
        return owner
    root = expr
    while isinstance(root, ast.Attribute):
        root = root.value
    star = isinstance(expr, ast.Name) and expr.id not in ctx.import_tails
    if not isinstance(root, ast.Name) or (root.id not in ctx.import_tails and not star):
        return owner
    if star and "*" not in ctx.source:
        return owner  # a builtin
    answer = ctx.project_answer(expr, method, instance=instance)
    return owner if answer is None else _DECIDED[answer]


def _class_answer(cls: ast.ClassDef, method: str, ctx: Context, depth: int) -> tuple[Owner, bool]:
    """Whose ``method`` an instance of ``cls`` (a class of this file) has, and whether a class
    of the program among its bases may define it: that one decides, beside torch's base too
    (``Net(Mover, nn.Module)`` takes ``Mover``'s ``.cuda()``; the order is not followed)."""
    if _defines(cls, method) or (method == "cuda" and _defines(cls, "to")):
        return Owner.OTHER, True  # the program's own `.cuda()` / `.to()` (which `.cuda()` becomes)
    if given_to(ctx, cls.name, method):  # `Box.cuda = f` after the class
        return Owner.OTHER, True
    if depth > 4:
        return Owner.UNKNOWN, False
    if not cls.bases:
        return Owner.OTHER, False  # an `object`: torch's method is not there either
    found, scopes = Owner.OTHER, ctx.scopes
    for base in cls.bases:
        base = base.value if isinstance(base, ast.Subscript) else base  # `Base[T]`
        name, owner, own = ctx.qualname(base), Owner.UNKNOWN, False
        if name is not None:
            plain = name in ("typing.Generic", "abc.ABC")
            library = Owner.OTHER if plain else _library_owner(name)
            owner = _project_owner(base, method, ctx, instance=True, owner=library)
            own = library is Owner.UNKNOWN and owner is Owner.OTHER  # the project's class
        elif (
            isinstance(base, ast.Name)
            and base.id == "object"
            and not scopes.bindings("object", base)
        ):
            owner = Owner.OTHER
        elif isinstance(base, ast.Name):
            binding = scopes.binding_at(base)
            if binding is not None and binding.kind is BindingKind.CLASS:
                assert isinstance(binding.node, ast.ClassDef)
                owner, own = _class_answer(binding.node, method, ctx, depth + 1)
            elif (binding is not None and binding.kind is BindingKind.IMPORT) or binding is None:
                owner = _project_owner(base, method, ctx, instance=True, owner=Owner.UNKNOWN)
                own = owner is Owner.OTHER
        if own or owner is Owner.UNKNOWN:
            return (Owner.OTHER, True) if own else (Owner.UNKNOWN, False)
        found = Owner.TORCH if owner is Owner.TORCH else found
    return found, False


def _defines(cls: ast.ClassDef, method: str) -> bool:
    for stmt in cls.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == method:
            return True
        if isinstance(stmt, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == method for t in stmt.targets
        ):
            return True
    return False


_OWN_METHODS: weakref.WeakKeyDictionary[Context, frozenset[str]] = weakref.WeakKeyDictionary()


def own_methods(ctx: Context) -> frozenset[str]:
    """Names of methods some class of the file defines (worked out once per file)."""
    found = _OWN_METHODS.get(ctx)
    if found is None:
        names: set[str] = set()
        for scope in ctx.scopes.scopes.values():
            if scope.kind is ScopeKind.CLASS:
                for name, bound in scope.bindings.items():
                    if any(b.kind in (BindingKind.DEF, BindingKind.ASSIGN) for b in bound):
                        names.add(name)
        found = _OWN_METHODS[ctx] = frozenset(names)
    return found


def _project_methods(ctx: Context) -> frozenset[str]:
    """Device methods of their own of the project's non-torch classes the file imports."""
    if not ctx.import_tails:
        return frozenset()
    return ctx.project_methods()


def given_to(ctx: Context, receiver: ast.expr | str | None, method: str, **kw: bool) -> bool:
    """``_dynamic_methods.given_to``, imported (and its walk made) only for a text that may
    give a device method at run time (``_patterns.MAY_GIVE_METHODS``; start-up)."""
    if not may_give_methods(ctx.source):
        return False
    from torchport.check.semantic import _dynamic_methods

    return _dynamic_methods.given_to(ctx, receiver, method, **kw)


def may_rewrite(call: ast.Call, ctx: Context) -> bool:
    """Whether a fix may rewrite the method call ``call`` (``recv.cuda()``, ``recv.to(...)``).

    Yes when the receiver is torch's; when unknown, only in a file where no
    class defines a method of that name; never for another's. Never either for
    CUDA used on purpose to fail (:func:`meant_to_fail`).
    """
    func = call.func
    if not isinstance(func, ast.Attribute):
        return True
    owner = receiver_owner(func.value, func.attr, ctx)
    if owner is Owner.OTHER:
        return False
    if given_to(ctx, func.value, func.attr, unknown=owner is Owner.UNKNOWN):
        return False  # `model.cuda = f`, `type("Box", (), {"cuda": f})`, `cls.cuda = f`...
    if owner is Owner.UNKNOWN and (
        func.attr in own_methods(ctx) or func.attr in _project_methods(ctx)
    ):
        return False
    return not meant_to_fail(ctx)


# `pytest.raises(...)`, `self.assertRaises(...)`, `assertRaisesRegex`, `assertWarns`...
_EXPECTS_FAILURE = frozenset({"raises", "assertRaises", "assertRaisesRegex", "assertRaisesRegexp"})
# What a machine without CUDA raises for a CUDA call.
_NO_CUDA_ERRORS = frozenset({"RuntimeError", "AssertionError", "AttributeError"})


def enters_call_named(block: ast.With | ast.AsyncWith, names: frozenset[str]) -> bool:
    """Whether ``block`` enters a call of one of ``names`` (``with pytest.raises(E):``,
    ``with self.assertWarns(W):``): the name called, or the attribute called on something."""
    for item in block.items:
        call = item.context_expr
        if isinstance(call, ast.Call):
            func = call.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in names:
                return True
    return False


def meant_to_fail(ctx: Context) -> bool:
    """Whether the walk is where CUDA is used to fail on purpose: a negative test.

    Inside ``with pytest.raises(...)`` / ``self.assertRaises(...)``, or in the
    body of a ``try`` whose handler catches what a machine without CUDA raises
    (``RuntimeError``, ``AssertionError``) or everything (a bare ``except``):
    the program's behaviour there depends on CUDA failing, and a fix that
    makes it succeed changes it.
    """
    child: ast.AST | None = None
    for outer in reversed(ctx.ancestors):
        if isinstance(outer, (ast.With, ast.AsyncWith)) and enters_call_named(
            outer, _EXPECTS_FAILURE
        ):
            return True
        if isinstance(outer, (ast.Try, ast.TryStar)) and any(s is child for s in outer.body):
            for handler in outer.handlers:
                caught = handler.type
                kinds = caught.elts if isinstance(caught, ast.Tuple) else [caught]
                if caught is None or any(
                    isinstance(k, ast.Name) and k.id in _NO_CUDA_ERRORS for k in kinds
                ):
                    return True
        if isinstance(outer, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return False
        child = outer
    return False


_ASSERTS = frozenset(
    {"assertEqual", "assertEquals", "assertNotEqual", "assertIs", "assertIsNot", "assertIn",
     "assertNotIn", "assert_equal", "assert_close", "assert_allclose", "assertTrue",
     "assertFalse"}
)  # fmt: skip
# Calls whose arguments are test cases, not where code computes: `pytest.mark.parametrize`,
# `pytest.param(...)`, `pytest.fixture(params=[...])`.
_CASES = frozenset({"parametrize", "param", "fixture"})
_DATA_THROUGH = (ast.Tuple, ast.List, ast.Set, ast.keyword, ast.Starred)


def device_as_data(node: ast.AST, ctx: Context) -> bool:
    """Whether the device value ``node`` is data: compared, asserted, a test's expectation.

    ``assert get_local_device() == torch.device("cuda:3")``,
    ``self.assertEqual(x.device, torch.device("cuda"))``, ``dev in ("cuda", ...)``,
    a key (``{torch.device("cuda"): ...}``, ``table[torch.device("cuda")]``), one
    of a list of device kinds (``[torch.device("cpu"), torch.device("cuda")]``,
    a ``parametrize`` list): rewriting it changes what the program checks, not
    where it computes (on a machine whose accelerator is the CPU, the two kinds
    of the list, or the two keys, become one).
    """
    child = node
    for outer in reversed(ctx.ancestors):
        if isinstance(outer, (ast.Compare, ast.Assert)):
            return True
        if isinstance(outer, ast.Dict):
            return any(key is child for key in outer.keys)
        if isinstance(outer, ast.Subscript):
            return outer.slice is child  # a lookup by device
        if isinstance(outer, ast.Call):
            func = outer.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            # any other call computes with the device it is given
            return name in _ASSERTS or name in _CASES
        if not isinstance(outer, _DATA_THROUGH):
            return False
        if isinstance(outer, (ast.Tuple, ast.List, ast.Set)) and any(
            _other_device(e, ctx) for e in outer.elts if e is not child
        ):
            return True  # `[torch.device("cpu"), torch.device("cuda")]`: the kinds tried
        child = outer
    return False


def _other_device(expr: ast.expr, ctx: Context) -> bool:
    """Whether ``expr`` is a device literal of another type than CUDA (``"cpu"``, ``"mps:0"``)."""
    if isinstance(expr, ast.Call) and expr.args and ctx.qualname(expr.func) == "torch.device":
        expr = expr.args[0]
    if not isinstance(expr, ast.Constant) or not isinstance(expr.value, str):
        return False
    kind = device_type(expr.value)
    return kind is not None and kind != CUDA


_CHECKS: weakref.WeakKeyDictionary[Context, bool] = weakref.WeakKeyDictionary()


def checks_cuda_values(ctx: Context) -> bool:
    """Whether the file asserts or compares a CUDA device value anywhere (worked out once).

    ``assert get_local_device() == torch.device("cuda:3")``,
    ``self.assertEqual(x.device.type, "cuda")``: the file reasons about which
    device a value is, so a device rewritten in one place (a helper's
    ``return torch.device("cuda:3")``, a tensor's ``device="cuda"``) changes
    what is checked in another. Fixes of device values there stay reports.
    """
    found = _CHECKS.get(ctx)
    if found is None:
        found = _CHECKS[ctx] = any(
            _checks_cuda(node, ctx) for node in nodes_among(ctx.tree, _CHECKED)
        )
    return found


_CHECKED = frozenset({ast.Assert, ast.Compare, ast.Call})  # what _checks_cuda looks at


def _checks_cuda(node: ast.AST, ctx: Context) -> bool:
    if isinstance(node, ast.Assert):
        return _names_cuda(node.test, ctx)
    if isinstance(node, ast.Compare):
        return any(
            isinstance(side, ast.Call)
            and ctx.qualname(side.func) == "torch.device"
            and _names_cuda(side, ctx)
            for side in (node.left, *node.comparators)
        )
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr in _ASSERTS and any(_names_cuda(a, ctx) for a in node.args)
    return False


def _names_cuda(expr: ast.expr, ctx: Context) -> bool:
    for sub in ast.walk(expr):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            if device_type(sub.value) == CUDA:
                return True
        elif isinstance(sub, ast.Attribute) and sub.attr == "is_cuda":
            return True
    return False


# Calls whose whole point is the device's index (TP102 rewrites them, with the index).
_PICKS_INDEX = frozenset(
    {"torch.cuda.set_device", "torch.cuda.device", "torch.accelerator.set_device_index",
     "torch.accelerator.device_index"}
)  # fmt: skip


# Methods that take a device to move to (`recv.to(torch.device("cuda"))`).
_MOVES = frozenset(
    {"to", "cuda", "to_empty", "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor"}
)


def _given_to_anothers_move(node: ast.expr, ctx: Context) -> bool:
    """Whether ``node`` is an argument of a move that is not known to be torch's.

    ``Batch(x).to(torch.device("cuda"))`` with the file's ``Batch`` defining ``to``,
    or a config's ``.to()``: the device goes to the program's own method, which
    may print, compare or keep it; as its ``.to("cuda")`` is left alone, so is this.
    """
    ancestors = ctx.ancestors
    outer = ancestors[-1] if ancestors else None
    if isinstance(outer, ast.keyword) and len(ancestors) > 1:
        if outer.value is not node:
            return False
        outer, node = ancestors[-2], outer  # type: ignore[assignment]
    return (
        isinstance(outer, ast.Call)
        and isinstance(outer.func, ast.Attribute)
        and outer.func.attr in _MOVES
        and any(a is node for a in (*outer.args, *outer.keywords))
        and ctx.qualname(outer.func) is None
        and not may_rewrite(outer, ctx)
    )


def value_fixable(node: ast.expr, ctx: Context) -> bool:
    """Whether a fix may replace the CUDA device or move ``node`` (a ``.cuda()`` call or a value).

    Not where the file compares or asserts CUDA devices (:func:`checks_cuda_values`),
    the value is data (:func:`device_as_data`), CUDA fails on purpose
    (:func:`meant_to_fail`), the value is the index a call picks
    (``set_device(torch.device("cuda:1"))``), or ``node`` calls a method that
    is not known to be torch's (:func:`may_rewrite`).
    """
    if checks_cuda_values(ctx) or meant_to_fail(ctx) or device_as_data(node, ctx):
        return False
    parent = ctx.parent
    if isinstance(parent, ast.Call) and (ctx.qualname(parent.func) or "") in _PICKS_INDEX:
        return False
    if _given_to_anothers_move(node, ctx):
        return False
    func = node.func if isinstance(node, ast.Call) else None
    if isinstance(func, ast.Attribute) and func.attr in ("cuda", "to") and not ctx.qualname(func):
        return may_rewrite(node, ctx)  # type: ignore[arg-type]
    return True
