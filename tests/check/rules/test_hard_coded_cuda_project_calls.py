"""TP101 leaves a public function's CUDA default that every call across its repository passes
(sample V, judged low: sgm's ``sv4d_helpers``, VideoMAE's ``mixup_target``, LoRA's ``eli5_utils``;
``rules/_project_calls.py``).

The invariant: a finding is dropped only if every call of the function in the repository
passes the device argument explicitly, there is one, and the function does not escape.
Repositories are drawn: a library module ``pkg/lib.py`` defining a function or a class with a
``device="cuda"`` default, a package ``__init__.py`` (empty, re-exporting it, a star import),
a ``setup.py`` or none (installable, its module is a library's: reported whatever the calls),
and one to three caller files, each with uses drawn from
:data:`FORMS` (direct, aliased, through the module, through ``functools.partial``, omitting it,
through ``*a``/``**kw``, as a value, by a string, the module as a value, a config naming it).
Two oracles, written apart from the rule: Python runs every caller with every value the
unknown names may hold, and a default the rule leaves alone must never have run; and a
brute-force reference over the drawn uses (:func:`expected_left_alone`).
"""

from __future__ import annotations

import importlib
import itertools
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

torch = pytest.importorskip("torch")

# form -> (the import line, the call lines), `{n}` the callee's name, `{p}` the package
FUNCTOOLS = "import functools\nfrom {p}.lib import {n}"
FORMS = {
    "keyword": ("from {p}.lib import {n}", "{n}(1, device=d)"),
    "position": ("from {p}.lib import {n}", "{n}(1, d)"),
    "alias": ("from {p}.lib import {n} as g", "g(1, device=d)"),
    "module": ("import {p}.lib as m", "m.{n}(1, d)"),
    "from_package": ("from {p} import lib", "lib.{n}(1, device=d)"),
    "partial_bound": (FUNCTOOLS, "functools.partial({n}, device=d)(1)"),
    "omitted": ("from {p}.lib import {n}", "{n}(1)"),
    "module_omitted": ("import {p}.lib as m", "m.{n}(1)"),
    "kwargs": ("from {p}.lib import {n}", "{n}(1, **kw)"),
    "args": ("from {p}.lib import {n}", "{n}(*a)"),
    "partial_unbound": (FUNCTOOLS, "functools.partial({n}, 1)(**kw)"),
    "value": ("from {p}.lib import {n}", "h = {n}\n    h(*a, **kw)"),
    "string": ("import {p}.lib as m", 'getattr(m, "{n}")(*a, **kw)'),
    "module_value": ("import {p}.lib as m", "getattr(m, name)(*a, **kw)"),
    "config": ("", ""),  # a YAML file naming it: a builder by name may omit the device
}
PASSING = frozenset({"keyword", "position", "alias", "module", "from_package", "partial_bound"})
INITS = {"empty": "", "reexport": "from .lib import {n}\n", "star": "from .lib import *\n"}
D = "the caller's device"
# every value the unknown names may hold: `a` the positional arguments, `kw` the keywords
BINDINGS = [(a, kw) for a in ((1,), (1, D)) for kw in ({}, {"device": D})]
_COUNTER = itertools.count()


def library(name: str) -> str:
    record = "SEEN.append(str(device))"
    if name == "Loader":
        body = f'class Loader:\n    def __init__(self, x, device="cuda"):\n        {record}\n'
    else:
        body = f'def load(x, device="cuda"):\n    {record}\n'
    return f"SEEN = []\n\n\n{body}"


