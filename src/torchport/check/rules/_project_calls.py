"""Whether every call of a public function of a repository passes one of its parameters.

TP101 leaves ``def load(path, device="cuda")`` alone when the default never runs
(``rules/_passed_defaults.py``). Within one file that is decided for a private or nested
function; a public one (``load``, a class ``Renderer``) is decided here, over its whole
repository. The invariant: **the default is dropped only if every call of the function
anywhere in the repository passes the argument explicitly, there is at least one, and the
function does not escape** (reach code that may call it without the argument). Any doubt
keeps the finding. A module that may be installed with its project (a ``setup.py``,
``pyproject.toml`` or ``setup.cfg`` in its folder or above it, to the top, but a ``setup.py``
shown to ship none of it: ``rules/_shipped.py``) is a library's:
code outside the repository may import and call it (judged real in samples A-T: Kilosort's
``run_matching(..., device=torch.device("cuda"))``, PARL's ``evaluate_episode_rtg``), so its
defaults stay reported.

The repository is the tree under the nearest folder above the file holding ``.git``
(none: the callers are unknown, the finding stays). Every text file in it (not in a hidden,
cache or virtual-environment folder, nor the top's ``build``/``dist``/``venv``; binary files
and non-Python files over ``_BIGGEST`` bytes aside) is searched for the name as a word. Each
Python file naming it is parsed and every mention of the name must be one of:

* the callee of a call passing the argument by keyword, or at its position with no
  ``*args`` at or before it (``**kwargs`` may not hold it): ``f(x, device=d)``,
  ``mod.f(x, d)``, ``self.f(...)`` (any receiver: a call of another ``f`` is asked the same,
  which can only keep a finding);
* ``functools.partial(f, ...)`` binding the argument the same way (every call of it then
  passes it);
* ``from m import f`` (or ``as g``, then every mention of ``g`` in that file obeys these
  rules);
* a definition of another function or class of the same name, an annotation, the type in
  ``isinstance``/``issubclass`` (none calls it), a keyword argument's name.

The defining module's own ``__all__`` (a list or tuple of strings bound or ``+=`` at its top)
is no escape where a call must pass the parameter (not to :func:`never_called`): it says what
``from mod import *`` binds, and a file so importing it mentions the name where it calls it,
which is asked as above (held-out sample AD, pos 85 and 89: the fake-video refactor lists
``train_residual_head`` and ``evaluate_checkpoint`` in theirs).
Anything else escapes and keeps the finding: the name as a value (``return f``, ``map(f, xs)``,
``h = f``, a subclass ``class B(F)``, a registry ``{"f": f}``), a string spelling it (another
module's ``__all__``, ``getattr(m, "f")``, ``"pkg.mod.f"``), a mention in a file that is not
Python (a YAML config building it by name, a notebook, a README showing a call), a Python file
that does not parse or that calls ``eval``/``exec``, and the module itself used as a value
anywhere (``getattr(mod, name)``, ``vars(mod)``). The file defining it must define it once at
module level and call no ``eval``/``exec``/``globals``/``locals``/``vars`` (but ``vars(args)``
of ``args = parser.parse_args(...)``, ``parser = argparse.ArgumentParser(...)``, each bound no
other way: an ``argparse`` namespace, none of the module's names). Not seen, so not kept: a
call made from a string assembled at run time or given from outside the repository (a
command-line ``--model Renderer`` read by ``getattr(importlib.import_module( m), name)``), a
caller behind a symbolic link to a folder.

The repository's texts are read once per run (and kept with the paths they rest on for
the check cache: ``check/_listing.remembered``); a repository of more than ``_MOST_FILES``
files is not read (the finding stays).
"""

from __future__ import annotations

import ast
import os
import re

from torchport.check._listing import note, remembered
from torchport.check._patterns import whole_word
from torchport.check._syntax import parsed_module
from torchport.check.rules._shipped import shipped_module

__all__ = [
    "INTROSPECTS",
    "every_call_passes",
    "file_in_repository",
    "installed_module",
    "module_as_value",
    "never_called",
    "repository_of",
    "repository_texts",
    "whole_word",
]

