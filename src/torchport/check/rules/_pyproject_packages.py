"""What a ``pyproject.toml`` with no ``setup.py`` beside it ships: its ``[tool.setuptools]``.

``rules/_shipped.py`` asks it for a folder whose packaging file is a ``pyproject.toml`` (a
``setup.py`` there is read instead). Held-out sample AD, pos 85 and 89: the fake-video
refactor's ``pyproject.toml`` ships ``[tool.setuptools.packages.find] where = ["src"]``, so
its top-level ``experiments/train.py`` and ``experiments/evaluate.py`` are no library's code,
and every call of their ``device="cuda"`` functions in the repository passes ``device``.

Read so (any doubt: the module may be installed):

* the build backend is setuptools' (``setuptools.build_meta``, or no ``[build-system]``
  backend, which pip runs as setuptools); another backend (hatchling, poetry, flit, pdm)
  discovers packages its own way, not read;
* no ``setup.cfg`` beside it has a ``[metadata]`` or ``[options...]`` section (setuptools
  reads packages there too);
* ``[tool.setuptools]`` has ``packages`` (without it setuptools discovers packages and
  modules itself) and no key but those of :data:`_KNOWN` (``data-files``, ``script-files``,
  ``ext-modules`` and any other: doubt);
* ``packages`` is a list of strings (each ships its folder and all below it) or ``{find =
  {...}}`` with ``where`` a list of strings (or absent: ``["."]``), ``include``/``exclude``
  not read (they only narrow), and ``namespaces`` (true when absent, as in setuptools'
  ``pyproject.toml`` reading): the top-level packages are every folder right below
  ``where`` (true) or each of them holding an ``__init__.py`` (false), and each ships its
  folder and everything below it (package data may ride along);
* ``package-dir`` is absent or ``{"" = "folder"}``; ``py-modules`` is absent or a list of
  strings, each shipping its file.

The folder tests both readings share (``_below``, ``_found``: what ``find_packages`` finds)
live here, ``_shipped`` importing them (one direction).

A found package's folder is taken both under ``where`` and under ``package-dir``'s folder
(its name, found under ``where``, rests there; the project's top when there is none): a
top-level ``experiments/`` beside ``where = ["src"]`` ships only if ``src`` has an
``experiments`` too.
"""

from __future__ import annotations

import os

from torchport.check._listing import note

__all__ = ["pyproject_may_ship", "setup_cfg_packages"]

# keys of `[tool.setuptools]` that ship no module beyond `packages` and `py-modules`
_KNOWN = frozenset(
    {"packages", "package-dir", "py-modules", "zip-safe", "include-package-data"}
    | {"package-data", "exclude-package-data", "license-files", "platforms"}
)
_FIND = frozenset({"where", "include", "exclude", "namespaces"})
# the setuptools build backends (`rules/_shipped.py` asks them of a `pyproject.toml` beside a
# `setup.py` too)
_SETUPTOOLS = ("setuptools.build_meta", "setuptools.build_meta:__legacy__")


def setup_cfg_packages(folder: str) -> bool:
    """Whether ``folder`` has a ``setup.cfg`` with a ``[metadata]`` or ``[options...]``
    section (not only other tools' settings: ``[isort]``, ``[flake8]``). Raises ``OSError``
    or ``configparser.Error`` where it cannot be read."""
    import configparser  # here: not on a plain check's path (tests/check/test_startup.py)

    config = os.path.join(folder, "setup.cfg")
    if not os.path.isfile(config):
        return False
    parser = configparser.ConfigParser(interpolation=None)
    with open(config, encoding="utf-8") as handle:
        parser.read_file(handle)
    return any(n == "metadata" or n.startswith("options") for n in parser.sections())


def pyproject_may_ship(folder: str, path: str) -> bool:
    """Whether the ``pyproject.toml`` in ``folder`` may ship the module at ``path`` (the
    module docstring)."""
    import configparser  # here: `tomllib` imports `typing` (tests/check/test_startup.py)
    import tomllib

    try:
        if setup_cfg_packages(folder):
            return True
        with open(os.path.join(folder, "pyproject.toml"), "rb") as handle:
            table = tomllib.load(handle)
    except (OSError, ValueError, configparser.Error):
        return True  # unreadable, not TOML (`tomllib.TOMLDecodeError` is a `ValueError`)
    system = table.get("build-system", {})
    backend = system.get("build-backend", _SETUPTOOLS[0]) if isinstance(system, dict) else None
    tool = table.get("tool", {})
    found = tool.get("setuptools") if isinstance(tool, dict) else None
    if backend not in _SETUPTOOLS or not isinstance(found, dict) or "packages" not in found:
        return True
    if any(key not in _KNOWN for key in found):
        return True
    base = _base(folder, found.get("package-dir"))
    modules = found.get("py-modules", [])
    if base is None or not _strings(modules):
        return True
    if path in {os.path.join(base, *m.split(".")) + ".py" for m in modules}:
        return True
    return _in_packages(folder, base, found["packages"], os.path.dirname(path))


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _base(folder: str, package_dir: object) -> str | None:
    """The folder the packages' names rest under (None: not read)."""
    if package_dir is None:
        return folder
    if not isinstance(package_dir, dict) or list(package_dir) != [""]:
        return None
    value = package_dir[""]
    return os.path.normpath(os.path.join(folder, value)) if isinstance(value, str) else None


def _in_packages(folder: str, base: str, packages: object, here: str) -> bool:
    """Whether ``packages`` may ship the folder ``here``."""
    if _strings(packages):
        assert isinstance(packages, list)
        return any(_below(here, os.path.join(base, *n.split("."))) for n in packages)
    if not isinstance(packages, dict) or list(packages) != ["find"]:
        return True
    find = packages["find"]
    if not isinstance(find, dict) or any(key not in _FIND for key in find):
        return True
    where, namespaces = find.get("where", ["."]), find.get("namespaces", True)
    if not _strings(where) or not isinstance(namespaces, bool):
        return True
    for top in (os.path.normpath(os.path.join(folder, w)) for w in where):
        names = _top_packages(top, namespaces=namespaces)
        if names is None:
            return True
        # a name found under `where` rests under `package-dir`'s folder too
        if any(_below(here, os.path.join(t, n)) for n in names for t in (top, base)):
            return True
    return False


def _top_packages(top: str, *, namespaces: bool) -> list[str] | None:
    """The top-level packages setuptools finds right below ``top``: every folder (namespace
    packages), or each holding an ``__init__.py`` with no dot in its name (None: unreadable)."""
    note(top)
    try:
        entries = sorted(os.listdir(top)) if os.path.isdir(top) else []
    except OSError:
        return None
    folders = [e for e in entries if os.path.isdir(os.path.join(top, e))]
    if namespaces:
        return folders
    return [f for f in folders if _found(top, os.path.join(top, f))]


def _below(here: str, top: str) -> bool:
    return here == top or here.startswith(top.rstrip(os.sep) + os.sep)


def _found(top: str, here: str) -> bool:
    """Whether ``find_packages`` under ``top`` may ship the folder ``here``: it is, or is
    below, a folder right below ``top`` holding an ``__init__.py`` with no dot in its name
    (a top-level package; a folder below one that is no package may ride along as
    package data, ``include_package_data``)."""
    if not _below(here, top) or here == top:
        return False
    first = os.path.relpath(here, top).split(os.sep)[0]
    note(os.path.join(top, first, "__init__.py"))
    return "." not in first and os.path.isfile(os.path.join(top, first, "__init__.py"))
