"""Which modules of a repository a ``setup.py`` may install (``rules/_shipped.py``).

A repository is drawn: top-level package ``pkg`` (with ``pkg/sub`` a subpackage and
``pkg/data`` a folder with no ``__init__.py``), ``src/lib`` a package under ``src``,
``examples/demo`` with or without ``__init__.py`` files, a top-level ``tool.py``, and a
``setup.py`` drawn from :data:`PACKAGES`, :data:`PACKAGE_DIRS`, :data:`IMPORTS`, with
``py_modules``, ``**kw`` or ``data_files``, and maybe a ``pyproject.toml`` or ``setup.cfg``
beside it (:data:`BESIDE`, each marked by hand whether it leaves what ships to the
``setup.py``). Two oracles, written apart from the code:

* setuptools itself (sound direction): the ``setup.py`` is run with ``setup`` caught, and
  setuptools' ``build_py`` lists the modules it builds from those arguments; every one must
  be called shipped;
* a reference from the drawn parameters alone, by hand (:func:`expected`): what may ship,
  including ``pkg/data`` (package data may carry it) and anything setuptools would discover
  by itself.

Mutants each fails (run by hand, 2026-11-30): ``_found`` always False (setuptools lists
``pkg/a.py``); ``_found`` without the ``__init__.py`` test (``examples/demo/run.py`` with no
``examples/__init__.py``, expected not shipped); ``_may_ship`` ignoring ``package_dir``
(``src/lib/l.py``); ``_may_ship`` ignoring a ``pyproject.toml`` beside it; ``_no_packaging``
not reading ``setup.cfg``'s sections; ``_no_packaging`` not reading ``[project]``;
``_resolved`` taking any ``find_packages`` for setuptools' (the file's own).
"""

from __future__ import annotations

import os
import runpy
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from torchport.check.rules._shipped import shipped_module

setuptools = pytest.importorskip("setuptools")

TARGETS = (
    "pkg/a.py",
    "pkg/data/d.py",
    "pkg/sub/s.py",
    "src/lib/l.py",
    "examples/demo/run.py",
    "examples/e.py",
    "tool.py",
)
# form -> the `packages=` argument (`{f}` the finder's prefix: `` or `setuptools.`)
PACKAGES = {
    "absent": None,
    "list_pkg": '["pkg", "pkg.sub"]',
    "list_lib": '["lib"]',
    "find": "{f}find_packages()",
    "find_src": '{f}find_packages("src")',
    "find_where_src": '{f}find_packages(where="src")',
    "find_exclude": '{f}find_packages(exclude=["examples", "examples.*"])',
    "namespace": "{f}find_namespace_packages()",
    "variable": "PACKAGES",
}
PACKAGE_DIRS = {"absent": None, "src": '{"": "src"}', "pkg": '{"pkg": "pkg"}'}
IMPORTS = {
    "from": "from setuptools import find_namespace_packages, find_packages, setup",
    "module": "import setuptools",
    "other": "from skbuild import setup\nfrom setuptools import find_packages",
}
EXTRAS = ("none", "py_modules", "kwargs", "data_files")
# a file beside setup.py -> (its name, its text, whether it leaves what ships to setup.py)
BESIDE = {
    "none": ("", "", True),
    "black": ("pyproject.toml", "[tool.black]\nline-length = 119\n", True),
    "build_system": (
        "pyproject.toml",
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n',
        True,
    ),
    "project": ("pyproject.toml", '[project]\nname = "w34"\n', False),
    "tool_setuptools": ("pyproject.toml", "[tool.setuptools]\npy-modules = []\n", False),
    "poetry": (
        "pyproject.toml",
        '[build-system]\nbuild-backend = "poetry.core.masonry.api"\n',
        False,
    ),
    "bad_toml": ("pyproject.toml", "[tool.black\n", False),
    "isort": ("setup.cfg", "[isort]\nline_length = 119\n\n[flake8]\nignore = E203\n", True),
    "options": ("setup.cfg", "[options]\npackages = find:\n", False),
    "metadata": ("setup.cfg", "[metadata]\nname = w34\n", False),
    "bad_cfg": ("setup.cfg", "no section\n", False),
}