_MOST_FILES = 20_000
_BIGGEST = 4 * 1024 * 1024
_ABOVE = 12  # folders looked up for `.git`
_SKIPPED = frozenset({"node_modules", "__pycache__", "site-packages"})
_TOP_SKIPPED = frozenset({"build", "dist", "venv"})
_MARKERS = ("setup.py", "pyproject.toml", "setup.cfg")
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
# what reaches a module's names by a string it reads at run time (asked where a file
# names the module but not the function)
INTROSPECTS = (b"getattr", b"vars", b"__dict__", b"getmembers", b"dir(")
_SEEN: dict[object, object] = {}  # remembered answers: a repository's texts, a name's verdict
_SEEN_KINDS = (ast.Name, ast.Attribute, ast.Global, ast.Nonlocal, ast.Constant)
_INTROSPECTION = frozenset({"eval", "exec", "globals", "locals", "vars"})


def every_call_passes(
    path: str, name: str, *, param: str, position: int | None, by_keyword: bool
) -> bool:
    """Whether every call of the module-level ``name`` of the file at ``path`` across its
    repository passes ``param`` (by keyword when ``by_keyword``, or at ``position``), there
    is one, and ``name`` does not escape (the module docstring)."""
    if not os.path.isfile(path):
        return False
    here = os.path.dirname(os.path.abspath(path))
    root = repository_of(here)
    if root is None:
        return False
    key = ("calls", os.path.abspath(path), name, param, position, by_keyword)
    answer = remembered(
        _SEEN, key, lambda: _decide(root, os.path.abspath(path), name, param, position, by_keyword)
    )
    return bool(answer)


def never_called(path: str, name: str) -> bool:
    """Whether the module-level function ``name`` of the file at ``path`` is called nowhere in
    its repository and does not escape: the same reading as :func:`every_call_passes`, where
    any call of the name (of any receiver) is a call, and no call may be found. Any doubt
    (no repository, a library's module, a mention that is no call but may reach one): False.
    The port leaves such a function's parameters unreported (``port/_batches.py``): nothing
    ever hands them a value."""
    found = file_in_repository(path)
    if found is None:
        return False
    root, full = found
    key = ("never", full, name)
    # no parameter is passed by any call (`param=""`, no position): every call escapes
    answer = remembered(_SEEN, key, lambda: _count(root, full, name, "", None, False) == 0)
    return bool(answer)


def module_as_value(tree: ast.Module, name: str, stem: str) -> bool:
    """Whether ``tree`` uses the module ``stem`` as a value (``getattr(mod, name)``,
    ``vars(mod)``) or mentions ``name`` other than as :func:`every_call_passes` allows."""
    return _Uses(name, "", None, False, stem).count(tree, own=False) is None


def file_in_repository(path: str) -> tuple[str, str] | None:
    """``(its repository's root, its absolute path)`` of a file; None outside a repository."""
    if not os.path.isfile(path):
        return None
    full = os.path.abspath(path)
    root = repository_of(os.path.dirname(full))
    return None if root is None else (root, full)


