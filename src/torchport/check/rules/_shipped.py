"""Whether a module of a repository may be installed with it: what its ``setup.py`` ships.

``rules/_project_calls.py`` reports a public function's CUDA default whatever its calls when
its module may be installed (code outside the repository may import and call it). A
packaging file (``setup.py``, ``pyproject.toml``, ``setup.cfg``) in the module's folder or one
above it makes it so, unless that folder holds a ``setup.py`` whose ``setup(...)`` call names
what it ships, none of it holds the module, and the files beside it leave that to it (below;
sample V, judged
low: LoRA's ``examples/NLU/examples/research_projects/pplm/run_pplm.py`` and
``longform-qa/eli5_utils.py``, below a ``setup.py`` shipping ``find_packages()`` at the top,
whose ``examples`` has no ``__init__.py``, and one shipping ``find_packages("src")``).

Read so (any doubt: the module may be installed):

* ``setup`` is imported from ``setuptools`` or ``distutils.core`` (or called as
  ``setuptools.setup``) and called once, with keywords only and no ``**``;
* ``packages=`` is given (without it setuptools discovers packages itself), as a list or
  tuple of strings (each ships its folder and everything below it) or as
  ``find_packages(where)``/``setuptools.find_packages(...)`` with ``where`` a string or
  absent (setuptools' ``PackageFinder`` ships each folder below ``where`` reached through
  folders holding an ``__init__.py``, whose names hold no dot; counted here: everything
  below such a folder right below ``where``, since a folder below a package may ride
  along as package data; ``include`` and ``exclude`` are not read, so everything it could
  find counts);
  ``find_namespace_packages`` ships every folder below ``where``;
* ``package_dir=`` is absent or ``{"": "folder"}`` (the packages' names then rest under that
  folder); ``py_modules=`` is absent or a list or tuple of strings (each ships its file);
  ``data_files=`` is absent.

A found package's folder is taken both under ``where`` and under ``package_dir``'s folder
(the two may differ; both count). A ``setup.cfg`` alone keeps the module
installable (not read); a ``pyproject.toml`` alone is read by ``rules/_pyproject_packages.py``
(its ``[tool.setuptools]``). Beside a ``setup.py`` each is read only to see that it leaves
what ships to it (LoRA's ``examples/NLU`` has ``[tool.black]`` and ``[isort]``/``[flake8]``):
a ``pyproject.toml`` with no ``[project]`` table, no ``[tool.setuptools]`` and a setuptools
build backend (or none), a ``setup.cfg`` with no ``[metadata]`` or ``[options...]`` section
(where setuptools' declarative configuration reads packages); otherwise, or unreadable, the
module may be installed.
"""

from __future__ import annotations

import ast
import os

from torchport.check._listing import note, remembered
from torchport.check.rules._pyproject_packages import (
    _SETUPTOOLS,
    _below,
    _found,
    pyproject_may_ship,
    setup_cfg_packages,
)

__all__ = ["shipped_module"]

_MARKERS = ("setup.py", "pyproject.toml", "setup.cfg")
_SETUPS = frozenset({"setuptools", "distutils.core"})
_FINDERS = frozenset({"find_packages", "find_namespace_packages"})
_WANTED = _FINDERS | {"setup"}
_KNOWN = frozenset({"packages", "package_dir", "py_modules", "data_files"})
_SEEN: dict[object, object] = {}  # remembered answers, per setup.py and module


def shipped_module(path: str, root: str) -> bool:
    """Whether the module at ``path`` (in the repository at ``root``) may be installed with
    its project: a packaging file in its folder or above it, to ``root``, that is not a
    ``setup.py`` shown to ship none of it (the module docstring)."""
    path = os.path.abspath(path)
    folder = os.path.dirname(path)
    while True:
        found = []
        for marker in _MARKERS:
            note(os.path.join(folder, marker))
            if os.path.isfile(os.path.join(folder, marker)):
                found.append(marker)
        if found and _ships(folder, path, found):
            return True
        if folder == root or os.path.dirname(folder) == folder:
            return False
        folder = os.path.dirname(folder)


def _ships(folder: str, path: str, found: list[str]) -> bool:
    """Whether the packaging files ``found`` in ``folder`` may ship the module at ``path``:
    a ``setup.py``'s arguments, else a ``pyproject.toml``'s ``[tool.setuptools]``, else (a
    ``setup.cfg`` alone, not read) it may."""
    if "setup.py" in found:
        return bool(remembered(_SEEN, (folder, path), lambda: _may_ship(folder, path)))
    if "pyproject.toml" in found:
        key = ("pyproject", folder, path)
        return bool(remembered(_SEEN, key, lambda: pyproject_may_ship(folder, path)))
    return True


def _may_ship(folder: str, path: str) -> bool:
    """Whether the ``setup.py`` in ``folder`` (and the files beside it) may ship the module at
    ``path``."""
    if not _no_packaging(folder):
        return True
    try:
        with open(os.path.join(folder, "setup.py"), "rb") as handle:
            tree = ast.parse(handle.read())
    except (OSError, SyntaxError, ValueError):
        return True
    names = _setuptools_names(tree)
    call = None if names is None else _setup_call(tree, names)
    if call is None or names is None:
        return True
    given = {k.arg: k.value for k in call.keywords if k.arg in _KNOWN}
    if "data_files" in given or "packages" not in given:
        return True
    base = _package_base(folder, given.get("package_dir"))
    modules = _modules(base, given.get("py_modules"))
    if base is None or modules is None or path in modules:
        return True
    return _in_packages(folder, base, given["packages"], path, names)


