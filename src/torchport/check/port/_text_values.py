"""Values the program's own text shows are no tensor: a str or bytes literal, an f-string, a
list or tuple whose items are all such, what ``.split()``, ``.strip()``, ``.join()``, ``str()``,
``input()`` give, ``random.choice`` of such a list, an item of one, and a string joined to one
(``"> " + s``). TP522 and TP523 never call such a value device data (issue 31, item 5).

Across the file's functions (n31an): a loop's variable over text, a parameter every call site
in the file hands text (``CallerKinds.call_sites``; TP520 leaves such a parameter alone too:
:func:`given_text`), a call of a file function whose every ``return`` gives text."""

from __future__ import annotations

import ast
from collections.abc import Callable

from torchport.check.port._call_arguments import argument_for, parameter_default
from torchport.check.semantic import BindingKind

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check.port._facts import PortFacts, PortScope
    from torchport.check.port._parameters import CallerKinds

__all__ = ["evidently_text", "given_text"]

_DEPTH = 12
# a str's methods that give a str (or a list of them) and that no tensor has
_STR_METHODS = frozenset(
    {"strip", "lstrip", "rstrip", "join", "lower", "upper", "casefold", "capitalize",
     "format", "splitlines", "encode", "decode", "zfill", "ljust", "rjust", "center"}
)  # fmt: skip
_STR_CALLS = frozenset({"str", "input", "repr", "ascii", "chr"})
_GROWERS = frozenset({"append", "extend", "insert", "__setitem__", "__iadd__"})
_GROWS = BindingKind.AUGMENTED


class _Text:
    """One question: the names of the file whose lists may change after they are made. With
    ``callers``, a parameter is asked of what the file's call sites hand it, and a call of a
    file function of what it returns (each answered once per file: ``_ANSWERED``)."""

    def __init__(
        self, scope: PortScope | None, facts: PortFacts | None, callers: CallerKinds | None = None
    ) -> None:
        self.scope, self.facts, self.callers = scope, facts, callers

    def elsewhere(self, expr: ast.expr, depth: int) -> bool:
        """``expr`` asked where it stands (an argument of a call site, a returned value)."""
        assert self.facts is not None
        scope = self.facts.scope_of.get(id(expr))
        return scope is not None and _Text(scope, self.facts, self.callers)(expr, depth + 1)

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
            return func.id in _STR_CALLS or self._returned(func, depth)
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
        if not bound or self._grown(held.id, depth):
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
        """Every binding that may reach the read is text, and no list of that name grows by
        anything else anywhere in the file (``words = [""]`` then ``words.append(out)``)."""
        if self.scope is None or self.facts is None:
            return False
        bound = self._assigned(name)
        if bound is None:
            return self._bound_elsewhere(name, depth)
        return bool(bound) and all(self._assigned_text(name.id, b, depth) for b in bound)

    def _assigned_text(self, name: str, value: ast.expr, depth: int) -> bool:
        """``name = value`` binds text: ``value`` is, and a list made there grows by text only
        (``words = []`` then ``words.append(line.strip())`` and nothing else: text)."""
        if isinstance(value, ast.List) and not value.elts:
            grown, _ = _growths(self.facts)  # type: ignore[arg-type]
            return bool(grown.get(name)) and not self._grown(name, depth)
        made = isinstance(value, ast.List | ast.ListComp)
        return self(value, depth + 1) and not (made and self._grown(name, depth))

    def _bound_elsewhere(self, name: ast.Name, depth: int) -> bool:
        """A name bound by a parameter, a loop or an assignment, by every binding that may
        reach the read (``for pair in pairs``: the iterable is text; a parameter: every call
        site hands text, :meth:`_given`). Not a list grown anywhere (``pairs.append(out)``,
        ``pairs[0] = out``, ``pairs += [out]``; handed to a call: the caller's list is asked
        where it is made)."""
        assert self.facts is not None
        seen = self.facts.ctx.scopes.bindings(name.id, name)
        if not seen or self._grown(name.id, depth, handed=False):
            return False
        for b in seen:
            if b.kind is _GROWS:
                continue
            if b.kind is BindingKind.ASSIGN and b.value is not None:
                text = self._assigned_text(name.id, b.value, depth)
            elif b.kind is BindingKind.LOOP:
                holder = self.facts.ctx.scopes.parent(b.node)
                text = (
                    isinstance(holder, ast.For | ast.AsyncFor | ast.comprehension)
                    and holder.target is b.node
                    and self(holder.iter, depth + 1)
                )
            else:
                text = b.kind is BindingKind.PARAMETER and self._given(b.node, depth)
            if not text:
                return False
        return True

    def _grown(self, name: str, depth: int, handed: bool = True) -> bool:
        """Whether a list called ``name`` may take a value that is not text anywhere in the
        file: an item stored, an ``append``/``extend``/``+=`` of what is not text
        (``words.append(out)``), or (``handed``) it handed to a call (which may grow it)."""
        assert self.facts is not None
        grown, given = _growths(self.facts)
        if handed and name in given:
            return True
        return any(
            added is None or not self._added_text(added, depth) for added in grown.get(name, ())
        )

    def _added_text(self, added: ast.expr, depth: int) -> bool:
        """What ``words.append(s)`` adds (``s``), what ``extend``/``+=`` add (a list), is text
        where it stands."""
        return self.elsewhere(added, depth)

    def _given(self, arg: ast.AST, depth: int) -> bool:
        """Every call site of the file hands the parameter ``arg`` text (:func:`given_text`)."""
        if self.callers is None or not isinstance(arg, ast.arg):
            return False
        return _answered(self, arg, lambda: _handed_text(self, arg, depth))

    def _returned(self, func: ast.Name, depth: int) -> bool:
        """``split_lines(path)`` of a file function each of whose ``return`` gives text."""
        if self.callers is None or self.facts is None:
            return False
        found = self.facts.ctx.scopes.bindings(func.id, func)
        node = found[0].node if len(found) == 1 else None
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return False
        callers = self.callers

        def every_return() -> bool:
            values = callers.return_values(node)
            return bool(values) and all(self.elsewhere(v, depth) for v in values or ())

        return _answered(self, node, every_return)