def repository_of(folder: str) -> str | None:
    """The nearest folder at or above ``folder`` holding ``.git`` (None: none near)."""
    for _ in range(_ABOVE):
        note(os.path.join(folder, ".git"))
        if os.path.exists(os.path.join(folder, ".git")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent
    return None


def repository_texts(root: str) -> tuple[tuple[str, bytes], ...] | None:
    """(path, bytes) of each text file of the repository at ``root`` (the module docstring's:
    hidden, cache and virtual-environment folders aside), read once per run; None past
    ``_MOST_FILES`` files or when one cannot be read."""
    texts = remembered(_SEEN, ("texts", root), lambda: _texts(root))
    return texts if isinstance(texts, tuple) else None


def _texts(root: str) -> tuple[tuple[str, bytes], ...] | None:
    """(path, bytes) of each text file under ``root``; None past the limit or unreadable."""
    found: list[tuple[str, bytes]] = []
    count = 0
    for here, folders, names in os.walk(root):
        note(here)
        top = here == root  # `build`, `dist`: a packaging tool's copies, at the top only
        folders[:] = sorted(
            f
            for f in folders
            if not f.startswith(".")
            and f not in _SKIPPED
            and not (top and f in _TOP_SKIPPED)
            and not os.path.isfile(os.path.join(here, f, "pyvenv.cfg"))
        )
        for file in sorted(names):
            full = os.path.join(here, file)
            count += 1
            if count > _MOST_FILES:
                return None
            note(full)
            try:
                if os.path.getsize(full) > _BIGGEST and not file.endswith(".py"):
                    continue
                with open(full, "rb") as handle:
                    data = handle.read()
            except OSError:
                return None
            if b"\0" not in data[:8192]:
                found.append((full, data))
    return tuple(found)


def _decide(
    root: str, path: str, name: str, param: str, position: int | None, by_keyword: bool
) -> bool:
    calls = _count(root, path, name, param, position, by_keyword)
    return calls is not None and calls > 0


def _count(
    root: str, path: str, name: str, param: str, position: int | None, by_keyword: bool
) -> int | None:
    """The calls of ``name`` passing ``param`` across the repository at ``root``; None when
    a use of it escapes, or the file at ``path`` is not seen defining it (the docstring)."""
    stem = os.path.splitext(os.path.basename(path))[0]
    if stem == "__init__":
        return None  # a package's own names: imported by the package's name
    if shipped_module(path, root):
        return None  # importable once installed: code outside the repository may call it
    # (both asked before the repository is read: neither answer depends on its texts)
    texts = repository_texts(root)
    if texts is None:
        return None
    word, module_word = whole_word(name), whole_word(stem)
    needle, module_needle = name.encode(), stem.encode()
    calls, own = 0, False
    for file, data in texts:
        # `in` first: a search of a pattern opening with a look-behind tries every position
        named = needle in data and word.search(data) is not None
        if not named and not (
            module_needle in data
            and any(w in data for w in INTROSPECTS)
            and module_word.search(data) is not None
        ):
            continue
        if not file.endswith(".py"):
            if named:
                return None  # a config, a notebook, a document naming it
            continue
        try:
            tree = parsed_module(file, data.decode("utf-8", "surrogateescape"))
        except (SyntaxError, ValueError):
            return None
        uses = _Uses(name, param, position, by_keyword, stem)
        found = uses.count(tree, own=file == path)
        if found is None:
            return None
        calls += found
        own = own or file == path
    return calls if own else None


def installed_module(folder: str, root: str) -> bool:
    """Whether a module of ``folder`` may be installed with its project: a packaging file
    (``setup.py``, ``pyproject.toml``, ``setup.cfg``) in its folder or one above it, to the
    top. Which files a packaging file ships (``find_packages()``, ``py_modules``, a ``src``
    layout, scripts) is not read: every file below one counts."""
    while True:
        for marker in _MARKERS:
            note(os.path.join(folder, marker))
            if os.path.isfile(os.path.join(folder, marker)):
                return True
        if folder == root or os.path.dirname(folder) == folder:
            return False
        folder = os.path.dirname(folder)


class _Uses:
    """Counts the calls of ``name`` passing ``param`` in one module (None: an escape)."""

    def __init__(
        self, name: str, param: str, position: int | None, by_keyword: bool, stem: str
    ) -> None:
        self.name, self.param, self.position = name, param, position
        self.by_keyword, self.stem = by_keyword, stem
        self.spelled = re.compile(r"(?:[\w.]*[.:])?" + re.escape(name))

    def count(self, tree: ast.Module, *, own: bool) -> int | None:
        # One walk: each node's parent (and the field holding it), and what the rules read.
        parents: dict[int, tuple[ast.AST, str]] = {}
        aliases: list[tuple[ast.alias, ast.AST]] = []
        seen: list[ast.AST] = []  # names, attributes, `global`s, strings
        called: set[str] = set()  # the plain names called (`eval`, `globals`, ...)
        vars_of: set[str] = set()  # the names `vars(name)` reads
        stack: list[ast.AST] = [tree]
        while stack:
            node = stack.pop()
            for field, value in ast.iter_fields(node):
                if isinstance(value, list):
                    for child in value:
                        if isinstance(child, ast.AST):
                            parents[id(child)] = (node, field)
                            stack.append(child)
                elif isinstance(value, ast.AST):
                    parents[id(value)] = (node, field)
                    stack.append(value)
            if isinstance(node, ast.alias):
                aliases.append((node, parents[id(node)][0]))
            elif isinstance(node, _SEEN_KINDS):
                seen.append(node)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                if _vars_of_name(node):  # `vars(args)`: asked below
                    vars_of.add(node.args[0].id)  # type: ignore[attr-defined]
                else:
                    called.add(node.func.id)
        if own and any(not _parsed_arguments(tree, name) for name in vars_of):
            called.add("vars")  # (asked of the defining module only: `_own_module`)
        self.parents = parents
        # (asked only where a call must pass the parameter: to `never_called`, a name listed
        # for export with no call anywhere is what the module offers outside, not dead code)
        self.listed = _exported(tree) if own and self.param else set()
        if own and not self._own_module(tree, called):
            return None
        if called & {"eval", "exec"}:
            return None  # code in a string (`exec`, `eval`) may call it
        names = {self.name}
        modules: set[str] = set()
        for alias, statement in aliases:
            local = alias.asname or alias.name
            if alias.name == self.name and isinstance(statement, ast.ImportFrom):
                names.add(local)
            elif alias.name.rpartition(".")[2] == self.stem:
                modules.add(local.partition(".")[0] if alias.asname is None else local)
        calls = 0
        for node in seen:
            found = self._verdict(node, names, modules)
            if found is None:
                return None
            calls += found
        return calls

    def _own_module(self, tree: ast.Module, called: set[str]) -> bool:
        """Defined once at module level; no introspection of the module's names."""
        defined = [
            s
            for s in tree.body
            if isinstance(s, (*_FUNCTIONS, ast.ClassDef)) and s.name == self.name
        ]
        return len(defined) == 1 and not called & _INTROSPECTION

    def _verdict(self, node: ast.AST, names: set[str], modules: set[str]) -> int | None:
        """1: a passing call of ``node``; 0: no use; None: an escape."""
        if isinstance(node, ast.Name) and node.id in modules:
            parent = self.parents.get(id(node), (None, ""))[0]
            if isinstance(parent, ast.Attribute) or isinstance(node.ctx, ast.Store):
                return 0  # `mod.f` (asked at the attribute), or a rebinding (a local)
            return None  # the module as a value: `getattr(mod, name)`, `vars(mod)`
        if isinstance(node, ast.Name) and node.id in names:
            return self._mention(node)
        if isinstance(node, ast.Attribute) and node.attr in names:
            return self._mention(node)
        if isinstance(node, (ast.Global, ast.Nonlocal)) and names & set(node.names):
            return None
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and self.spelled.fullmatch(node.value)
            and not self._annotation(node)
            and id(node) not in self.listed
        ):
            return None  # `"f"`, `"pkg.mod.f"`: reached by a string
        return 0

    def _mention(self, node: ast.Name | ast.Attribute) -> int | None:
        parent, field = self.parents.get(id(node), (None, ""))
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            return None  # rebound or deleted
        if isinstance(parent, ast.Call) and field == "func":
            return 1 if _passes(parent.args, parent.keywords, self) else None
        if isinstance(parent, ast.Call) and field == "args" and parent.args[0] is node:
            callee = parent.func
            tail = callee.attr if isinstance(callee, ast.Attribute) else getattr(callee, "id", "")
            if tail == "partial":
                return 1 if _passes(parent.args[1:], parent.keywords, self) else None
            if tail in ("isinstance", "issubclass"):
                return None
        if isinstance(parent, ast.Call) and field == "args" and len(parent.args) == 2:
            tail = getattr(parent.func, "id", "")
            if tail in ("isinstance", "issubclass") and parent.args[1] is node:
                return 0  # the type tested: no call
        return 0 if self._annotation(node) else None

    def _annotation(self, node: ast.AST) -> bool:
        while True:
            found = self.parents.get(id(node))
            if found is None:
                return False
            node, field = found
            if field in ("annotation", "returns"):
                return True
            if isinstance(node, (ast.stmt, ast.Lambda)):
                return False


