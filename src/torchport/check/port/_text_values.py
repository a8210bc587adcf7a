"""Values the program's own text shows are no tensor: a str or bytes literal, an f-string, a
list or tuple whose items are all such, what ``.split()``, ``.strip()``, ``.join()``, ``str()``,
``input()`` give, ``random.choice`` of such a list, an item of one, and a string joined to one
(``"> " + s``). TP522 and TP523 never call such a value device data (issue 31, item 5)."""

from __future__ import annotations

import ast

from torchport.check.semantic import BindingKind

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check.port._facts import PortFacts, PortScope

__all__ = ["evidently_text"]

_DEPTH = 8
# a str's methods that give a str (or a list of them) and that no tensor has
_STR_METHODS = frozenset(
    {"strip", "lstrip", "rstrip", "join", "lower", "upper", "casefold", "capitalize",
     "format", "splitlines", "encode", "decode", "zfill", "ljust", "rjust", "center"}
)  # fmt: skip
_STR_CALLS = frozenset({"str", "input", "repr", "ascii", "chr"})
_GROWERS = frozenset({"append", "extend", "insert", "__setitem__", "__iadd__"})
_GROWS = BindingKind.AUGMENTED


class _Text:
    """One question: the names of the file whose lists may change after they are made."""

    def __init__(self, scope: PortScope | None, facts: PortFacts | None) -> None:
        self.scope, self.facts = scope, facts

    def __call__(self, expr: ast.expr, depth: int = 0) -> bool:
        if depth > _DEPTH:
            return False
        if isinstance(expr, ast.Constant):
            return isinstance(expr.value, str | bytes)
        if isinstance(expr, ast.JoinedStr):
            return True
        if isinstance(expr, ast.List | ast.Tuple):
            return bool(expr.elts) and all(self(e, depth + 1) for e in expr.elts)
        if isinstance(expr, ast.ListComp | ast.GeneratorExp):
            return self(expr.elt, depth + 1)
        if isinstance(expr, ast.Subscript):
            return self(expr.value, depth + 1) or self._item(expr, depth)
        if isinstance(expr, ast.IfExp):
            return self(expr.body, depth + 1) and self(expr.orelse, depth + 1)
        if isinstance(expr, ast.BinOp):
            return self._joined(expr, depth)
        if isinstance(expr, ast.Call):
            return self._call(expr, depth)
        if isinstance(expr, ast.Name):
            return self._name(expr, depth)
        return False

    def _joined(self, expr: ast.BinOp, depth: int) -> bool:
        """``"> " + s`` and ``"%d" % n`` give a string (a tensor refuses to be added to one);
        a list joined to a list is text only when both are (``[""] + words`` of unknown
        ``words`` may hold anything)."""
        if isinstance(expr.op, ast.Mod):
            return _a_string(expr.left)
        if not isinstance(expr.op, ast.Add):
            return False
        if _a_string(expr.left) or _a_string(expr.right):
            return True
        return self(expr.left, depth + 1) and self(expr.right, depth + 1)

    def _call(self, call: ast.Call, depth: int) -> bool:
        func = call.func
        if isinstance(func, ast.Name):
            return func.id in _STR_CALLS
        if not isinstance(func, ast.Attribute):
            return False
        if func.attr in _STR_METHODS:
            return True
        if func.attr in ("split", "rsplit"):  # a tensor's `split` needs a size
            by_text = not call.keywords and all(_a_string(a) for a in call.args)
            return by_text or self(func.value, depth + 1)
        if func.attr in ("choice", "sample") and isinstance(func.value, ast.Name):
            return func.value.id == "random" and bool(call.args) and self(call.args[0], depth + 1)
        return False

    def _item(self, expr: ast.Subscript, depth: int) -> bool:
        """``pair[0]`` of ``pair = (text, 1)``: the item a literal index picks, by every
        binding of a tuple never grown (``pair[0] = out`` anywhere: not text)."""
        index = expr.slice
        if not (isinstance(index, ast.Constant) and type(index.value) is int):
            return False
        held = expr.value
        if not isinstance(held, ast.Name) or self.scope is None or self.facts is None:
            return False
        bound = self._assigned(held)
        if not bound or _grown(held.id, self.facts):
            return False
        for b in bound:
            if not isinstance(b, ast.Tuple | ast.List) or any(
                isinstance(e, ast.Starred) for e in b.elts
            ):
                return False
            if not -len(b.elts) <= index.value < len(b.elts):
                return False
            if not self(b.elts[index.value], depth + 1):
                return False
        return True

    def _assigned(self, name: ast.Name) -> list[ast.expr] | None:
        """The values assigned to ``name`` where it is read, where those are all its bindings
        there: none of another kind (``with ... as w``, ``except``, an import) nor another
        scope's (a function's ``global w``; k31ak: ``w = "a"`` then ``def g(): global w;
        w = model(x)`` was text). None where not."""
        assert self.scope is not None and self.facts is not None
        bound = self.facts.bindings(name.id, self.scope)
        # (`s += "x"` keeps a str a str, or raises: a list grown so is `_grown`'s)
        seen = [b for b in self.facts.ctx.scopes.bindings(name.id, name) if b.kind is not _GROWS]
        if not bound or len(seen) != len(bound):
            return None
        return None if any(b.kind is not BindingKind.ASSIGN for b in seen) else bound

    def _name(self, name: ast.Name, depth: int) -> bool:
        """Every binding that may reach the read is text, and no list of that name is grown
        anywhere in the file (``words = [""]`` then ``words.append(out)``)."""
        if self.scope is None or self.facts is None:
            return False
        bound = self._assigned(name)
        if not bound or not all(self(b, depth + 1) for b in bound):
            return False
        return not (
            any(isinstance(b, ast.List | ast.ListComp) for b in bound)
            and _grown(name.id, self.facts)
        )


