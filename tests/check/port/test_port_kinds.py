"""A project view built for a check's owners, its port kinds made later, is the view made whole.

A check asks a file's project view only for owners (``project_owners``: TP310's loaders,
TP101's receivers); the port asks every kind (``project_of``). The view for owners leaves
the port's kinds of each module (``ModuleFacts.port``) and of the view itself to their
first read (``_port_kinds.later_kinds``, ``_project.complete``). Held here on generated
projects (star imports, package re-exports, aliases, a submodule named as its package's
function, import cycles, names also written in docstrings and ``__all__``), against the view made
whole at once (``kinds=True``, the port's, the view as it was before):

* before it is completed, the view for owners has the same owners, unresolved names,
  modules and model classes, and reading a port kind raises instead of answering empty;
* completed, it equals the whole view, dicts in the same order, and every module's facts
  equal the whole view's (their kinds made then);
* a whole view asked after another file's view for owners (the cached facts then made
  on first read, from their text) is the view asked after that file's whole view.
"""

from __future__ import annotations

import ast
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from torchport.check._context import Context
from torchport.check.port import _project
from torchport.check.port._module_facts import KINDS, ModuleFacts, PortKinds
from torchport.check.port._project import ProjectImports, complete, project_imports
from torchport.check.port._project_imports import PORT_ONLY
from torchport.check.port._star_imports import record_star
from torchport.check.semantic._star_names import is_star
from torchport.errors import TorchportError

_HEAD = "import numpy as np\nimport torch\nfrom torch import nn\n"
# Module-level definitions, each of one kind the view tells (or none).
_DEFS = {
    "Net": "class Net(nn.Module):\n    def forward(self, x):\n        return x\n",
    "Sub": "class Sub(Net):\n    pass\n",
    "Conv": (
        "class Conv(nn.Module):\n    def forward(self, state):\n"
        "        state = torch.from_numpy(state).float()\n        return state\n"
    ),
    "Cfg": "class Cfg:\n    def to(self, device):\n        return self\n",
    "cfg": "cfg = Cfg()\n",
    "build": "def build():\n    return Net()\n",
    "make_mask": "def make_mask(n):\n    return torch.ones(n)\n",
    "to_np": "def to_np(x):\n    return x.detach().numpy()\n",
    "get_batch": "def get_batch(source, i):\n    return source[i : i + 2]\n",
    "stats": "def stats(x):\n    return np.mean(x), 3\n",
    "mask": "mask = torch.zeros(3)\n",
    "dev": 'dev = torch.device("cpu")\n',
    "f": "def f():\n    return torch.ones(2)\n",
    "g": "def g(x):\n    return x\n",
}
_NAMES = sorted(_DEFS)
_MODULES = ("model", "helpers", "pkg/__init__", "pkg/a", "pkg/b", "pkg/f")


def _imports(module: str) -> list[str]:
    """The import statements ``module`` may hold, of the project's other modules."""
    inside = module.startswith("pkg/")
    forms = [
        "from model import {n}",
        "from helpers import {n}",
        "from helpers import *",
        "import helpers as h",
        "import model",
        "from pkg import {n}",
        "from pkg import f",
        "from pkg import a",
        "from pkg.a import {n}",
        "from pkg.b import *",
        "import pkg.a",
        "from pkg.f import {n}",
    ]
    if inside:
        forms += ["from .a import {n}", "from . import b", "from .b import *", "from .f import {n}"]
    return forms


@st.composite
def projects(draw: st.DrawFn) -> dict[str, str]:
    """Files (relative path -> text) of a project with a package and two flat modules, their
    names drawn from a few (so modules bind, import, rebind and star-import the same ones)."""
    pool = draw(st.lists(st.sampled_from(_NAMES), min_size=2, max_size=6, unique=True))
    names = st.sampled_from(pool)
    files: dict[str, str] = {}
    for module in (*_MODULES, "train"):
        lines = [_HEAD]
        for form in draw(st.lists(st.sampled_from(_imports(module)), max_size=4)):
            lines.append(form.format(n=draw(names)) + "\n")
        defined: list[str] = []
        for name in draw(st.lists(names, max_size=4, unique=True)) if module != "train" else ():
            if name == "Sub" and "Net" not in defined:
                lines.append("from model import Net\n")
            if name == "cfg" and "Cfg" not in defined:
                lines.append("from model import Cfg\n")
            lines.append(_DEFS[name])
            defined.append(name)
        if draw(st.booleans()):  # the names written elsewhere: the text alone cannot tell
            shown = draw(st.lists(names, max_size=3))
            lines.insert(0, f'"""{" ".join(shown)}"""\n')
            lines.append(f"__all__ = {shown!r}\n")
        if draw(st.booleans()):
            lines.append(f"{draw(names)} = None\n")  # rebinds an import, or its own
        if draw(st.booleans()):  # an alias of an import, its own or a module's name
            lines.append(f"alias = {draw(st.sampled_from(['h.', 'model.', '']))}{draw(names)}\n")
        files[f"{module}.py"] = "".join(lines)
    return files