def _exported(tree: ast.Module) -> set[int]:
    """The strings of the module's own ``__all__`` (``__all__ = [...]``, ``+=``, at its top):
    they name what ``from mod import *`` binds, and such an importer's every mention of the
    name is asked like any other (held-out sample AD, pos 85 and 89)."""
    found: set[int] = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target: ast.expr = stmt.targets[0]
        elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)) and stmt.value is not None:
            target = stmt.target
        else:
            continue
        value = stmt.value
        if getattr(target, "id", None) == "__all__" and isinstance(value, (ast.List, ast.Tuple)):
            found |= {id(e) for e in value.elts if isinstance(e, ast.Constant)}
    return found


def _vars_of_name(call: ast.Call) -> bool:
    """``vars(name)``: one plain name, no keywords."""
    return (
        getattr(call.func, "id", None) == "vars"
        and len(call.args) == 1
        and isinstance(call.args[0], ast.Name)
        and not call.keywords
    )


def _parsed_arguments(tree: ast.Module, name: str) -> bool:
    """Whether ``name`` is bound in the module only as ``name = parser.parse_args(...)``, with
    ``parser`` bound only as ``parser = argparse.ArgumentParser(...)`` after ``import argparse``
    (``argparse`` bound no other way): ``vars(name)`` then reads an ``argparse.Namespace``,
    never the module's names (``run_pplm_example(**vars(args))``, sample V)."""
    values = _bindings(tree, name)
    if not values or not all(
        isinstance(v, ast.Call)
        and isinstance(v.func, ast.Attribute)
        and v.func.attr == "parse_args"
        and isinstance(v.func.value, ast.Name)
        for v in values
    ):
        return False
    parsers = {v.func.value.id for v in values}  # type: ignore[attr-defined]
    for parser in parsers:
        made = _bindings(tree, parser)
        if not made or not all(
            isinstance(v, ast.Call)
            and isinstance(v.func, ast.Attribute)
            and v.func.attr == "ArgumentParser"
            and getattr(v.func.value, "id", None) == "argparse"
            for v in made
        ):
            return False
    imported = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Import) and any(a.name == "argparse" for a in n.names)
    ]
    return bool(imported) and _bindings(tree, "argparse", imports=True) == []


