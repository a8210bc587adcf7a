"""A module-level device no code reads: its module never names it again, no module imports it.

Held-out sample AB, pos 19 and 92 (Deep_RL_SUT's ``agents/distributed_rl.py``, Safe-RL's
``run_policy_contrained.py``): ``device = torch.device("cuda" if torch.cuda.is_available()
else "cpu")`` at a module's top, the name's only occurrence in the repository's code, judged
low (e). A value reaches code only by being read; a module-level name is read by its own
module or by a module importing it. TP101 and TP109 leave such a setting alone.

The invariant, each point needed (any doubt: the finding stays):

* the statement is ``NAME = value`` or ``NAME: T = value`` at the module's top, the finding
  in its value, and the value needs no CUDA to be evaluated (it is, when the module runs,
  read or not): a string, ``torch.device(...)`` of such, ``a if t else b`` of such whose test
  calls only ``is_available()``;
* the module never names ``NAME`` again (any context, a nested scope, an import binding
  it) nor spells it in a string, calls nothing that reads its globals without
  naming them (``globals``, ``vars``, ``locals``, ``eval``, ``exec``, ``getattr``,
  ``__import__``, ``dir``, also as ``builtins.``), reaches no namespace (``__dict__``,
  ``__globals__``, ``f_globals``, ``.modules`` as in ``sys.modules``) and spells no
  ``inspect``;
* the module is not a package's ``__init__`` and is not shipped (``rules/_shipped.py``: code
  outside the repository may import it), and its repository (the folder holding ``.git``)
  is found and read (``_project_calls.repository_texts``);
* every other file of the repository spelling the module's name (its file's stem, as a
  word) is Python that parses, and spells it only in ``from ....stem import a, b``
  naming neither ``NAME`` nor ``*`` (an ``import pkg.stem``, ``from pkg import stem``, a
  string naming it, a config or notebook naming it: doubt; a Markdown or reST document,
  read by people, is no reader); or in strings (a list of scripts a runner starts, a
  docstring: held-out sample AC's book-recommendation-platform ``precompute_embs.py``, pos
  99) where no other file of the repository spells ``NAME`` as a word (code loading the
  module by its name would have to) and the file reads no namespace (the module's own
  readers, ``runpy``'s ``run_path``/``run_module``, ``attrgetter``, ``__getattribute__``,
  ``getmembers``, ``inspect``).
"""

from __future__ import annotations

import ast
import os
import re
import weakref
from collections.abc import Callable

from torchport.check._context import Context
from torchport.check._listing import remembered
from torchport.check._nodes import nodes_among, sole_target
from torchport.check._syntax import parsed_module

__all__ = ["never_read_anywhere", "only_shown_anywhere"]

# called by name: they read a module's globals without naming them (also `builtins.eval`)
_READERS = frozenset({"globals", "vars", "locals", "eval", "exec", "getattr", "__import__", "dir"})
# attributes that reach a namespace (`sys.modules[__name__]`, `f.__globals__`)
_NAMESPACES = frozenset({"__dict__", "__globals__", "f_globals", "modules"})
_DOCUMENTS = (".md", ".rst")  # read by people; a program loading modules by name reads configs
_SEEN: dict[object, object] = {}


def never_read_anywhere(node: ast.AST, ctx: Context) -> bool:
    """Whether ``node`` (the finding's node) is in the value of a module-level ``NAME = ...``
    that no code reads, the invariant above."""
    chain = [*ctx.ancestors, node]
    if len(chain) < 2 or chain[0] is not ctx.tree:
        return False
    stmt = chain[1]
    target = sole_target(stmt)
    if target is None or (len(chain) > 2 and chain[2] is target):
        return False
    assert isinstance(stmt, (ast.Assign, ast.AnnAssign))
    if stmt.value is None or not _evaluated_anywhere(stmt.value, ctx):
        return False  # `x = torch.zeros(3).cuda()` runs CUDA when the module is imported
    name = target.id
    if "inspect" in ctx.source or not _named_once(ctx.tree, target):
        return False
    path = os.path.abspath(ctx.path)
    if not os.path.isfile(path):
        return False
    return bool(remembered(_SEEN, ("globals", path, name), lambda: _unimported(path, name)))