def _a_string(expr: ast.expr) -> bool:
    return isinstance(expr, ast.JoinedStr) or (
        isinstance(expr, ast.Constant) and isinstance(expr.value, str | bytes)
    )


def _grown(name: str, facts: PortFacts) -> bool:
    """Whether a list called ``name`` may change anywhere in the file: a method that grows
    it, an item stored, ``+=``, or it handed to a call (which may grow it). One walk of the
    file for all names, on the first ask (:func:`_grown_names`)."""
    found = facts.ctx.memo.get(_GROWN)
    if found is None:
        found = facts.ctx.memo[_GROWN] = _grown_names(facts.module.node)
    return name in found  # type: ignore[operator]


_GROWN = "text_values.grown"  # Context.memo's key


def _grown_names(tree: ast.AST) -> frozenset[str]:
    """The names :func:`_grown` answers true for, from one walk of ``tree``."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            held = [node.value] if node.attr in _GROWERS else []
        elif isinstance(node, ast.Subscript):
            held = [node.value] if isinstance(node.ctx, ast.Store | ast.Del) else []
        elif isinstance(node, ast.AugAssign):
            held = [node.target]
        elif isinstance(node, ast.Call):
            held = [] if _reads_only(node) else list(node.args)
        else:
            continue
        out.update(n.id for n in held if isinstance(n, ast.Name))
    return frozenset(out)


def _reads_only(call: ast.Call) -> bool:
    """A call that only reads the list (``random.choice(xs)``, ``len(xs)``)."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id in ("len", "print", "sorted", "enumerate", "zip", "str", "list", "tuple")
    return isinstance(func, ast.Attribute) and func.attr in ("choice", "sample", "join")


def evidently_text(expr: ast.expr, scope: PortScope | None, facts: PortFacts | None) -> bool:
    """Whether ``expr`` is, by the text alone, a string or a list/tuple of strings (any doubt:
    False). Names count when every binding that may reach the read is one."""
    return _Text(scope, facts)(expr)
