"""Which modules a ``pyproject.toml`` with no ``setup.py`` may install
(``rules/_pyproject_packages.py``, asked by ``rules/_shipped.py``).

Held-out sample AD, pos 85 and 89: the fake-video refactor's ``pyproject.toml`` ships
``[tool.setuptools.packages.find] where = ["src"]``; its top-level ``experiments/`` is no
library's, so TP101 may follow the calls of its public functions across the repository.

A repository is drawn: ``src/lib`` (a package), ``src/ns`` (a folder with no
``__init__.py``), ``experiments`` (a package at the top), ``tools`` (no ``__init__.py``), a
top-level ``top.py``, and a ``pyproject.toml`` drawn from :data:`BACKENDS`, :data:`PACKAGES`,
:data:`PACKAGE_DIRS`, :data:`PY_MODULES`, :data:`EXTRAS`, maybe with a ``setup.cfg`` beside
it. Two oracles, written apart from the code: setuptools itself (sound direction: every
module its ``build_py`` builds from that configuration must be called shipped), and a
reference by hand from the drawn parameters (:func:`expected`).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from torchport.check.rules._shipped import shipped_module

setuptools = pytest.importorskip("setuptools")

TARGETS = ("src/lib/a.py", "src/ns/n.py", "experiments/e.py", "tools/t.py", "top.py")
BACKENDS = {"setuptools": 'build-backend = "setuptools.build_meta"\n', "none": "",
            "hatch": 'build-backend = "hatchling.build"\n'}  # fmt: skip
PACKAGES = {
    "absent": "",
    "list_lib": 'packages = ["lib"]\n',
    "find_src": '[tool.setuptools.packages.find]\nwhere = ["src"]\n',
    "find_src_plain": '[tool.setuptools.packages.find]\nwhere = ["src"]\nnamespaces = false\n',
    "find_top": "[tool.setuptools.packages.find]\n",
    "find_top_plain": "[tool.setuptools.packages.find]\nnamespaces = false\n",
    "find_include": '[tool.setuptools.packages.find]\nwhere = ["src"]\ninclude = ["lib*"]\n',
}
PACKAGE_DIRS = {"absent": "", "src": 'package-dir = {"" = "src"}\n'}
PY_MODULES = {"absent": "", "top": 'py-modules = ["top"]\n'}
EXTRAS = {"none": "", "data": 'data-files = {"share" = ["top.py"]}\n', "zip": "zip-safe = false\n"}
CONFIGS = {"none": None, "flake8": "[flake8]\nmax-line-length = 99\n",
           "options": "[options]\npackages = find:\n"}  # fmt: skip


def pyproject(backend: str, packages: str, package_dir: str, py_modules: str, extra: str) -> str:
    table = PACKAGE_DIRS[package_dir] + PY_MODULES[py_modules] + EXTRAS[extra]
    if packages == "list_lib":
        table = PACKAGES[packages] + table
    text = f'[build-system]\nrequires = ["setuptools>=61"]\n{BACKENDS[backend]}\n'
    text += '[project]\nname = "drawn"\nversion = "0.1"\n\n'
    text += f"[tool.setuptools]\n{table}\n"
    if packages not in ("absent", "list_lib"):
        text += PACKAGES[packages]
    return text


def build(root: Path, text: str, config: str) -> None:
    for folder in ("src/lib", "src/ns", "experiments", "tools"):
        (root / folder).mkdir(parents=True)
    for init in ("src/lib/__init__.py", "experiments/__init__.py"):
        (root / init).write_text("")
    for target in TARGETS:
        (root / target).write_text("X = 1\n")
    (root / "pyproject.toml").write_text(text)
    if CONFIGS[config] is not None:
        (root / "setup.cfg").write_text(str(CONFIGS[config]))


def expected(target: str, case: tuple[str, str, str, str, str, str]) -> bool:
    """By hand: what may ship, from the drawn parameters alone."""
    backend, packages, package_dir, py_modules, extra, config = case
    if backend == "hatch" or config == "options" or extra == "data" or packages == "absent":
        return True  # not read: anything may ship
    base = "src" if package_dir == "src" else ""
    if py_modules == "top" and target == os.path.join(base, "top.py"):
        return True  # a module's name rests under `package-dir`'s folder
    folder = os.path.dirname(target)
    found = {  # the top-level names each form finds, and where they are looked for
        "list_lib": ["lib"],
        "find_src": ["lib", "ns"],
        "find_include": ["lib", "ns"],  # `include` is not read: it only narrows
        "find_src_plain": ["lib"],
        "find_top": ["src", "experiments", "tools"],
        "find_top_plain": ["experiments"],
    }[packages]
    where = "src" if packages.startswith(("find_src", "find_include")) else ""
    tops = {base} if packages == "list_lib" else {where, base}
    shipped = {os.path.join(t, n) for t in tops for n in found}
    return any(folder == s or folder.startswith(f"{s}/") for s in shipped)


def setuptools_ships(root: Path, monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """The modules setuptools' ``build_py`` builds from the ``pyproject.toml`` (empty where
    setuptools refuses it)."""
    from setuptools.config.pyprojecttoml import apply_configuration
    from setuptools.dist import Distribution

    with monkeypatch.context() as patch:
        patch.chdir(root)
        try:
            dist = apply_configuration(Distribution(), "pyproject.toml")
            dist.script_name = "setup.py"
            command = dist.get_command_obj("build_py")
            command.ensure_finalized()
            found = command.find_all_modules()
        except Exception:  # setuptools refuses the drawn configuration
            return set()
    return {os.path.normpath(f) for _, _, f in found}


CASES = st.tuples(
    st.sampled_from(sorted(BACKENDS)),
    st.sampled_from(sorted(PACKAGES)),
    st.sampled_from(sorted(PACKAGE_DIRS)),
    st.sampled_from(sorted(PY_MODULES)),
    st.sampled_from(sorted(EXTRAS)),
    st.sampled_from(sorted(CONFIGS)),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(CASES)
@example(("setuptools", "find_src", "absent", "absent", "none", "none"))  # the refactor's
@example(("setuptools", "find_src", "src", "absent", "none", "none"))
@example(("setuptools", "find_top_plain", "absent", "top", "none", "none"))
@example(("setuptools", "find_src", "absent", "absent", "data", "none"))
@example(("setuptools", "find_src", "absent", "absent", "none", "options"))
@example(("hatch", "find_src", "absent", "absent", "none", "none"))
@example(("setuptools", "absent", "absent", "absent", "none", "none"))
def test_what_a_pyproject_ships(case: tuple[str, str, str, str, str, str]) -> None:
    text = pyproject(*case[:5])
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        build(root, text, case[5])
        answers = {t: shipped_module(str(root / t), str(root)) for t in TARGETS}
        if case[0] != "hatch":
            with pytest.MonkeyPatch.context() as patch:
                for built in setuptools_ships(root, patch):
                    if built in answers:
                        assert answers[built], (built, text)  # sound: setuptools ships it
        for target, answer in answers.items():
            assert answer == expected(target, case), (target, text, case[5])


@pytest.mark.parametrize("text", ["not toml [", "[tool.setuptools]\npackages = 'lib'\n"])
def test_a_pyproject_not_read_may_ship_anything(tmp_path: Path, text: str) -> None:
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "e.py").write_text("X = 1\n")
    (tmp_path / "pyproject.toml").write_text(text)
    assert shipped_module(str(tmp_path / "experiments" / "e.py"), str(tmp_path))