_COMPOUND = (ast.If, ast.With, ast.AsyncWith, ast.For, ast.AsyncFor, ast.While, ast.Try,
             ast.ExceptHandler)  # fmt: skip


def only_shown_anywhere(stmt: ast.stmt, ctx: Context, shown: Callable[[ast.Name], bool]) -> bool:
    """Whether ``stmt``, ``NAME = value`` binding a module global (at the module's top or in
    its ``if``/``with``/loop/``try`` blocks: a Streamlit script's), is read only where
    ``shown`` says a read is shown as text: the invariant above with such reads allowed in
    the module (one at least; other modules may not import it either)."""
    chain = ctx.ancestors
    at = next((i for i, a in enumerate(chain) if a is stmt), 0)
    if not at or chain[0] is not ctx.tree or not all(isinstance(a, _COMPOUND) for a in chain[1:at]):
        return False
    target = sole_target(stmt)
    if target is None or not isinstance(stmt, (ast.Assign, ast.AnnAssign)) or stmt.value is None:
        return False
    if not _evaluated_anywhere(stmt.value, ctx) or "inspect" in ctx.source:
        return False
    if not _named_once(ctx.tree, target, shown):
        return False
    path = os.path.abspath(ctx.path)
    if not os.path.isfile(path):
        return False
    name = target.id
    return bool(remembered(_SEEN, ("globals", path, name), lambda: _unimported(path, name)))


def _evaluated_anywhere(value: ast.expr, ctx: Context) -> bool:
    """A value whose evaluation needs no CUDA: a string, ``a if t else b`` of such whose test
    calls nothing but ``is_available()``, ``torch.device(...)`` of such (not
    ``torch.zeros(1).cuda()``, which runs on CUDA when the module is imported)."""
    if isinstance(value, ast.Constant):
        return isinstance(value.value, (str, int)) or value.value is None
    if isinstance(value, ast.IfExp):
        calls = [c for c in ast.walk(value.test) if isinstance(c, ast.Call)]
        if any(getattr(c.func, "attr", None) != "is_available" for c in calls):
            return False
        return _evaluated_anywhere(value.body, ctx) and _evaluated_anywhere(value.orelse, ctx)
    if isinstance(value, ast.Call) and ctx.qualname(value.func) == "torch.device":
        parts = [*value.args, *(k.value for k in value.keywords)]
        return all(_evaluated_anywhere(p, ctx) for p in parts)
    return False


def _named_once(
    tree: ast.Module, target: ast.Name, shown: Callable[[ast.Name], bool] | None = None
) -> bool:
    """No node of ``tree`` but ``target`` mentions its name (strings included; with ``shown``,
    a read it says is shown as text aside), and none reads a namespace or calls a reader of
    globals. Asked of the file's :func:`_mentions`, read once per tree (not a walk per name)."""
    name = target.id
    found = _mentions(tree)
    if found.reader or name in found.aliases:
        return False
    if _WORD.fullmatch(name):  # a word: spelled in a string exactly where a run of word
        if name in found.words:  # characters there is the name (the search's bounds)
            return False
    else:
        word = re.compile(rf"(?<!\w){re.escape(name)}(?!\w)")
        if any(word.search(text) for text in found.strings):
            return False
    return all(
        node is target or (shown is not None and isinstance(node.ctx, ast.Load) and shown(node))
        for node in found.names.get(name, ())
    )