_ANSWERED = "text_values.answered"  # Context.memo's key: node id -> text or not


def _answered(text: _Text, node: ast.AST, ask: Callable[[], bool]) -> bool:
    """One answer per parameter or function and file; while it is asked, no (recursion)."""
    assert text.facts is not None
    memo = text.facts.ctx.memo
    found = memo.get(_ANSWERED)
    if found is None:
        found = memo[_ANSWERED] = {}
    assert isinstance(found, dict)
    if id(node) not in found:
        found[id(node)] = False
        found[id(node)] = ask()
    return bool(found[id(node)])


def _handed_text(text: _Text, arg: ast.arg, depth: int) -> bool:
    """Whether every call site of ``arg``'s function in the file hands it text: the argument
    at its place or by its name, else the default; no site, a ``*args``/``**kwargs`` at one,
    a ``*args`` or ``**kwargs`` parameter, a lambda's: no."""
    assert text.callers is not None and text.facts is not None
    scopes = text.facts.ctx.scopes
    args = scopes.parent(arg)
    func = scopes.parent(args) if args is not None else None
    if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    assert isinstance(args, ast.arguments)
    positional = [*args.posonlyargs, *args.args]
    if text.callers.method_of(func) is not None:
        positional = positional[1:]
    sites = text.callers.call_sites(func)
    if not sites or arg is args.vararg or arg is args.kwarg:
        return False
    default = parameter_default(args, arg)
    for call, _ in sites:
        given = argument_for(call, positional, arg, default)
        if given is None or not text.elsewhere(given, depth):
            return False
    return True


def given_text(arg: ast.arg, facts: PortFacts, callers: CallerKinds) -> bool:
    """Whether every call site of the file hands the parameter ``arg`` a string or a list of
    them (``translate(model, pair[0])`` with ``pair`` from ``random.choice(pairs)`` and
    ``pairs`` what a file function's ``[l.split("|||") for l in lines]`` gives): TP520's
    "cannot tell whether the argument is a tensor" has its answer."""
    return _Text(None, facts, callers)._given(arg, 0)


def _a_string(expr: ast.expr) -> bool:
    return isinstance(expr, ast.JoinedStr) or (
        isinstance(expr, ast.Constant) and isinstance(expr.value, str | bytes)
    )


_GROWN = "text_values.grown"  # Context.memo's key


def _growths(facts: PortFacts) -> tuple[dict[str, list[ast.expr | None]], frozenset[str]]:
    """Per name, what each change of a list of that name anywhere in the file adds (``None``:
    not told: an item stored, a grower not called at once), and the names handed to a call
    (which may grow them). One walk of the file for all names, on the first ask."""
    found = facts.ctx.memo.get(_GROWN)
    if found is None:
        found = facts.ctx.memo[_GROWN] = _grown_names(facts.module.node)
    return found  # type: ignore[return-value]


def _grown_names(tree: ast.AST) -> tuple[dict[str, list[ast.expr | None]], frozenset[str]]:
    """:func:`_growths` of ``tree`` (a breadth-first walk: a call before its callee)."""
    out: dict[str, list[ast.expr | None]] = {}
    handed: set[str] = set()
    called: set[int] = set()  # `words.append` nodes called at once
    for node in ast.walk(tree):
        added: ast.expr | None = None
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in _GROWERS:
                called.add(id(func))
                held, added = func.value, _added(func.attr, node)
            else:
                given = [] if _reads_only(node) else node.args
                handed.update(n.id for n in given if isinstance(n, ast.Name))
                continue
        elif isinstance(node, ast.Attribute):
            if node.attr not in _GROWERS or id(node) in called:
                continue
            held = node.value
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store | ast.Del):
            held = node.value
        elif isinstance(node, ast.AugAssign):
            held, added = node.target, node.value
        else:
            continue
        if isinstance(held, ast.Name):
            out.setdefault(held.id, []).append(added)
    return out, frozenset(handed)


def _added(method: str, call: ast.Call) -> ast.expr | None:
    """What ``words.append(s)`` adds (``s``), what ``extend``/``__iadd__`` add (their list: a
    list of text is text as each of its items is); None for the rest (``insert``,
    ``__setitem__``)."""
    if call.keywords or len(call.args) != 1 or method not in ("append", "extend", "__iadd__"):
        return None
    return call.args[0]


def _reads_only(call: ast.Call) -> bool:
    """A call that only reads the list (``random.choice(xs)``, ``len(xs)``)."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id in ("len", "print", "sorted", "enumerate", "zip", "str", "list", "tuple")
    return isinstance(func, ast.Attribute) and func.attr in ("choice", "sample", "join")


def evidently_text(
    expr: ast.expr,
    scope: PortScope | None,
    facts: PortFacts | None,
    callers: CallerKinds | None = None,
) -> bool:
    """Whether ``expr`` is, by the text alone, a string or a list/tuple of strings (any doubt:
    False). Names count when every binding that may reach the read is one; with ``callers``,
    a parameter's binding is what the file's call sites hand it."""
    return _Text(scope, facts, callers)(expr)
