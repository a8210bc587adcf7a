"""Whether the program says an object's ``device`` is a string, not a ``torch.device``.

Invariant: ``X.device`` counts as a torch device only where nothing says it is a string.
What says so, read from the code (never from the receiver's name):

* ``X``'s class declares the field a string: ``device: str``, ``device: Literal["cpu",
  "cuda"]``, ``device: str | None``, ``Optional[...]``/``Annotated[...]`` of those (a
  dataclass, a pydantic model, any annotated class body; its bases in the same file too),
  where ``X`` is a parameter or a name annotated with that class, a name bound to
  ``Class(...)`` or to a call of a function of the file whose return annotation is the
  class, or a loop/comprehension target over a list, list comprehension or tuple of such
  objects, or over a name bound to one. The class is the file's own, or a name one import
  away in the project (the project view records the field: ``_project_owners.py``);
* ``X`` is an argparse namespace (bound to ``....parse_args()`` or annotated
  ``argparse.Namespace``) and no ``add_argument("--device", type=...)`` in the file gives it
  another type (argparse's values are strings unless a ``type=`` says otherwise).

Anything else (an unannotated receiver, a field annotated ``torch.device``, a class that
declares no such field, another library's class) says nothing: the caller keeps its answer.
"""

from __future__ import annotations

import ast

from torchport.check.semantic._binding import BindingKind

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check._context import Context

__all__ = ["STRING_DEVICE", "declares_string_field", "string_device_receiver"]

# The marker the project view records among a class's methods (no method is so spelled).
STRING_DEVICE = "device: str"
_WRAPPERS = frozenset({"Optional", "Annotated", "Final", "ClassVar", "Union"})
_HOPS = 4


def string_annotation(node: ast.expr | None) -> bool:
    """``str``, ``Literal`` of strings only, or those under ``Optional``/``Union``/``| None``."""
    if node is None:
        return False
    if isinstance(node, ast.Constant):
        if node.value is None:
            return False
        if isinstance(node.value, str):  # a string annotation: read what it spells
            try:
                inner = ast.parse(node.value, mode="eval").body
            except SyntaxError:
                return False
            return not isinstance(inner, ast.Constant) and string_annotation(inner)
        return False
    if isinstance(node, ast.Name):
        return node.id == "str"
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        parts = [p for p in (node.left, node.right) if not _none(p)]
        return bool(parts) and all(string_annotation(p) for p in parts)
    if isinstance(node, ast.Subscript):
        head = node.value.attr if isinstance(node.value, ast.Attribute) else None
        head = node.value.id if isinstance(node.value, ast.Name) else head
        args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if head == "Literal":
            return all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in args)
        if head == "Annotated":
            return string_annotation(args[0])
        if head in _WRAPPERS:
            parts = [a for a in args if not _none(a)]
            return bool(parts) and all(string_annotation(a) for a in parts)
    return False


def _none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def declares_string_field(cls: ast.ClassDef, field: str) -> bool:
    """The class body annotates ``field`` as a string (:func:`string_annotation`)."""
    return any(
        isinstance(s, ast.AnnAssign)
        and isinstance(s.target, ast.Name)
        and s.target.id == field
        and string_annotation(s.annotation)
        for s in cls.body
    )


def _file_class(name: str, ctx: Context, depth: int = 0) -> bool | None:
    """Whether the file's class ``name`` (or a base the file defines) declares ``device`` a
    string; None: the file defines no class so named."""
    found = [c for c in ctx.tree.body if isinstance(c, ast.ClassDef) and c.name == name]
    if len(found) != 1:
        return None
    cls = found[0]
    if declares_string_field(cls, "device"):
        return True
    if depth < _HOPS:
        for base in cls.bases:
            if isinstance(base, ast.Name) and _class_says(base, ctx, depth + 1):
                return True
    return False


def _class_says(node: ast.expr, ctx: Context, depth: int = 0) -> bool:
    """The class ``node`` names (the file's, or one import away) declares ``device`` a string."""
    if isinstance(node, ast.Name):
        own = _file_class(node.id, ctx, depth)
        if own is not None:
            return own
    if not isinstance(node, (ast.Name, ast.Attribute)):
        return False
    # (the project view, built on first use: port/_project_view.py)
    return ctx.project_answer(node, STRING_DEVICE, instance=False) == "string"