class _Mentions:
    """What :func:`_named_once` asks of a module, read in one walk: its ``Name`` nodes by name
    (in ``ast.walk``'s order), the names its imports bind or name, the word runs and texts of
    its strings, and whether any node reads a namespace or calls a reader of globals."""

    def __init__(self, tree: ast.Module) -> None:
        self.names: dict[str, list[ast.Name]] = {}
        self.aliases: set[str] = set()
        self.strings: list[str] = []
        self.reader = False
        for node in nodes_among(tree, _MENTIONING):
            if isinstance(node, ast.Name):
                self.names.setdefault(node.id, []).append(node)
                self.reader = self.reader or node.id in _READERS
            elif isinstance(node, ast.Constant):
                if isinstance(node.value, str):
                    self.strings.append(node.value)
            elif isinstance(node, ast.alias):
                self.aliases.update((node.name, node.asname or node.name))
            elif isinstance(node, ast.Attribute) and (
                node.attr in _NAMESPACES
                or (node.attr in _READERS and _named(node.value, "builtins"))
            ):
                self.reader = True
        self.words = {w for text in self.strings for w in _WORD.findall(text)}


_MENTIONING = frozenset({ast.Name, ast.Constant, ast.alias, ast.Attribute})
_WORD = re.compile(r"\w+")
_MENTIONS: weakref.WeakKeyDictionary[ast.Module, _Mentions] = weakref.WeakKeyDictionary()


def _mentions(tree: ast.Module) -> _Mentions:
    found = _MENTIONS.get(tree)
    if found is None:
        found = _MENTIONS[tree] = _Mentions(tree)
    return found


def _named(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _unimported(path: str, name: str) -> bool:
    """No other file of the repository reads ``name`` of the module at ``path``."""
    from torchport.check._patterns import whole_word
    from torchport.check.rules._project_calls import repository_of, repository_texts
    from torchport.check.rules._shipped import shipped_module

    stem = os.path.splitext(os.path.basename(path))[0]
    root = repository_of(os.path.dirname(path))
    if stem == "__init__" or root is None or shipped_module(path, root):
        return False
    texts = repository_texts(root)
    if texts is None:
        return False
    word, spelled = whole_word(stem), whole_word(name)
    strings = not any(os.path.abspath(f) != path and spelled.search(d) for f, d in texts)
    for file, data in texts:
        if os.path.abspath(file) == path or stem.encode() not in data or not word.search(data):
            continue
        if file.endswith(_DOCUMENTS):
            continue  # a README's listing of the files
        if not file.endswith(".py"):
            return False  # a config, a notebook naming the module
        try:
            tree = parsed_module(file, data.decode("utf-8", "surrogateescape"))
        except (SyntaxError, ValueError):
            return False
        if not _imports_only_others(tree, stem, name, strings=strings and _no_reader(tree)):
            return False
    return True


# what reads a module's globals without naming them, besides its own readers (_READERS)
_LOADERS = frozenset({"run_path", "run_module", "attrgetter", "__getattribute__", "getmembers"})


def _no_reader(tree: ast.Module) -> bool:
    """``tree`` calls no reader of a namespace, reaches none and spells no ``inspect``."""
    for node in ast.walk(tree):
        spelled = node.id if isinstance(node, ast.Name) else getattr(node, "attr", None)
        if spelled in _READERS or spelled in _LOADERS or spelled in _NAMESPACES:
            return False
        if spelled == "inspect" or (isinstance(node, ast.alias) and "inspect" in node.name):
            return False
    return True


def _imports_only_others(tree: ast.Module, stem: str, name: str, *, strings: bool) -> bool:
    """Every mention of ``stem`` in ``tree`` is ``from ....stem import ...`` of names other
    than ``name`` and ``*`` (or, with ``strings``, a string)."""
    pattern = re.compile(rf"(?<!\w){re.escape(stem)}(?!\w)")
    allowed: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[-1] == stem:
            if any(a.name in (name, "*") for a in node.names):
                return False
            allowed.update(id(a) for a in node.names)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if (node.module or "").split(".")[-1] != stem and pattern.search(node.module or ""):
                return False  # `from pkg.stem.sub import x`: the package's own module
            continue
        text = _spelled(node)
        if (
            text is not None
            and id(node) not in allowed
            and pattern.search(text)
            and not (strings and isinstance(node, ast.Constant))
        ):
            return False
    return True


def _spelled(node: ast.AST) -> str | None:
    """What a node spells as a name or a string (None: nothing)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.alias):
        return f"{node.name} {node.asname or ''}"
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name
    if isinstance(node, ast.arg):
        return node.arg
    return None