def setup_py(packages: str, package_dir: str, imports: str, extra: str) -> str:
    prefix = "setuptools." if imports == "module" else ""
    call = "setuptools.setup" if imports == "module" else "setup"
    args = ['name="w34"']
    if PACKAGES[packages] is not None:
        args.append(f"packages={PACKAGES[packages].format(f=prefix)}")
    if PACKAGE_DIRS[package_dir] is not None:
        args.append(f"package_dir={PACKAGE_DIRS[package_dir]}")
    if extra == "py_modules":
        args.append('py_modules=["tool"]')
    elif extra == "kwargs":
        args.append("**EXTRA")
    elif extra == "data_files":
        args.append("data_files=[]")
    body = f"{IMPORTS[imports]}\n\nPACKAGES = ['pkg']\nEXTRA = {{}}\n\n{call}({', '.join(args)})\n"
    return body


def build(root: Path, examples_init: bool, demo_init: bool, text: str, beside: str) -> None:
    (root / ".git").mkdir()
    for target in TARGETS:
        (root / target).parent.mkdir(parents=True, exist_ok=True)
        (root / target).write_text("X = 1\n")
    for init in ("pkg", "pkg/sub", "src/lib"):
        (root / init / "__init__.py").write_text("")
    if examples_init:
        (root / "examples" / "__init__.py").write_text("")
    if demo_init:
        (root / "examples" / "demo" / "__init__.py").write_text("")
    (root / "setup.py").write_text(text)
    name, content, _ = BESIDE[beside]
    if name:
        (root / name).write_text(content)


def expected(
    target: str,
    examples_init: bool,
    packages: str,
    package_dir: str,
    imports: str,
    extra: str,
    beside: str,
) -> bool:
    """By hand: whether the drawn ``setup.py`` may ship ``target``."""
    if not BESIDE[beside][2] or imports == "other" or extra in ("kwargs", "data_files"):
        return True  # not read: may ship anything
    if packages in ("absent", "variable") or package_dir == "pkg":
        return True  # setuptools discovers packages itself; a name; a mapping not read
    base = "src/" if package_dir == "src" else ""
    if extra == "py_modules" and target == f"{base}tool.py":
        return True
    folder = target.rpartition("/")[0]
    if packages == "list_pkg":
        return folder.startswith(f"{base}pkg") if base else folder.startswith("pkg")
    if packages == "list_lib":
        return base == "src/" and folder == "src/lib"
    if packages == "namespace":
        return folder != ""  # every folder below the top (and `src`) is a package
    # find_packages: the top-level packages (and everything below them) under `where`,
    # and under `package_dir`'s folder
    tops = {"src" if packages in ("find_src", "find_where_src") else "", base.rstrip("/")}
    shipped = set()
    for top in tops:
        if top == "":
            shipped |= {"pkg"} | ({"examples"} if examples_init else set())
        else:
            shipped |= {"src/lib"}
    return any(folder == s or folder.startswith(f"{s}/") for s in shipped)


