"""A default run leaves the hard-coded device rules out of a function nothing in its repository
names (issue 34, class (e): 3DDFA's ``utils/io._load_tensor``; ``rules/_unused_code.py``).

The invariant: a default run drops such a finding only if the module-level function holding it
is spelled nowhere in the repository but at its ``def`` (any text file: code, strings, configs,
documents), is plain (not decorated, not a dunder, not ``test*``), and its module is neither
installable, nor a tool's file, nor reached by a string. Repositories are drawn: a module
``pkg/lib.py`` (or a ``hubconf.py``/``conftest.py``) holding a function with ``x.cuda()``
(or the same in a class's method), drawn features of it (a decorator, a ``test`` name), of
its module (``globals()``, ``fire.Fire()``, ``__all__``), of the repository (a ``setup.py``,
no ``.git``) and zero to three mentions elsewhere drawn from :data:`MENTIONS`. Two oracles,
written apart from the rule: a brute-force reference over the drawn features
(:func:`expected_left`), and Python itself: every Python file of the repository is run as
``__main__`` and every function it defines is called, and a function a default run leaves
out must never have run.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import itertools
import runpy
import sys
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

# mention -> (file, text); `{n}` the function's name
MENTIONS = {
    "call_beside": (
        "pkg/lib.py",
        "\n\nif __name__ == '__main__':\n    {n}(CUDA)\n",
    ),
    "call_elsewhere": ("run.py", "from pkg.lib import {n}\n\n\ndef main():\n    {n}([])\n"),
    "module_call": ("run.py", "import pkg.lib as m\n\n\ndef main():\n    m.{n}([])\n"),
    "value": ("run.py", "from pkg import lib\n\nTABLE = {{'x': lib.{n}}}\n"),
    "string": ("run.py", "from pkg import lib\n\n\ndef main():\n    getattr(lib, '{n}')([])\n"),
    "by_name": ("run.py", "from pkg import lib\n\n\ndef main(a='{n}'):\n    getattr(lib, a)([])\n"),
    "config": ("conf.yaml", "model:\n  _target_: pkg.lib.{n}\n"),
    "readme": ("README.md", "Call `{n}(x)` to load.\n"),
    "comment": ("run.py", "# {n} is kept for later\n"),
    "notebook": ("demo.ipynb", '{{"cells": [{{"source": ["{n}(x)"]}}]}}\n'),
    "shell": ("run.sh", "python -c 'from pkg.lib import {n}; {n}([])'\n"),
    "module_passed": ("run.py", "import pkg.lib as m\n\n\ndef main(a):\n    vars(m)[a]([])\n"),
    "module_attr": ("run.py", "import pkg.lib as m\n\n\ndef main():\n    m.RAN.clear()\n"),
    "other_getattr": ("run.py", "import pkg.lib as lib\n\n\ndef main(a):\n    getattr(lib, a)\n"),
}
NOT_KEEPING = frozenset({"module_attr"})  # `m.RAN`: the module's other names only
# module features: text added to pkg/lib.py
OWN = {
    "plain": "",
    "all": "__all__ = ['{n}']\n",
    "globals": "\n\ndef pick(a):\n    return globals()[a]\n",
    "fire": "\n\nif __name__ == '__main__':\n    import fire\n    fire.Fire()\n",
}
_COUNT = itertools.count()


def lib_source(name: str, decorated: bool, method: bool, own: str) -> str:
    head = "import types\n\nRAN = []\nCUDA = types.SimpleNamespace(cuda=int)\n\n\n"
    head += "def mark(f):\n    return f\n\n\n"
    deco = "@mark\n" if decorated else ""
    if method:
        body = f"class Holder:\n    def {name}(self, x):\n        RAN.append(1)\n"
        body += "        return x.cuda()\n"
    else:
        body = f"{deco}def {name}(x):\n    RAN.append(1)\n    return x.cuda()\n"
    return head + body + OWN[own].format(n=name)


def write(
    root: Path,
    name: str,
    *,
    file: str,
    decorated: bool,
    method: bool,
    own: str,
    git: bool,
    installable: bool,
    mentions: list[str],
) -> Path:
    if git:
        (root / ".git").mkdir()
    if installable:
        (root / "setup.py").write_text("from setuptools import setup\n\nsetup()\n")
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    lib = root / "pkg" / file
    lib.write_text(lib_source(name, decorated, method, own))
    for mention in mentions:
        where, text = MENTIONS[mention]
        if where == "pkg/lib.py":
            where = f"pkg/{file}"
        path = root / where
        path.parent.mkdir(parents=True, exist_ok=True)
        old = path.read_text() if path.exists() else ""
        path.write_text(old + "\n" + text.format(n=name))
    return lib


def expected_left(
    name: str,
    file: str,
    decorated: bool,
    method: bool,
    own: str,
    git: bool,
    installable: bool,
    mentions: list[str],
) -> bool:
    """The reference: whether a default run leaves the finding out (the module docstring)."""
    if not git or installable or method or decorated or file != "lib.py":
        return False
    if name.startswith("test") or own != "plain":
        return False  # a test runner's name, or the module reaches its names by a string
    # every mention of the name, whatever its form, keeps it; of the module, a use as a value
    return set(mentions) <= NOT_KEEPING


def default_findings(lib: Path) -> int:
    return len(check_text(lib.read_text(), str(lib), ruleset_for(None, None)).findings)


def named_findings(lib: Path) -> int:
    return len(check_text(lib.read_text(), str(lib), ruleset_for(["TP101"], None)).findings)


class _Tensor:
    def cuda(self) -> _Tensor:
        return self


def ran_anywhere(root: Path, lib: Path) -> bool:
    """Python's answer: run every Python file as ``__main__`` and call the ``main`` each
    other file defines (with a stand-in argument); whether the drawn function ever ran."""
    ran = False
    sys.path.insert(0, str(root))
    try:
        for path in sorted(root.rglob("*.py")):
            if path.name == "setup.py":
                continue
            with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(Exception):
                found = runpy.run_path(str(path), run_name="__main__")
                ran = ran or (path == lib and bool(found.get("RAN")))
                main = found.get("main")
                if path != lib and inspect.isfunction(main):
                    params = inspect.signature(main).parameters
                    main(*[_Tensor() for p in params.values() if p.default is p.empty])
            for module in [m for m in sys.modules if m == "pkg" or m.startswith("pkg.")]:
                ran = ran or bool(getattr(sys.modules[module], "RAN", []))
                del sys.modules[module]
    finally:
        sys.path.remove(str(root))
    return ran


names = st.sampled_from(["_load_tensor", "drn_c_26", "test_loader", "build"])
features = st.fixed_dictionaries(
    {
        "name": names,
        "file": st.sampled_from(["lib.py", "lib.py", "hubconf.py"]),
        "decorated": st.booleans(),
        "method": st.booleans(),
        "own": st.sampled_from(sorted(OWN)),
        "git": st.booleans(),
        "installable": st.booleans(),
        "mentions": st.lists(st.sampled_from(sorted(MENTIONS)), max_size=3, unique=True),
    }
)
UNUSED = {
    "name": "_load_tensor",
    "file": "lib.py",
    "decorated": False,
    "method": False,
    "own": "plain",
    "git": True,
    "installable": False,
    "mentions": [],
}


@given(features)
@example(UNUSED)
@example({**UNUSED, "mentions": ["comment"]})
@example({**UNUSED, "mentions": ["other_getattr"]})
@example({**UNUSED, "mentions": ["call_beside"]})
@example({**UNUSED, "installable": True})
@example({**UNUSED, "own": "fire"})
@example({**UNUSED, "method": True})
@example({**UNUSED, "decorated": True})
@example({**UNUSED, "mentions": ["config"]})
@example({**UNUSED, "mentions": ["readme"]})
@example({**UNUSED, "own": "all"})
@example({**UNUSED, "name": "test_loader"})
@example({**UNUSED, "file": "hubconf.py"})
@example({**UNUSED, "git": False})
@example({**UNUSED, "mentions": ["module_attr"]})
@example({**UNUSED, "mentions": ["module_passed", "module_attr"]})
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_default_run_leaves_only_functions_nothing_names(drawn: dict) -> None:
    with tempfile.TemporaryDirectory(prefix=f"unused{next(_COUNT)}_") as folder:
        root = Path(folder)
        lib = write(root, **drawn)
        left = default_findings(lib) == 0
        assert named_findings(lib) == 1  # a run naming the rule reports it everywhere
        assert left == expected_left(**drawn)
        if left:
            assert not ran_anywhere(root, lib)


def test_the_oracle_sees_a_run_function(tmp_path: Path) -> None:
    """The dynamic oracle is no blind one: a function its repository calls did run."""
    lib = write(tmp_path, **{**UNUSED, "mentions": ["call_elsewhere"]})
    assert ran_anywhere(tmp_path, lib)
    beside = tmp_path / "beside"
    beside.mkdir()
    lib = write(beside, **{**UNUSED, "mentions": ["call_beside"]})
    assert ran_anywhere(beside, lib)


def test_other_rules_and_a_used_neighbour_stay(tmp_path: Path) -> None:
    """Only the hard-coded device rules leave; a used function of the same module stays."""
    (tmp_path / ".git").mkdir()
    lib = tmp_path / "lib.py"
    lib.write_text(
        "import torch\n\n\ndef unused(x):\n    return x.cuda()\n\n\n"
        "def used(x):\n    return x.cuda()\n\n\nused(1)\n"
    )
    found = check_text(lib.read_text(), str(lib), ruleset_for(None, None)).findings
    assert [(f.code, f.line) for f in found] == [("TP101", 9)]
    every = check_text(lib.read_text(), str(lib), ruleset_for(["ALL"], None)).findings
    assert ("TP101", 5) in [(f.code, f.line) for f in every]