def _annotated_classes(node: ast.expr | None) -> list[ast.expr]:
    """The classes an annotation names: ``C``, ``m.C``, ``"C"``, ``C | None``, ``Optional[C]``."""
    if node is None:
        return []
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return []
    if isinstance(node, (ast.Name, ast.Attribute)):
        return [node]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return [c for p in (node.left, node.right) if not _none(p) for c in _annotated_classes(p)]
    head = node.value if isinstance(node, ast.Subscript) else None
    if isinstance(head, ast.Name) and head.id in ("Optional", "Union"):
        assert isinstance(node, ast.Subscript)
        args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        return [c for a in args if not _none(a) for c in _annotated_classes(a)]
    return []


def _annotation_says(annotation: ast.expr | None, ctx: Context) -> bool:
    classes = _annotated_classes(annotation)
    if not classes:
        return False
    if all(ctx.qualname(c) == "argparse.Namespace" for c in classes):
        return _argparse_device_is_text(ctx)
    return all(_class_says(c, ctx) for c in classes)


def _argparse_device_is_text(ctx: Context) -> bool:
    """No ``add_argument("--device", ..., type=...)`` in the file: argparse gives a string."""
    for node in ast.walk(ctx.tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "add_argument"
            and any(
                isinstance(a, ast.Constant) and a.value in ("--device", "device") for a in node.args
            )
            and any(k.arg == "type" for k in node.keywords)
        ):
            return False
    return True


def _value_says(value: ast.expr, ctx: Context, depth: int) -> bool:
    """A value whose objects' class declares ``device`` a string (itself, or its elements)."""
    if isinstance(value, ast.Call):
        func = value.func
        if isinstance(func, ast.Attribute) and func.attr in ("parse_args", "parse_known_args"):
            return func.attr == "parse_args" and _argparse_device_is_text(ctx)
        if isinstance(func, ast.Name):
            defs = [
                d
                for d in ctx.tree.body
                if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name == func.id
            ]
            if len(defs) == 1:
                return _annotation_says(defs[0].returns, ctx)
        return isinstance(func, (ast.Name, ast.Attribute)) and _class_says(func, ctx)
    if isinstance(value, (ast.List, ast.Tuple, ast.Set)):
        return bool(value.elts) and all(_value_says(e, ctx, depth) for e in value.elts)
    if isinstance(value, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
        return _value_says(value.elt, ctx, depth)
    if isinstance(value, ast.Name) and depth < _HOPS:
        return _name_says(value, ctx, depth + 1, element=False)
    return False


def _name_says(name: ast.Name, ctx: Context, depth: int, *, element: bool) -> bool:
    """The object ``name`` holds (``element``: each element of it) has a string ``device``."""
    binding = ctx.scopes.binding_at(name)
    if binding is None:
        return False
    scopes = ctx.scopes
    if binding.kind is BindingKind.PARAMETER:
        arg = binding.node
        annotation = arg.annotation if isinstance(arg, ast.arg) else None
        if element:
            return _element_annotation_says(annotation, ctx)
        return _annotation_says(annotation, ctx)
    holder = scopes.parent(binding.node)
    if isinstance(holder, ast.AnnAssign) and holder.target is binding.node:
        if element:
            return _element_annotation_says(holder.annotation, ctx)
        return _annotation_says(holder.annotation, ctx)
    if binding.kind is BindingKind.LOOP and not element:
        if not isinstance(holder, (ast.For, ast.AsyncFor, ast.comprehension)):
            return False
        return holder.target is binding.node and _iterable_says(holder.iter, ctx, depth)
    if binding.value is None or depth >= _HOPS:
        return False
    if element:
        return _iterable_says(binding.value, ctx, depth)
    return _value_says(binding.value, ctx, depth)


def _element_annotation_says(annotation: ast.expr | None, ctx: Context) -> bool:
    """``list[C]``, ``Sequence[C]``, ``tuple[C, ...]``: the element class declares it."""
    if not isinstance(annotation, ast.Subscript):
        return False
    inner = annotation.slice
    if isinstance(inner, ast.Tuple):
        elts = [e for e in inner.elts if not (isinstance(e, ast.Constant) and e.value is ...)]
        return bool(elts) and all(_annotation_says(e, ctx) for e in elts)
    return _annotation_says(inner, ctx)


def _iterable_says(iterable: ast.expr, ctx: Context, depth: int) -> bool:
    if isinstance(iterable, ast.Name):
        return depth < _HOPS and _name_says(iterable, ctx, depth + 1, element=True)
    if isinstance(iterable, (ast.List, ast.Tuple, ast.Set, ast.ListComp, ast.GeneratorExp)):
        return _value_says(iterable, ctx, depth)
    return False


def string_device_receiver(receiver: ast.expr, ctx: Context) -> bool:
    """Whether the program says ``receiver.device`` is a string (module docstring)."""
    if not isinstance(receiver, ast.Name):
        return False
    return _name_says(receiver, ctx, 0, element=False)