def write(
    root: Path, package: str, name: str, init: str, installable: bool, callers: list[list[str]]
) -> Path:
    (root / ".git").mkdir()
    if installable:
        (root / "setup.py").write_text("from setuptools import setup\n\nsetup()\n")
    (root / package).mkdir()
    (root / package / "__init__.py").write_text(INITS[init].format(n=name))
    lib = root / package / "lib.py"
    lib.write_text(library(name))
    for i, forms in enumerate(callers):
        lines = (FORMS[f][0].format(p=package, n=name).splitlines() for f in forms)
        imports = sorted({line for group in lines for line in group})
        calls = [FORMS[f][1].format(n=name) for f in forms if f != "config"]
        body = "".join(f"    {c}\n" for c in calls) + "    pass\n"
        head = "\n".join(imports)
        (root / f"run_{i}.py").write_text(f"{head}\n\n\ndef main(d, a, kw, name):\n{body}")
        if "config" in forms:
            (root / f"conf_{i}.yaml").write_text(f"target: {package}.lib.{name}\n")
    return lib


def expected_left_alone(init: str, installable: bool, callers: list[list[str]]) -> bool:
    uses = [f for forms in callers for f in forms]
    if installable:
        return False  # a module of an installable package: outside code may import it
    return bool(uses) and set(uses) <= PASSING


def default_ran(root: Path, package: str, name: str, callers: list[list[str]]) -> bool:
    """Whether the default ran for some value of ``a`` and ``kw`` (Python decides)."""
    sys.path.insert(0, str(root))
    try:
        lib = importlib.import_module(f"{package}.lib")
        for i in range(len(callers)):
            run = importlib.import_module(f"run_{i}")
            for a, kw in BINDINGS:
                run.main(D, a, kw, name)
            del sys.modules[f"run_{i}"]
        return any(seen.startswith("cuda") for seen in lib.SEEN)
    finally:
        sys.path.remove(str(root))
        for module in [m for m in sys.modules if m == package or m.startswith(f"{package}.")]:
            del sys.modules[module]


def reported(lib: Path) -> bool:
    source = lib.read_text()
    return bool(check_text(source, str(lib), ruleset_for(["TP101"], None)).findings)


CALLERS = st.lists(st.lists(st.sampled_from(sorted(FORMS)), max_size=3), min_size=1, max_size=3)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(("load", "Loader")), st.sampled_from(sorted(INITS)), st.booleans(), CALLERS)
@example("load", "empty", False, [["keyword"], ["module", "alias"]])
@example("Loader", "empty", False, [["position"], ["from_package"]])
@example("Loader", "empty", True, [["position"], ["from_package"]])
@example("load", "empty", False, [["partial_bound", "keyword"]])
@example("load", "reexport", False, [["keyword"]])
@example("load", "reexport", True, [["keyword"]])
@example("load", "star", False, [["keyword"]])
@example("load", "empty", False, [["keyword"], ["module_omitted"]])
@example("load", "empty", False, [["keyword"], ["kwargs"]])
@example("load", "empty", False, [["keyword"], ["partial_unbound"]])
@example("load", "empty", False, [["keyword"], ["value"]])
@example("load", "empty", False, [["keyword"], ["string"]])
@example("load", "empty", False, [["keyword"], ["module_value"]])
@example("load", "empty", False, [["keyword", "config"]])
@example("load", "empty", False, [[]])
def test_a_public_default_is_left_alone_only_when_no_call_can_run_it(
    name: str, init: str, installable: bool, callers: list[list[str]]
) -> None:
    package = f"w34pkg{next(_COUNTER)}"
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        lib = write(root, package, name, init, installable, callers)
        left_alone = not reported(lib)
        if left_alone:
            assert not default_ran(root, package, name, callers), callers  # sound
        assert left_alone == expected_left_alone(init, installable, callers), (init, callers)


def test_no_repository_keeps_the_finding(tmp_path: Path) -> None:
    """No ``.git`` above the file: its callers are unknown."""
    lib = write(tmp_path, "w34nogit", "load", "empty", False, [["keyword"]])
    (tmp_path / ".git").rmdir()
    assert reported(lib)