def _whole(view: ProjectImports) -> tuple[object, ...]:
    """Everything a view holds, dicts in their order, each module's facts with their kinds."""
    sets = tuple(sorted(getattr(view, name)) for name in ("classes", "unresolved", *PORT_ONLY))
    dicts = tuple(
        list(getattr(view, name).items())
        for name in ("owners", "viewed", "converted", "host_items")
    )
    modules = [(name, _facts(facts)) for name, facts in view.modules.items()]
    return sets, dicts, modules, view.star_unresolved


def _facts(facts: _project.ModuleFacts) -> tuple[object, ...]:
    return (facts.path, facts.classes, facts.owners, facts.defined, facts.may_hold, facts.made)


def _owners(view: ProjectImports) -> tuple[object, ...]:
    """What a check reads of a view: owners, unresolved names, modules, model classes."""
    return (
        list(view.owners.items()),
        sorted(view.unresolved),
        [(name, facts.path, facts.classes, facts.owners) for name, facts in view.modules.items()],
        sorted(view.classes),
        view.star_unresolved,
    )


def _context(path: Path) -> Context:
    source = path.read_text(encoding="utf-8")
    return Context(source, str(path), ast.parse(source))


_HEAD = "import numpy as np\nimport torch\nfrom torch import nn\n"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(projects())
@example(  # a module reading itself through its own import (a random draw, 2026-12-02):
    # `alias = model.Net` was a class with no owner when `pkg` asked for model.py first
    files={
        "model.py": _HEAD + "import model\nfrom model import Net\nfrom pkg.f import Net\n"
        "class Net(nn.Module):\n    def forward(self, x):\n        return x\n"
        "class Sub(Net):\n    pass\n__all__ = []\nalias = model.Net\n",
        "pkg/__init__.py": _HEAD + "from model import Net\n",
        "pkg/f.py": _HEAD,
        "train.py": _HEAD,
    }
)
def test_a_view_for_owners_completed_later_is_the_view_made_whole(files: dict[str, str]) -> None:
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        root = Path(tmp).resolve()
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text, encoding="utf-8")
        for rel in sorted(files):
            path = root / rel
            mp.setattr(_project, "_CACHE", {})
            whole = project_imports(_context(path))
            whole_facts = {key: _facts(kept[1]) for key, kept in _project._CACHE.items()}
            mp.setattr(_project, "_CACHE", {})
            ctx = _context(path)
            view = project_imports(ctx, kinds=False)
            assert _owners(view) == _owners(whole), rel
            for name in PORT_ONLY if view._later is not None else ():
                with pytest.raises(TorchportError, match=name):
                    bool(getattr(view, name))
            complete(view, ctx)
            assert view == whole, rel
            assert _whole(view) == _whole(whole), rel
            lazy_facts = {key: _facts(kept[1]) for key, kept in _project._CACHE.items()}
            assert lazy_facts == whole_facts, rel
            for kept in _project._CACHE.values():
                _holds_what_the_view_relies_on(kept[1])


def _holds_what_the_view_relies_on(facts: ModuleFacts) -> None:
    """What a view for owners relies on to leave the port kinds (``_project._imports_of``,
    ``record_star``): every name of a kind is one the module binds itself, but a name it
    takes by a star import and re-exports (``_reexports.py``), and only where it has one;
    every class is an owner; every name of a port kind is one ``may_give`` answers for, asked
    without making them (its own functions and values, its imports, its star imports')."""
    starred = facts.classes - facts.defined  # bound by a star import alone
    for _, attr in KINDS:
        starred |= getattr(facts, attr) - facts.defined
    assert not starred or facts.starred, starred
    assert not starred & facts.plain_classes, starred
    assert facts.classes | facts.plain_classes <= facts.owned.keys(), "an owner"
    made = facts.made
    for name in ("factories", "tensor_functions", "tensors", "devices", "cpu_functions"):
        assert all(facts.may_give(n) for n in getattr(made, name)), name
    assert all(facts.may_give(n) for n in made.view_functions | made.host_functions)
    assert all(facts.may_give(n) for n, _ in made.host_items)
    assert made.given <= facts.imports | facts.may_hold | starred, "a re-export or alias"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(projects(), st.sampled_from([*sorted(_MODULES), "train"]))
def test_a_whole_view_after_a_view_for_owners_is_as_after_a_whole_view(
    files: dict[str, str], first: str
) -> None:
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        root = Path(tmp).resolve()
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text, encoding="utf-8")
        first_path = root / f"{first}.py"
        for rel in sorted(files):
            got = []
            for kinds in (True, False):
                mp.setattr(_project, "_CACHE", {})
                project_imports(_context(first_path), kinds=kinds)
                got.append(_whole(project_imports(_context(root / rel))))
            assert got[0] == got[1], (first, rel)


