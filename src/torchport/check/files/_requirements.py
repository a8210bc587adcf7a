"""The torch a project declares it needs: the default ``target-torch``.

Read from the project's own files, as a new user writes them:

* ``pyproject.toml``: ``[project] dependencies``, Poetry's ``[tool.poetry.dependencies]``
  (``torch = "^2.4"``, ``{version = ...}``, a list of alternatives), pixi's
  ``[tool.pixi.dependencies]`` (conda's ``pytorch``) and ``[tool.pixi.pypi-dependencies]``;
  when those name no torch, the optional ones (extras, ``[dependency-groups]``, Poetry
  groups, pixi features);
* ``pixi.toml`` (the same tables without ``tool.pixi.``), ``setup.cfg`` and
  ``setup.py`` (``install_requires``, then ``extras_require``; in ``setup.py`` only
  literals, read, never run), ``requirements.txt`` (with the
  files its ``-r`` lines include) and conda's
  ``environment.yml`` / ``environment.yaml`` (conda specs and its ``pip:`` list).

Only a lower bound counts (``>=``, ``==``, ``~=``, ``>``, a bare or ``=`` conda
version, Poetry's ``^``/``~``); a version without a minor means ``.0`` (``torch>=2``
is 2.0). The target is the *lowest* torch the project may be installed with: the
specifiers of one requirement all hold (their highest bound); requirements that only
hold under different markers, Poetry's alternatives, extras and groups are
alternatives (their lowest bound), unless a requirement without a marker holds
everywhere. A requirement whose bound cannot be read (a URL, a path, ``torch``
alone where alternatives are bounded) makes the whole declaration unreadable:
None, and the caller falls back to the floor. Files that cannot be read or parsed
declare nothing (they are not ours to judge).
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from torchport.check._patterns import lazy_pattern
from torchport.check._torch_api import TorchVersion, format_version

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["declared_target", "holds_requirements", "project_folder", "requirement_floor"]

# PEP 508: a name (any case, `-`/`_`/`.` alike), extras, then specifiers (maybe in
# parentheses), a marker after `;`; requirements.txt adds `# comments` and options.
# Possessive pieces: each reads its run whole, so no line makes it backtrack.
_PEP508 = lazy_pattern(
    r"^\s*+(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*+)\s*+(?:\[[^\]]*+\])?+\s*+(?P<rest>[^;#]*+)"
    r"(?P<marker>;[^#]*+)?+(?:#.*)?+$"
)
# conda: `[channel::]name[ ]spec[ build]`, spec `>=2.4,<3`, `2.4.*`, `=2.4`, `==2.4.1`.
_CONDA = lazy_pattern(r"^\s*(?:[\w.-]+::)?(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(?P<rest>.*)$")
_PART = lazy_pattern(r"^(?P<op>===|==|~=|>=|<=|!=|>|<|\^|~|=)?\s*(?P<version>v?\d[\w.*+!-]*)$")
# The separators between specifiers: a run is tried from its start only, never from inside
# it (from inside, the same run fails the same way: quadratic on a long run of commas).
_SEPARATOR = lazy_pattern(r"(?<![,\s])[,\s]++(?=[<>=!~^\dv*])")
# A conda build string after the spec (`>=2.4 cuda*`), from the start of its space run only.
_BUILD = lazy_pattern(r"(?<!\s)\s++[A-Za-z_*]\S*+$")
# An environment.yml item: `- spec  # comment`, one line (its text up to a `#`).
_YAML_ITEM = lazy_pattern(r"^\s*+-\s++([^#\n]*+)", re.MULTILINE)
_LOWER_OPS = {"===", "==", "~=", ">=", ">", "^", "~", "=", None}
_PYPI_NAMES = {"torch"}
_CONDA_NAMES = {"pytorch", "torch", "pytorch-gpu", "pytorch-cpu"}


def _name(text: str) -> str:
    return re.sub(r"[-_.]+", "-", text).lower()


def _version(text: str) -> TorchVersion | None:
    """``2``, ``2.7``, ``2.7.1+cu121``, ``2.8.0a0``, ``2.*`` as (major, minor)."""
    match = re.match(r"v?(\d+)(?:\.(\d+))?", text)
    return None if match is None else (int(match[1]), int(match[2] or 0))


def _spec_floor(spec: str) -> TorchVersion | bool | None:
    """The lower bound of a version spec; False when it has none (``<3``, ``*``, empty).

    ``||`` separates alternatives (Poetry): their lowest bound, False if one has none.
    ``,`` or spaces separate specifiers that all hold: their highest bound. None: a
    part that is no version spec (the spec cannot be read).
    """
    alternatives = [a.strip() for a in spec.split("||")]
    floors: list[TorchVersion] = []
    for alternative in alternatives:
        bounds: list[TorchVersion] = []
        text = re.sub(r"(===|==|~=|>=|<=|!=|[<>^~=])\s+", r"\1", alternative.strip("() \t"))
        parts = [p for p in _SEPARATOR.split(text) if p.strip()]
        for part in parts:
            part = part.strip().rstrip(",").strip()
            if part in {"*", ""}:
                continue
            match = _PART.match(part)
            if match is None:
                return None
            version = _version(match["version"])
            if version is None:
                return None
            if match["op"] in _LOWER_OPS:
                bounds.append(version)
        if not bounds:
            return False
        floors.append(max(bounds))
    return min(floors) if floors else False


def _combine(required: Sequence[TorchVersion | bool | None], optional: bool) -> TorchVersion | None:
    """One floor from several requirements' floors (False: no bound, None: unreadable)."""
    if any(f is None for f in required):
        return None
    bounded = [f for f in required if isinstance(f, tuple)]
    if not bounded or (optional and len(bounded) < len(required)):
        return None
    return min(bounded) if optional else max(bounded)