def _bindings(tree: ast.Module, name: str, *, imports: bool = False) -> list[ast.expr] | None:
    """The values ``name`` is bound to by ``name = value`` anywhere in the module; None when
    it is bound any other way (a parameter, ``for``, ``with``, ``global``, an import but a
    plain ``import name`` when ``imports``, a definition, a tuple target, ``+=``, ...)."""
    values: list[ast.expr] = []
    assigned: set[int] = set()  # the targets of `name = value`
    stored: list[ast.Name] = []  # every other store or `del` of `name`, asked at the end
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            if len(node.targets) != 1:
                return None
            values.append(node.value)
            assigned.add(id(node.targets[0]))
            continue
        if isinstance(node, ast.Name):
            other = False
            if node.id == name and not isinstance(node.ctx, ast.Load):
                stored.append(node)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            other = any(_imports(node, alias, name, imports) for alias in node.names)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            other = name in node.names
        elif isinstance(node, ast.alias):
            other = False  # asked at its import, above
        else:  # a parameter, a definition, `except E as name`, a `match` capture
            other = getattr(node, "arg" if isinstance(node, ast.arg) else "name", None) == name
        if other:
            return None
    if any(id(n) not in assigned for n in stored):
        return None  # `for name in ...`, `name += ...`, `(name := ...)`, `del name`, ...
    return values


def _imports(node: ast.Import | ast.ImportFrom, alias: ast.alias, name: str, plain: bool) -> bool:
    """Whether ``alias`` binds ``name`` (a plain ``import name`` aside when ``plain``)."""
    whole = isinstance(node, ast.Import) and alias.asname is None
    bound = alias.name.partition(".")[0] if whole else alias.asname or alias.name
    return bound == name and not (plain and whole and alias.name == name)


def _passes(args: list[ast.expr], keywords: list[ast.keyword], uses: _Uses) -> bool:
    if uses.by_keyword and any(kw.arg == uses.param for kw in keywords):
        return True
    position = uses.position
    if position is None or len(args) <= position:
        return False
    return not any(isinstance(a, ast.Starred) for a in args[: position + 1])