def _no_packaging(folder: str) -> bool:
    """Whether a ``pyproject.toml`` and a ``setup.cfg`` beside the ``setup.py``, if there,
    leave what ships to it: no ``[project]`` table, no ``[tool.setuptools]``, a setuptools
    backend or none; no ``[metadata]`` or ``[options...]`` section (other tools' settings:
    ``[tool.black]``, ``[isort]``, ``[flake8]``)."""
    import configparser  # here: `tomllib` imports `typing` (tests/check/test_startup.py)
    import tomllib

    pyproject = os.path.join(folder, "pyproject.toml")
    try:
        if os.path.isfile(pyproject):
            with open(pyproject, "rb") as handle:
                table = tomllib.load(handle)
            backend = table.get("build-system", {}).get("build-backend", _SETUPTOOLS[0])
            tool = table.get("tool", {})
            if "project" in table or backend not in _SETUPTOOLS or "setuptools" in tool:
                return False
        if setup_cfg_packages(folder):
            return False
    except (OSError, ValueError, AttributeError, configparser.Error):
        return False  # unreadable, not TOML (`tomllib.TOMLDecodeError` is a `ValueError`)
    return True


def _setuptools_names(tree: ast.Module) -> dict[str, str] | None:
    """Each local name ``setuptools``' (or ``distutils.core``'s) names are bound to by an
    import (``from setuptools import setup as s`` -> ``{"s": "setup"}``, ``import setuptools``
    -> ``{"setuptools": ""}``); None when one of them is bound another way too (a ``def``, an
    assignment, a parameter, another import: a ``find_packages`` of the file's own)."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in _SETUPS and not node.level:
            names |= {a.asname or a.name: a.name for a in node.names if a.name in _WANTED}
        elif isinstance(node, ast.Import):
            names |= {a.asname or a.name: "" for a in node.names if a.name == "setuptools"}
    bound = 0
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound += sum((a.asname or a.name.partition(".")[0]) in names for a in node.names)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound += 2 * (node.id in names)
        elif not isinstance(node, ast.alias):  # a parameter, a `def`, `except ... as`
            bound += 2 * (
                getattr(node, "arg" if isinstance(node, ast.arg) else "name", "") in names
            )
    return names if bound == len(names) else None


def _resolved(func: ast.expr, names: dict[str, str]) -> str:
    """The ``setuptools`` function ``func`` names (``""``: none)."""
    if isinstance(func, ast.Name):
        return names.get(func.id, "")
    if (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and names.get(func.value.id) == ""
        and func.attr in _WANTED
    ):
        return func.attr
    return ""


def _setup_call(tree: ast.Module, names: dict[str, str]) -> ast.Call | None:
    """The single call of ``setuptools``' or ``distutils``' ``setup``, with keywords only."""
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and _resolved(node.func, names) == "setup"
    ]
    if len(calls) != 1 or calls[0].args or any(k.arg is None for k in calls[0].keywords):
        return None
    return calls[0]


def _strings(node: ast.expr | None) -> list[str] | None:
    if not isinstance(node, (ast.List, ast.Tuple)):
        return None
    items = [e.value for e in node.elts if isinstance(e, ast.Constant)]
    if len(items) != len(node.elts) or not all(isinstance(i, str) for i in items):
        return None
    return [str(i) for i in items]


def _package_base(folder: str, package_dir: ast.expr | None) -> str | None:
    """The folder the packages' names rest under (None: not read)."""
    if package_dir is None:
        return folder
    if not isinstance(package_dir, ast.Dict) or len(package_dir.keys) != 1:
        return None
    key, value = package_dir.keys[0], package_dir.values[0]
    if not (isinstance(key, ast.Constant) and key.value == ""):
        return None
    if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
        return None
    return os.path.normpath(os.path.join(folder, value.value))


def _modules(base: str | None, py_modules: ast.expr | None) -> set[str] | None:
    """The files ``py_modules`` ships (None: not read)."""
    if py_modules is None or base is None:
        return set()
    names = _strings(py_modules)
    if names is None:
        return None
    return {os.path.join(base, *n.split(".")) + ".py" for n in names}


def _in_packages(
    folder: str, base: str, packages: ast.expr, path: str, imported: dict[str, str]
) -> bool:
    """Whether ``packages=`` may ship the module at ``path``."""
    names = _strings(packages)
    here = os.path.dirname(path)
    if names is not None:
        return any(_below(here, os.path.join(base, *n.split("."))) for n in names)
    if not isinstance(packages, ast.Call) or len(packages.args) > 1:
        return True
    finder = _resolved(packages.func, imported)
    if finder not in _FINDERS:
        return True
    where_args = [*packages.args, *(k.value for k in packages.keywords if k.arg == "where")]
    others = [k for k in packages.keywords if k.arg not in ("where", "exclude", "include")]
    if others or len(where_args) > 1:
        return True
    where = "."
    if where_args:
        if not (isinstance(where_args[0], ast.Constant) and isinstance(where_args[0].value, str)):
            return True
        where = where_args[0].value
    tops = {os.path.normpath(os.path.join(folder, where)), base}
    if finder == "find_namespace_packages":
        return any(_below(here, top) and here != top for top in tops)
    return any(_found(top, here) for top in tops)