def requirement_floor(lines: Iterable[str]) -> TorchVersion | None:
    """The lowest torch that PEP 508 requirement ``lines`` allow (``torch>=2.7``: 2.7), or None.

    ``torch`` with no lower bound, or no ``torch`` line, gives None. Lines without a
    marker all hold (the highest bound); lines with one are alternatives (the lowest),
    unless a line without a marker bounds torch everywhere.
    """
    everywhere: list[TorchVersion | bool | None] = []
    somewhere: list[TorchVersion | bool | None] = []
    for line in "\n".join(lines).replace("\\\n", " ").splitlines():  # `\` continues a line
        line = line.strip().rstrip("\\").strip()
        if line.startswith(("-", "#")) or not line:
            continue
        match = _PEP508.match(line)
        if match is None or _name(match["name"]) not in _PYPI_NAMES:
            continue
        rest = re.sub(r"\s--?[A-Za-z].*$", "", match["rest"]).strip()  # `--hash=...` options
        floor: TorchVersion | bool | None = None if rest.startswith("@") else _spec_floor(rest)
        (somewhere if match["marker"] else everywhere).append(floor)
    if everywhere:
        # an unbounded `torch` everywhere leaves the environments no marked line names unbounded
        return _combine(everywhere, optional=False)
    if somewhere:
        return _combine(somewhere, optional=True)
    return None


def _conda_floor(specs: Iterable[str]) -> TorchVersion | None:
    """The lowest torch conda match ``specs`` allow (``pytorch>=2.4``, ``pytorch=2.4``)."""
    found: list[TorchVersion | bool | None] = []
    for spec in specs:
        match = _CONDA.match(spec)
        if match is None or _name(match["name"]) not in _CONDA_NAMES:
            continue
        rest = match["rest"].strip()
        if rest.startswith("["):
            inner = re.search(r"version\s*=\s*['\"]([^'\"]*)['\"]", rest)
            rest = inner[1] if inner else ""
        if rest.startswith("=") and not rest.startswith("=="):
            rest = rest[1:].split("=")[0]  # `=2.4` is 2.4.* (`=2.4=cuda*`: no build)
        elif rest[:1].isdigit():
            rest = rest.split()[0].split("=")[0]  # `2.4.* cuda*`, `2.4=cuda*`: no build
        else:  # `>=2.4 cuda*`, `==2.5.1=py3.11_cuda*`: no build string
            rest = re.sub(r"^(==\s*[\d.*]+)=\S+$", r"\1", _BUILD.sub("", rest))
        found.append(_spec_floor(rest))
    return _combine(found, optional=False) if found else None