def setuptools_ships(root: Path, monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """The modules setuptools' ``build_py`` builds from the ``setup.py`` (run with ``setup``
    caught); empty when setuptools refuses (a package folder that is not there)."""
    from setuptools.dist import Distribution
    from setuptools.errors import BaseError

    caught: dict[str, object] = {}
    with monkeypatch.context() as patch:
        patch.chdir(root)
        patch.setattr(setuptools, "setup", lambda **kw: caught.update(kw))
        runpy.run_path(str(root / "setup.py"))
        dist = Distribution({k: v for k, v in caught.items() if k != "name"})
        dist.script_name = "setup.py"
        command = dist.get_command_obj("build_py")
        try:
            command.ensure_finalized()
            found = command.find_all_modules()
        except BaseError:  # setuptools refuses (a package folder not there)
            return set()
    return {os.path.normpath(f) for _, _, f in found}


CASES = st.tuples(
    st.booleans(),
    st.booleans(),
    st.sampled_from(sorted(PACKAGES)),
    st.sampled_from(sorted(PACKAGE_DIRS)),
    st.sampled_from(sorted(IMPORTS)),
    st.sampled_from(EXTRAS),
    st.sampled_from(sorted(BESIDE)),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(CASES)
@example((False, False, "find", "absent", "from", "none", "none"))  # LoRA's top setup.py
@example((False, False, "find_src", "src", "from", "none", "black"))  # LoRA's NLU/setup.py
@example((False, False, "find_src", "src", "from", "none", "isort"))
@example((True, False, "find", "absent", "from", "none", "none"))
@example((False, True, "list_pkg", "absent", "module", "py_modules", "none"))
@example((False, False, "find", "absent", "from", "none", "project"))
@example((False, False, "find", "absent", "from", "none", "options"))
@example((False, False, "list_lib", "src", "from", "none", "none"))
def test_what_a_setup_py_ships(case: tuple[bool, bool, str, str, str, str, str]) -> None:
    examples_init, demo_init, packages, package_dir, imports, extra, beside = case
    text = setup_py(packages, package_dir, imports, extra)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        build(root, examples_init, demo_init, text, beside)
        answers = {t: shipped_module(str(root / t), str(root)) for t in TARGETS}
        if imports != "other" and extra != "kwargs" and packages != "absent":
            with pytest.MonkeyPatch.context() as patch:
                for built in setuptools_ships(root, patch):
                    if built in answers:
                        assert answers[built], (built, text)  # sound: setuptools ships it
        for target, answer in answers.items():
            want = expected(target, examples_init, packages, package_dir, imports, extra, beside)
            assert answer == want, (target, text, beside)


def test_a_setup_py_above_is_read_too(tmp_path: Path) -> None:
    """Every packaging file from the module up to the top must ship none of it."""
    build(tmp_path, False, False, setup_py("find_src", "src", "from", "none"), "none")
    (tmp_path / "examples" / "setup.py").write_text(
        "from setuptools import setup\n\nsetup(name='w')\n"
    )
    assert shipped_module(str(tmp_path / "examples" / "demo" / "run.py"), str(tmp_path))
    (tmp_path / "examples" / "setup.py").write_text(
        "from setuptools import setup\n\nsetup(name='w', packages=['demo'])\n"
    )
    assert shipped_module(str(tmp_path / "examples" / "demo" / "run.py"), str(tmp_path))
    assert not shipped_module(str(tmp_path / "examples" / "e.py"), str(tmp_path))


@pytest.mark.parametrize(
    "text",
    [
        "",  # no setup call
        "from setuptools import setup\n\nsetup(name='a', packages=[])\nsetup(name='b')\n",
        "from setuptools import setup\n\nsetup('w', packages=[])\n",  # positional
        "from setuptools import setup\n\nsetup(packages=[NAME])\n",
        "from setuptools import setup\n\nsetup(packages=find_packages(WHERE))\n",
        "from setuptools import setup\n\nsetup(packages=finder())\n",
        "from setuptools import setup\n\nsetup(packages=[], py_modules=MODULES)\n",
        "from setuptools import setup\n\nsetup(packages=[], package_dir={'': SRC})\n",
        "from setuptools import setup\n\nsetup(packages=[\n",  # does not parse
        "from setuptools import setup as s\n\nsetup(packages=[])\n",  # another `setup`
        # the file's own `find_packages` or `setup`, whatever it returns or does
        "from setuptools import setup\n\n\ndef find_packages():\n    return ['examples']\n\n\n"
        "setup(packages=find_packages())\n",
        "from setuptools import find_packages, setup\n\nfind_packages = lambda: ['examples']\n"
        "setup(packages=find_packages())\n",
        "import setuptools\n\nsetuptools = object()\nsetuptools.setup(packages=[])\n",
    ],
)
def test_a_setup_py_not_read_may_ship_anything(tmp_path: Path, text: str) -> None:
    build(tmp_path, False, False, text, "none")
    assert shipped_module(str(tmp_path / "examples" / "e.py"), str(tmp_path))


def test_no_packaging_file_ships_nothing(tmp_path: Path) -> None:
    build(tmp_path, True, True, "", "none")
    (tmp_path / "setup.py").unlink()
    assert not shipped_module(str(tmp_path / "pkg" / "a.py"), str(tmp_path))