def test_a_function_named_as_a_submodule_is_told_as_the_whole_view_tells_it(
    tmp_path: Path,
) -> None:
    """``from pkg import f`` where the package defines ``f`` and has a module ``f.py``: the
    view for owners asks ``f``'s kind then (the module, or the function, follows from it)."""
    files = {
        "pkg/__init__.py": _HEAD
        + "def f():\n    return torch.ones(2)\n\n\ndef g():\n    return 3\n",
        "pkg/f.py": _HEAD + _DEFS["Cfg"],
        "pkg/g.py": _HEAD + _DEFS["Cfg"],
        "train.py": _HEAD + "from pkg import f\nfrom pkg import g\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    path = (tmp_path / "train.py").resolve()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_project, "_CACHE", {})
        whole = project_imports(_context(path))
        mp.setattr(_project, "_CACHE", {})
        ctx = _context(path)
        view = project_imports(ctx, kinds=False)
        assert _owners(view) == _owners(whole)
        complete(view, ctx)
        assert _whole(view) == _whole(whole)
    # `f` is a tensor function (the package's), `g` a plain function: the module g.py
    assert "f" in whole.tensor_functions and "g" in whole.modules


# ---------------------------------------------------------------- a star import's names


def _old_record_star(
    out: ProjectImports,
    chain: list[ModuleFacts],
    given: frozenset[str] | None,
    bindings: dict[str, list[SimpleNamespace]],
) -> None:
    """``record_star`` as it was: every kind recorded at once, from the names of them all."""
    own = {n for n, found in bindings.items() if not all(is_star(b.node) for b in found)}
    for facts in chain:
        names = {n for _, attr in KINDS for n in getattr(facts, attr)} | dict(facts.owners).keys()
        free = {n for n in names if n[0] != "_" and n not in own and (given is None or n in given)}
        for _, attr in KINDS:
            getattr(out, attr).update(free.intersection(getattr(facts, attr)))
        out.viewed.update((n, v) for n, v in facts.views if n in free)
        out.owners.update((n, o) for n, o in facts.owners if n in free)
        own |= facts.defined | free


_STAR_NAMES = ["Net", "_Net", "build", "mask", "f", "Cfg", "cfg", "dev"]
_OWNED = (False, frozenset({"to"}), "object")


@st.composite
def _module_facts(draw: st.DrawFn) -> ModuleFacts:
    """Facts holding what real ones hold (``_holds_what_the_view_relies_on``)."""
    names = st.frozensets(st.sampled_from(_STAR_NAMES), max_size=4)
    classes, plain = draw(names), draw(names)
    kinds = {f: draw(names) - classes - plain for f in ("factories", "tensors", "devices")}
    viewed = draw(names) - classes - plain
    kinds["view_functions"] = viewed
    owners = tuple((n, _OWNED) for n in sorted(classes | plain | draw(names)))
    defined = classes | plain | viewed | draw(names) | frozenset().union(*kinds.values())
    return ModuleFacts(
        path=f"m{draw(st.integers(0, 9))}.py",
        classes=classes,
        plain_classes=plain,
        owners=owners,
        defined=defined,
        may_hold=defined,
        port=PortKinds(**kinds, views=tuple((n, ((0, "x"),)) for n in sorted(viewed))),
    )


@given(
    st.lists(_module_facts(), min_size=1, max_size=3),
    st.none() | st.frozensets(st.sampled_from(_STAR_NAMES)),
    st.dictionaries(st.sampled_from(_STAR_NAMES), st.booleans()),
    st.booleans(),
)
def test_a_star_import_records_what_it_recorded_at_once(
    chain: list[ModuleFacts],
    given: frozenset[str] | None,
    bound: dict[str, bool],
    building: bool,
) -> None:
    """Its classes and owners now, its other kinds now or at completion: as all at once."""
    star = ast.ImportFrom(module="m", names=[ast.alias(name="*")], level=0)
    other = ast.Assign(targets=[], value=ast.Constant(value=1))
    bindings = {n: [SimpleNamespace(node=star if s else other)] for n, s in bound.items()}
    old = ProjectImports()
    _old_record_star(old, chain, given, bindings)
    new = ProjectImports.building() if building else ProjectImports()
    record_star(new, chain, given, bindings, KINDS)  # type: ignore[arg-type]
    assert list(new.owners.items()) == list(old.owners.items())
    assert new.classes == old.classes
    complete(new, Context("", "m.py", ast.parse("")))
    assert _whole(new) == _whole(old)


def test_an_imported_model_class_s_converted_inputs_are_in_the_view(tmp_path: Path) -> None:
    """``from model import Policy``: the class is told at once (owners need it), its forward's
    converted input later (the port's): both there once the view is complete."""
    (tmp_path / "model.py").write_text(_HEAD + _DEFS["Conv"], encoding="utf-8")
    (tmp_path / "train.py").write_text(_HEAD + "from model import Conv as Policy\n")
    path = (tmp_path / "train.py").resolve()
    for kinds in (True, False):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(_project, "_CACHE", {})
            ctx = _context(path)
            view = project_imports(ctx, kinds=kinds)
            assert view.classes == {"Policy"}
            complete(view, ctx)
            assert view.converted == {"Policy": (0,)}