def _poetry_floor(value: Any) -> TorchVersion | bool | None:
    """Poetry's ``torch = "^2.4"`` / ``{version = ...}`` / a list of alternatives."""
    if isinstance(value, str):
        return _spec_floor(value)
    if isinstance(value, dict):
        version = value.get("version")
        return _spec_floor(version) if isinstance(version, str) else None
    if isinstance(value, list) and value:
        return _combine([_poetry_floor(v) for v in value], optional=True)
    return None


def _table_floor(table: Any, names: set[str], conda: bool) -> TorchVersion | bool | None:
    """The floor of ``torch`` in a name -> spec table (Poetry, pixi); False: not named."""
    if not isinstance(table, dict):
        return False
    floors = [
        (_conda_floor([f"pytorch {v}"]) if conda and isinstance(v, str) else _poetry_floor(v))
        for k, v in table.items()
        if isinstance(k, str) and _name(k) in names
    ]
    if not floors:
        return False
    return _combine(floors, optional=False)


def _dig(data: Any, *keys: str) -> Any:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _first(required: Sequence[Any], optional: Sequence[Any]) -> TorchVersion | None:
    """The required sources' floor when they name torch, else the optional ones' (lowest)."""
    named = [f for f in required if f is not False]
    if named:
        return _combine(named, optional=False)
    named = [f for f in optional if f is not False]
    return _combine(named, optional=True) if named else None


def _pep508(lines: Sequence[str]) -> TorchVersion | bool | None:
    if not any(
        (m := _PEP508.match(line.strip())) and _name(m["name"]) in _PYPI_NAMES for line in lines
    ):
        return False
    return requirement_floor(lines)


def _pixi_tables(root: Any) -> tuple[list[Any], list[Any]]:
    required = [
        _table_floor(_dig(root, "dependencies"), _CONDA_NAMES, conda=True),
        _table_floor(_dig(root, "pypi-dependencies"), _PYPI_NAMES, conda=False),
    ]
    features = _dig(root, "feature")
    optional = [
        _table_floor(_dig(f, kind), names, conda=kind == "dependencies")
        for f in (features.values() if isinstance(features, dict) else [])
        for kind, names in (("dependencies", _CONDA_NAMES), ("pypi-dependencies", _PYPI_NAMES))
    ]
    return required, optional


def _pyproject(data: dict[str, Any]) -> TorchVersion | None:
    poetry = _dig(data, "tool", "poetry")
    pixi_required, pixi_optional = _pixi_tables(_dig(data, "tool", "pixi"))
    required = [
        _pep508(_strings(_dig(data, "project", "dependencies"))),
        _table_floor(_dig(poetry, "dependencies"), _PYPI_NAMES, conda=False),
        *pixi_required,
    ]
    extras = _dig(data, "project", "optional-dependencies")
    groups = _dig(data, "dependency-groups")
    poetry_groups = _dig(poetry, "group")
    optional = [
        *(_pep508(_strings(v)) for v in (extras.values() if isinstance(extras, dict) else [])),
        *(_pep508(_strings(v)) for v in (groups.values() if isinstance(groups, dict) else [])),
        *(
            _table_floor(_dig(g, "dependencies"), _PYPI_NAMES, conda=False)
            for g in (poetry_groups.values() if isinstance(poetry_groups, dict) else [])
        ),
        *pixi_optional,
    ]
    return _first(required, optional)


def _read_toml(path: Path) -> dict[str, Any] | None:
    import tomllib  # here: a project without the file never pays for the reader

    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None  # not ours to judge unless it holds our table (then it was read already)


def _setup_cfg(path: Path) -> TorchVersion | None:
    import configparser  # here: a project without the file never pays for the reader

    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(path, encoding="utf-8")
    except (OSError, UnicodeDecodeError, configparser.Error):
        return None
    required = parser.get("options", "install_requires", fallback="").splitlines()
    optional = (
        [v.splitlines() for v in parser["options.extras_require"].values()]
        if parser.has_section("options.extras_require")
        else []
    )
    return _first([_pep508(required)], [_pep508(lines) for lines in optional])


