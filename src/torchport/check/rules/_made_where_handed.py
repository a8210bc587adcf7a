"""TP504's creators that make nothing on the CPU, and module lists registered another way.

* A creator whose tensor is made where a tensor it is handed is (issue 31 item 5,
  w31an): ``out=`` (the result is written into ``out``, made where ``out`` was) when
  ``out`` is made where a tensor is or by a torch function,
  ``torch.normal`` given no size (its mean or std is a tensor: the draw is made on that
  tensor's device) and ``torch.bernoulli`` (drawn on its input's device). Such a call is
  like ``x * 2``: its result follows its operands. A tensor operand made on the CPU in
  the method is reported where it is made; one kept in a plain attribute, where
  ``__init__`` keeps it.
* Modules kept in a plain list that the class also registers: ``self.m =
  nn.ModuleList(self.layers)`` (or ``ModuleDict``, ``Sequential(*self.layers)``), or a
  loop over the list handing each module to ``self.add_module``/``self.register_module``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

_Qualname = Callable[[ast.expr], "str | None"]

__all__ = ["OUT_LEFT", "made_where_handed", "out_left", "registered_otherwise"]

OUT_LEFT = (
    "this tensor is written into `out=`, made by a call the port does not place (the CPU's "
    "where CUDA is not: MPS, XPU); `device=` beside it fails: make `out` on the input's device"
)

_REGISTERING = frozenset({"ModuleList", "ModuleDict", "Sequential"})
_ADDING = frozenset({"add_module", "register_module"})


def made_where_handed(node: ast.Call, name: str | None, qualname: _Qualname) -> bool:
    """Whether ``node`` (a call of the creator ``name``, no ``device=``) makes its tensor
    where a tensor it is handed is: ``out=``, ``torch.normal`` with no size,
    ``torch.bernoulli``."""
    out = next((k.value for k in node.keywords if k.arg == "out"), None)
    if out is not None:
        return _placed_or_said(out, qualname)
    if name == "torch.bernoulli":
        return bool(node.args) or any(k.arg == "input" for k in node.keywords)
    if name == "torch.normal":  # `normal(mean, std, size)`: numbers, drawn on the CPU
        return len(node.args) <= 2 and not any(k.arg == "size" for k in node.keywords)
    return False


def out_left(node: ast.Call, qualname: _Qualname) -> bool:
    """Whether ``node`` writes into an ``out=`` made by a call the port does not place."""
    out = next((k.value for k in node.keywords if k.arg == "out"), None)
    return out is not None and not _placed_or_said(out, qualname)


def _placed_or_said(out: ast.expr, qualname: _Qualname) -> bool:
    """Whether ``out`` is made where a tensor is (``h.new_empty(0)``, ``torch.empty_like(h)``)
    or by a torch function, reported where it makes a CPU tensor (``torch.empty(0)``,
    ``torch.LongTensor(n)``). Not a
    call the port does not know: Sentence-VAE's ``self.tensor()``, ``torch.cuda.FloatTensor``
    or ``torch.Tensor``, is the CPU's where CUDA is not (MPS, XPU)."""
    if not isinstance(out, ast.Call) or not isinstance(out.func, ast.Attribute):
        return False
    attr = out.func.attr
    if attr.startswith("new_") or attr.endswith("_like"):
        return True
    made_by = qualname(out.func) or ""
    return made_by.startswith("torch.") and not made_by.startswith("torch.cuda.")


def _self_attr(expr: ast.expr) -> str | None:
    if isinstance(expr, ast.Starred):
        expr = expr.value
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
        return expr.attr if expr.value.id == "self" else None
    return None


def _called(call: ast.Call) -> str | None:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)


def registered_otherwise(cls: ast.ClassDef, attr: str) -> bool:
    """Whether the class registers the modules of its plain list ``self.<attr>``: hands
    the list to a module container it keeps on ``self``, or each item to
    ``self.add_module``/``self.register_module`` in a loop over the list."""
    for node in ast.walk(cls):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and _called(node.value) in _REGISTERING
            and any(_self_attr(t) is not None for t in node.targets)
            and any(_self_attr(a) == attr for a in node.value.args)
        ):
            return True
        if isinstance(node, ast.For) and _loops_over(node.iter, attr):
            names = {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
            for call in ast.walk(node):
                if (
                    isinstance(call, ast.Call)
                    and isinstance(call.func, ast.Attribute)
                    and _self_attr(call.func) in _ADDING
                    and any(isinstance(a, ast.Name) and a.id in names for a in call.args)
                ):
                    return True
    return False


def _loops_over(expr: ast.expr, attr: str) -> bool:
    """``self.<attr>``, ``enumerate(self.<attr>)`` or ``self.<attr>.items()``/``.values()``."""
    if isinstance(expr, ast.Call) and getattr(expr.func, "id", None) == "enumerate" and expr.args:
        expr = expr.args[0]
    func = expr.func if isinstance(expr, ast.Call) and not expr.args else None
    if isinstance(func, ast.Attribute) and func.attr in {"items", "values"}:
        expr = func.value
    return _self_attr(expr) == attr