@pytest.mark.parametrize(
    "caller",
    [
        # a subclass, a registry, a rebinding, `global`, a file that does not parse
        "from {p}.lib import Loader\n\n\nclass Sub(Loader):\n    pass\n\n\nLoader(1, device=d)\n",
        "from {p}.lib import Loader\n\nREGISTRY = {{'l': Loader}}\nLoader(1, device=d)\n",
        "from {p} import lib\n\nlib.Loader = None\nlib.Loader(1, device=d)\n",
        "from {p}.lib import Loader\n\n\ndef f():\n    global Loader\n    Loader(1, d)\n",
        "from {p}.lib import Loader\n\nLoader(1, device=d\n",
        # code in a string
        "from {p}.lib import Loader\n\nexec(SOURCE)\nLoader(1, device=d)\n",
        # a caller in a folder named `build` below the top (only the top's is a tool's copy)
        ("tools/build/run.py", "from {p}.lib import Loader\n\nLoader(1)\n"),
    ],
)
def test_other_mentions_keep_the_finding(tmp_path: Path, caller: str | tuple[str, str]) -> None:
    lib = write(tmp_path, "w34other", "Loader", "empty", False, [["keyword"]])
    where, text = caller if isinstance(caller, tuple) else ("run_1.py", caller)
    (tmp_path / where).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / where).write_text(text.format(p="w34other"))
    assert reported(lib)


def test_the_tops_build_folder_is_a_copy(tmp_path: Path) -> None:
    lib = write(tmp_path, "w34build", "load", "empty", False, [["keyword"]])
    (tmp_path / "build" / "lib").mkdir(parents=True)
    (tmp_path / "build" / "lib" / "copy.py").write_text(
        "from w34build.lib import load\n\nload(1)\n"
    )
    assert not reported(lib)


def test_annotations_and_type_tests_are_no_calls(tmp_path: Path) -> None:
    lib = write(tmp_path, "w34types", "Loader", "empty", False, [["keyword"]])
    (tmp_path / "run_1.py").write_text(
        "from w34types.lib import Loader\n\n\ndef f(x: Loader, d) -> Loader:\n"
        "    assert isinstance(x, Loader)\n    return Loader(1, d)\n"
    )
    assert not reported(lib)
    (tmp_path / "notes.ipynb").write_text('{"cells": ["Loader(1)"]}')
    assert reported(lib)


def test_an_edit_elsewhere_is_seen_by_the_next_check(tmp_path: Path) -> None:
    """The answer rests on the other files: a call added without the device is seen."""
    lib = write(tmp_path, "w34edit", "load", "empty", False, [["keyword"]])
    assert not reported(lib)
    (tmp_path / "run_9.py").write_text("from w34edit.lib import load\n\nload(1)\n")
    assert reported(lib)


