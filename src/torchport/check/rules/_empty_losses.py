"""A move of a loss that holds no tensor moves nothing (TP101 leaves it alone).

``Module.cuda``/``to`` move a module's parameters and buffers; a loss that has none is the
same object on any machine after the move, with or without CUDA. torch's own losses that
hold nothing, or hold a tensor only when given one (``weight=``), are listed here; a loss
class of the file (n31an: ``cross_entropy_loss_with_soft_target(_Loss)``, sample AJ row 21) is
read: one whose every base is such a torch loss, and whose body stores nothing on ``self``
but constants and registers nothing, holds nothing either.
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check._match import method_name
from torchport.check.semantic import BindingKind

__all__ = ["moves_nothing"]

# torch's losses that hold no tensor whatever they are given (no parameter, no buffer)
_EMPTY_LOSSES = frozenset(
    {
        *("L1Loss", "MSELoss", "SmoothL1Loss", "HuberLoss", "KLDivLoss", "PoissonNLLLoss"),
        *("GaussianNLLLoss", "CosineEmbeddingLoss", "MarginRankingLoss", "HingeEmbeddingLoss"),
        *("SoftMarginLoss", "TripletMarginLoss", "CTCLoss", "MultiLabelMarginLoss"),
    }
)
# ... and those that hold one only when given it (a `weight`, BCE's `pos_weight` buffer)
_WEIGHTED_LOSSES = frozenset(
    {
        *("CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss"),
        *("MultiLabelSoftMarginLoss", "MultiMarginLoss"),
    }
)
_NOT_TENSORS = frozenset(  # the weighted losses' other arguments: numbers, strings, flags
    {"ignore_index", "reduction", "size_average", "reduce", "label_smoothing", "p", "margin"}
)
_WEIGHTS = frozenset({"weight", "pos_weight"})
_LOSS_MODULES = ("torch.nn", "torch.nn.modules.loss")
# what adds a tensor or a module to a module other than an attribute store
_REGISTERS = frozenset(
    {"register_buffer", "register_parameter", "add_module", "register_module", "setattr"}
)


def moves_nothing(node: ast.Call, ctx: Context) -> bool:
    """``nn.CrossEntropyLoss().cuda()``, ``nn.MSELoss(reduction="sum").to("cuda")``: a move of
    a torch loss built right there that holds no tensor. ``Module.cuda``/``to`` move its
    parameters and buffers, and it has none: the call moves nothing and runs on any machine,
    with or without CUDA (sample A-T's TP101 rows judged low (f): vicreg, TSM, UniMatch,
    flash-fft-conv). A loss given a weight (``weight=w``, positionally, or through
    ``**kwargs``) holds it as a buffer the move does move; a loss class of the file holds
    nothing where :func:`_file_loss_holds_nothing` says so (any other, ``CharbonnierLoss()``
    of another module, is not known to hold nothing); a loss built elsewhere and moved by
    name is not followed."""
    built = node.func.value if isinstance(node.func, ast.Attribute) else None
    if method_name(node) not in ("cuda", "to") or not isinstance(built, ast.Call):
        return False
    name = ctx.qualname(built.func) or ""
    module, _, loss = name.rpartition(".")
    if module not in _LOSS_MODULES:
        return _file_loss_holds_nothing(built.func, ctx)
    if loss in _EMPTY_LOSSES:
        return True
    return (
        loss in _WEIGHTED_LOSSES
        and not built.args
        and all(
            kw.arg in _NOT_TENSORS
            or (
                kw.arg in _WEIGHTS and isinstance(kw.value, ast.Constant) and kw.value.value is None
            )
            for kw in built.keywords
        )
    )


def _file_loss_holds_nothing(func: ast.expr, ctx: Context) -> bool:
    """``func`` names a class of the file, bound once, undecorated, whose every base is torch's
    ``_Loss`` or a loss that holds nothing (``_EMPTY_LOSSES``), and whose body (its methods
    too) stores on ``self`` only constants, and registers nothing (``register_buffer``,
    ``add_module``, ``setattr``...); its class body binds constants and functions only. Any
    doubt (a base of the file, a keyword such as ``metaclass=``): False."""
    if not isinstance(func, ast.Name):
        return False
    found = ctx.scopes.bindings(func.id, func)
    cls = found[0].node if len(found) == 1 and found[0].kind is BindingKind.CLASS else None
    if not isinstance(cls, ast.ClassDef) or cls.decorator_list or cls.keywords or not cls.bases:
        return False
    for base in cls.bases:
        module, _, loss = (ctx.qualname(base) or "").rpartition(".")
        if module not in _LOSS_MODULES or loss not in ("_Loss", *_EMPTY_LOSSES):
            return False
    for stmt in cls.body:
        if isinstance(stmt, ast.Assign | ast.AnnAssign):
            if not isinstance(stmt.value, ast.Constant):
                return False
        elif not isinstance(stmt, ast.FunctionDef | ast.Expr | ast.Pass):
            return False
    return not any(_adds_state(node) for stmt in cls.body for node in ast.walk(stmt))


def _adds_state(node: ast.AST) -> bool:
    """An attribute stored with what is not a constant, or a call that registers state."""
    if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        stores = any(isinstance(t, ast.Attribute | ast.Subscript | ast.Starred) or (
            isinstance(t, ast.Tuple | ast.List) and _stores(t)) for t in targets)  # fmt: skip
        return stores and not isinstance(node.value, ast.Constant)
    if isinstance(node, ast.Call):
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return called in _REGISTERS
    return isinstance(node, ast.Global | ast.Nonlocal | ast.NamedExpr | ast.ClassDef)


def _stores(target: ast.expr) -> bool:
    """A tuple or list target with an attribute or an item among its parts."""
    return any(isinstance(n, ast.Attribute | ast.Subscript) for n in ast.walk(target))