def _literal_strings(node: ast.AST | None, names: dict[str, ast.AST]) -> list[str] | None:
    """A list/tuple of string constants (or a module-level name bound to one), else None."""
    if isinstance(node, ast.Name):
        node = names.get(node.id)
    if isinstance(node, (ast.List, ast.Tuple)) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts
    ):
        return [e.value for e in node.elts]  # type: ignore[attr-defined]
    return None


def _setup_py(path: Path) -> TorchVersion | None:
    """``setup(install_requires=[...], extras_require={...})`` written as literals (not run)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return None
    names: dict[str, ast.AST] = {
        t.id: node.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        for t in node.targets
        if isinstance(t, ast.Name)
    }
    for node in ast.walk(tree):
        func = node.func if isinstance(node, ast.Call) else None
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if not isinstance(node, ast.Call) or called != "setup":
            continue
        given = {k.arg: k.value for k in node.keywords if k.arg}
        required = _literal_strings(given.get("install_requires"), names)
        extras: ast.AST | None = given.get("extras_require")
        if isinstance(extras, ast.Name):
            extras = names.get(extras.id)
        groups = (
            [_literal_strings(v, names) for v in extras.values]
            if isinstance(extras, ast.Dict)
            else []
        )
        return _first(
            [_pep508(required) if required is not None else False],
            [_pep508(g) for g in groups if g is not None],
        )
    return None


def _environment_yml(path: Path) -> TorchVersion | None:
    """conda's environment file: each ``- spec`` item (conda's or, under ``pip:``, PyPI's)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    items = [m[1].strip().strip("'\"") for m in _YAML_ITEM.finditer(text)]
    return _conda_floor(items)


def _requirement_lines(path: Path, seen: set[Path]) -> list[str]:
    """The lines of a requirements file with its ``-r other.txt`` includes in their place."""
    key = Path(os.path.abspath(path))
    if key in seen:
        return []
    seen.add(key)
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    out: list[str] = []
    for line in lines:
        include = re.match(r"^\s*(?:-r|--requirement)(?:\s+|=)(\S+)", line)
        if include is not None:
            out.extend(_requirement_lines(path.parent / include[1], seen))
        else:
            out.append(line)
    return out


def _requirements_txt(path: Path) -> TorchVersion | None:
    return requirement_floor(_requirement_lines(path, set()))


def _pixi_toml(path: Path) -> TorchVersion | None:
    data = _read_toml(path)
    if data is None:
        return None
    required, optional = _pixi_tables(data)
    return _first(required, optional)


def _pyproject_toml(path: Path) -> TorchVersion | None:
    data = _read_toml(path)
    return None if data is None else _pyproject(data)


_SOURCES = (
    ("pyproject.toml", _pyproject_toml, "the dependencies of"),
    ("pixi.toml", _pixi_toml, "the dependencies of"),
    ("setup.cfg", _setup_cfg, "the requirements of"),
    ("setup.py", _setup_py, "the requirements of"),
    ("requirements.txt", _requirements_txt, ""),
    ("environment.yml", _environment_yml, ""),
    ("environment.yaml", _environment_yml, ""),
)


def declared_target(folder: Path) -> tuple[TorchVersion, str] | None:
    """The torch floor the project in ``folder`` declares, and where."""
    for name, read, where in _SOURCES:
        path = folder / name
        if path.is_file():
            floor = read(path)
            if floor is not None:
                place = f"{where} {path}" if where else str(path)
                return floor, f"torch>={format_version(floor)} in {place}"
    return None


def project_folder(folder: Path) -> Path | None:
    """The nearest folder at or above ``folder`` holding one of the files that declare torch."""
    for parent in (folder, *folder.parents):
        if holds_requirements(parent):
            return parent
    return None


def holds_requirements(folder: Path) -> bool:
    """Whether ``folder`` itself holds one of the files that declare torch."""
    return any((folder / name).is_file() for name, _, _ in _SOURCES)