def test_a_file_below_a_packaging_file_is_a_library(tmp_path: Path) -> None:
    """``examples/qa/utils.py`` in no package, a ``setup.py`` above that names no packages
    (setuptools discovers them itself): the file may be installed."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "examples" / "qa").mkdir(parents=True)
    lib = tmp_path / "examples" / "qa" / "utils.py"
    lib.write_text(library("load"))
    (tmp_path / "examples" / "qa" / "run.py").write_text("from utils import load\n\nload(1, d)\n")
    assert not reported(lib)
    (tmp_path / "setup.py").write_text("from setuptools import setup\n\nsetup()\n")
    assert reported(lib)


def test_a_src_layout_package_is_a_library(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'w34src'\n")
    (tmp_path / "src" / "w34src").mkdir(parents=True)
    (tmp_path / "src" / "w34src" / "__init__.py").write_text("")
    lib = tmp_path / "src" / "w34src" / "lib.py"
    lib.write_text(library("load"))
    (tmp_path / "run.py").write_text("from w34src.lib import load\n\nload(1, d)\n")
    assert reported(lib)


@pytest.mark.parametrize("where", ["", "examples/"])
def test_a_file_a_setup_py_does_not_ship_is_no_library(tmp_path: Path, where: str) -> None:
    """``examples/qa/utils.py`` below a ``setup.py`` shipping ``find_packages()`` (sample V,
    LoRA's ``examples/NLU/examples/research_projects``): no ``examples/__init__.py``, so it
    is not shipped and its calls decide; with an ``__init__.py`` in the first folder below
    the ``setup.py``, it is a library's again."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "examples" / "qa").mkdir(parents=True)
    lib = tmp_path / "examples" / "qa" / "utils.py"
    lib.write_text(library("load"))
    (tmp_path / "examples" / "qa" / "run.py").write_text("from utils import load\n\nload(1, d)\n")
    (tmp_path / f"{where}setup.py").write_text(
        "from setuptools import find_packages, setup\n\nsetup(packages=find_packages())\n"
    )
    assert not reported(lib)
    top = "examples" if where == "" else "examples/qa"  # the first folder below it
    (tmp_path / top / "__init__.py").write_text("")
    assert reported(lib)


# `vars(X)` in the defining module: each form binds X (and what builds it), then
# `vars(X)` is asked for the function by a name built at run time (no string spells it)
VARS_HEAD = "import argparse\nimport sys\n\n\nclass P:\n    def parse_args(self, a):\n"
VARS_HEAD += "        return sys.modules[__name__]\n\n\n"
VARS_FORMS = {
    "parsed": "parser = argparse.ArgumentParser()\nX = parser.parse_args([])\nN = vars(X)",
    "parsed_then_self": (
        "parser = argparse.ArgumentParser()\nX = parser.parse_args([])\n"
        "X = sys.modules[__name__]\nN = vars(X)"
    ),
    "parsed_then_for": (
        "parser = argparse.ArgumentParser()\nX = parser.parse_args([])\n"
        "for X in [sys.modules[__name__]]:\n    pass\nN = vars(X)"
    ),
    "self": "X = sys.modules[__name__]\nN = vars(X)",
    "other_parser": "parser = P()\nX = parser.parse_args([])\nN = vars(X)",
    "fake_argparse": (
        "import types\nargparse = types.SimpleNamespace(ArgumentParser=P)\n"
        "parser = argparse.ArgumentParser()\nX = parser.parse_args([])\nN = vars(X)"
    ),
    "parameter": "def peek(X):\n    return vars(X)\n\n\nN = peek(sys.modules[__name__])",
    "bare": "N = vars()",
    "tuple": "parser = argparse.ArgumentParser()\nX, _ = parser.parse_known_args([])\nN = vars(X)",
}
VARS_LEFT_ALONE = frozenset({"parsed"})  # by hand (`tuple` is no plain `X = ....parse_args()`)
VARS_NAMESPACES = frozenset({"parsed", "tuple"})  # by hand: `vars` reads a namespace


def vars_library(form: str) -> str:
    ask = 'F = N.get("lo" + "ad")\nif callable(F):\n    F(1)\n'
    return f"{library('load')}\n\n{VARS_HEAD}{VARS_FORMS[form]}\n{ask}"


@pytest.mark.parametrize("form", sorted(VARS_FORMS))
def test_vars_of_parsed_arguments_reads_no_names_of_the_module(form: str) -> None:
    """``run_pplm_example(**vars(args))`` (sample V, LoRA's ``run_pplm.py``): ``vars`` of an
    ``argparse`` namespace reaches none of the module's names. Python decides whether the
    default ran (the module imported); by hand, only ``parsed`` is left alone."""
    package = f"w34vars{next(_COUNTER)}"
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        lib = write(root, package, "load", "empty", False, [["keyword"]])
        lib.write_text(vars_library(form))
        left_alone = not reported(lib)
        ran = default_ran(root, package, "load", [["keyword"]])
        assert ran == (form not in VARS_NAMESPACES), form  # the harness reaches it
        if left_alone:
            assert not ran, form  # sound
        assert left_alone == (form in VARS_LEFT_ALONE), form
