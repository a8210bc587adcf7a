"""Torch's names reached through the project's own compat module are torch's, however imported.

Found by branch g31s: with ``compat.py`` = ``from torch import load as L``, ``train.py`` doing
``from compat import *`` then ``L("w.pt")`` was ported, but ``from compat import L`` (``as M``,
``from .compat import L``, ``import compat as c`` then ``c.L``) got nothing, and the port said
nothing was left: a silent result. ``Context._read_named`` now binds those names as the star
import's are bound, through the same reader (``port/_star_imports.py``).

The oracle is apart from the resolver: the same script importing torch directly. The port of
the compat pair must equal the port of the direct script, line for line once the import lines
are set aside (and ``c.`` of a module alias dropped), with the same findings left. Two forms
also run, ported, on the simulated accelerator.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import in_a_child
from tests.preloaded import run_python
from torchport.check.port import port_text

# what the compat module binds: (role, the torch import it makes with the alias `{}`)
_BINDS = {
    "torch": "import torch as {}",
    "load": "from torch import load as {}",
    "nn": "from torch import nn as {}",
}
# the script's statements, each using some roles (`{torch}`: the torch alias's name)
_USES = (
    "model = {nn}.Linear(4, 2)",
    "x = {torch}.zeros(3, 4)",
    'w = {load}("w.pt")',
    "y = model(x)",
    "for i in range(2):\n    batch = {torch}.ones(2, 4)\n    out = model(batch)",
)
_NEEDS = ({"nn"}, {"torch"}, {"load"}, {"nn", "torch"}, {"nn", "torch"})
_FORMS = (
    "star", "name", "alias", "module", "relative", "two hops", "two hops, star",
    "submodule", "submodule alias", "relative submodule", "relative submodule alias",
)  # fmt: skip
# the forms reading torch's names as attributes of the compat module, and the prefix they use
_PREFIX = {
    "module": "cm.",
    "submodule": "compat.",  # `from pkg import compat`
    "submodule alias": "cm.",  # `from pkg import compat as cm`
    "relative submodule": "compat.",  # `from . import compat`
    "relative submodule alias": "cm.",  # `from . import compat as cm`
}
_IDENT = st.sampled_from(["T", "L", "N", "th", "ld", "nn2", "tt", "Lo"])


def _files(
    form: str, names: dict[str, str], local: dict[str, str], init: str = ""
) -> dict[str, str]:
    """The project's files (``pkg/train.py``'s imports only) for one import form."""
    compat = "\n".join(_BINDS[role].format(names[role]) for role in sorted(names)) + "\n"
    files = {"pkg/__init__.py": init, "pkg/compat.py": compat}
    if form == "star":
        head = "from pkg.compat import *"
    elif form in ("name", "alias", "relative"):
        source = ".compat" if form == "relative" else "pkg.compat"
        parts = [names[r] if names[r] == local[r] else f"{names[r]} as {local[r]}" for r in names]
        head = f"from {source} import " + ", ".join(parts)
    elif form == "module":
        head = "import pkg.compat as cm"
    elif form in _PREFIX:
        head = ("from . import compat" if "relative" in form else "from pkg import compat") + (
            " as cm" if form.endswith("alias") else ""
        )
    else:  # two hops: pkg/compat2.py re-exports compat's names
        inner = ", ".join(names[r] for r in sorted(names))
        star = form.endswith("star")
        files["pkg/compat2.py"] = f"from .compat import {'*' if star else inner}\n"
        head = "from pkg.compat2 import " + inner
    files["pkg/train.py"] = head
    return files


def _body(uses: list[int], local: dict[str, str], prefix: str = "") -> str:
    named = {role: prefix + name for role, name in local.items()}
    return "\n".join(_USES[i].format(**named) for i in uses) + "\n"


def _direct(local: dict[str, str]) -> str:
    """The imports of the same script written against torch itself."""
    lines = ["import torch"] + [_BINDS[r].format(local[r]) for r in sorted(local)]
    return "\n".join(lines) + "\n"


def _ported(root: Path, files: dict[str, str]) -> tuple[str, list[tuple[str, str]]]:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    path = root / "pkg" / "train.py"
    outcome = port_text(files["pkg/train.py"], str(path))
    assert not outcome.failures, outcome.failures
    lines = outcome.source.splitlines()
    left = sorted((f.code, lines[f.line - 1].strip()) for f in outcome.remaining)
    return outcome.source, left


def _code_lines(source: str) -> list[str]:
    """The ported script without its import lines and blank lines, ``cm.`` and ``compat.``
    dropped."""
    kept = [line for line in source.splitlines() if line.strip()]
    kept = [line for line in kept if not re.match(r"(import|from) \S", line)]
    return [line.replace("compat.", "").replace("cm.", "") for line in kept]


@settings(max_examples=30, deadline=None)
@given(
    form=st.sampled_from(_FORMS),
    uses=st.lists(st.integers(0, len(_USES) - 1), min_size=1, max_size=5),
    names=st.fixed_dictionaries({r: _IDENT for r in _BINDS}),
    renamed=st.booleans(),
    # the package's `__init__`: empty, or importing its compat submodule (c34s: with `from .
    # import compat` there, `from pkg import compat; compat.L(...)` was not followed: silent)
    init=st.sampled_from(["", "from . import compat\n", "from . import compat as compat\n"]),
)
def test_a_compat_bound_name_ports_as_the_direct_import(
    form: str, uses: list[int], names: dict[str, str], renamed: bool, init: str
) -> None:
    if len(set(names.values())) < len(names):
        names = {"torch": "T", "load": "L", "nn": "N"}
    needed = set().union(*(_NEEDS[i] for i in uses))
    names = {r: n for r, n in names.items() if r in needed}
    local = dict(names)
    if form == "alias" or (renamed and form in ("name", "relative")):
        local = {r: f"{n}_{r}" for r, n in names.items()}  # `from pkg.compat import L as L_load`
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        files = _files(form, names, local, init)
        files["pkg/train.py"] += "\n" + _body(uses, local, _PREFIX.get(form, ""))
        got, got_left = _ported(root / "compat", files)
        direct = {"pkg/__init__.py": "", "pkg/train.py": _direct(local) + _body(uses, local)}
        want, want_left = _ported(root / "direct", direct)
    assert _code_lines(got) == _code_lines(want), (form, got, want)
    strip = [(code, text.replace("compat.", "").replace("cm.", "")) for code, text in got_left]
    assert strip == want_left, (form, got_left, want_left)


_SIM = """
import json, os, runpy, sys
import torch
from torchport.testing import simulate_accelerator
roots = json.loads(open(sys.argv[1]).read())
simulate_accelerator()
out = []
for root in roots:
    sys.path.insert(0, root)
    try:
        found = runpy.run_module("pkg.train", run_name="__main__")
        out.append(str(found["y"].device))
    finally:
        sys.path.remove(root)
        for name in [m for m in sys.modules if m == "pkg" or m.startswith("pkg.")]:
            del sys.modules[name]
print(json.dumps(out))
"""


def test_ported_compat_pairs_run_on_the_accelerator() -> None:
    """By name (relative), by module alias, as a submodule of its package (``from pkg import
    compat``, ``from . import compat as cm``): the port places model and input on ``sim``."""
    names = {"torch": "T", "nn": "N"}
    body = [0, 1, 3]
    with tempfile.TemporaryDirectory() as tmp:
        roots = []
        for form in ("relative", "module", "submodule", "relative submodule alias"):
            root = Path(tmp) / form.replace(" ", "_")
            files = _files(form, names, names)
            files["pkg/train.py"] += "\n" + _body(body, names, _PREFIX.get(form, ""))
            ported, left = _ported(root, files)
            assert not left, left
            assert "device" in ported, ported  # the port did place something
            (root / "pkg" / "train.py").write_text(ported)
            roots.append(str(root))
        devices = in_a_child(_SIM, roots)
    assert devices == ["sim:0"] * 4, devices


# A package whose `__init__` binds torch's `nn` beside its own submodule `pkg/nn.py`: which one
# `pkg.nn` is depends on whether the submodule is imported (Python rebinds the package's name to
# it then). The oracle is Python: each program run as it is, printing what `nn` is there.
_SHADOW_INIT = "import torch\nfrom torch import nn\n"
_SHADOW_NN = (
    "class Linear:\n"
    "    def __init__(self, a, b):\n"
    "        self.shape = (a, b)\n\n"
    "    def __call__(self, x):\n"
    "        return x.sum(1)\n"
)
_SHADOWS = {  # the script's imports, how it names the package's `nn`
    "import pkg and pkg.nn": ("import pkg\nimport pkg.nn\n", "pkg.nn"),
    "import pkg.nn": ("import pkg.nn\n", "pkg.nn"),
    "from pkg import nn, after import pkg.nn": ("import pkg.nn\nfrom pkg import nn\n", "nn"),
    "from pkg import nn": ("from pkg import nn\n", "nn"),
    "import pkg": ("import pkg\n", "pkg.nn"),
}

_WHICH = """
import json, runpy, sys
root, = sys.argv[1:]
sys.path.insert(0, root)
found = runpy.run_path(root + "/train.py", run_name="__main__")
print(json.dumps(type(found["model"]).__module__))
"""


def _which_nn(root: Path) -> str:
    import json

    done = run_python(_WHICH, str(root))
    assert done.returncode == 0, done.stderr[-3000:]
    module: str = json.loads(done.stdout.strip().splitlines()[-1])
    return module


@pytest.mark.parametrize(
    "shape",
    # the script's own `pkg.nn` and the package's binding in the default run; the other
    # spellings in the slow run (`-m slow`): a child each
    [
        s if s in ("import pkg", "import pkg.nn") else pytest.param(s, marks=pytest.mark.slow)
        for s in sorted(_SHADOWS)
    ],
)
def test_a_package_name_shadowed_by_its_submodule_is_the_submodule(shape: str) -> None:
    """Where the script imports ``pkg.nn`` itself, ``pkg.nn`` is the project's module (on main
    the port took it for torch's ``nn`` and moved the project's ``Linear``: ``.to(device)`` on
    an object without one); where it does not, the package's own binding, torch's, which the
    port places. Python says which (the model's class's module, the script run as it is: it
    needs torch, so the checker's torch-less legs skip it)."""
    pytest.importorskip("torch")
    imports, nn = _SHADOWS[shape]
    body = f"{imports}import torch\n\nmodel = {nn}.Linear(4, 2)\nx = torch.zeros(3, 4)\n"
    body += "y = model(x)\n"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        files = {"pkg/__init__.py": _SHADOW_INIT, "pkg/nn.py": _SHADOW_NN, "train.py": body}
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        torch_s = _which_nn(root).startswith("torch.")
        outcome = port_text(body, str(root / "train.py"))
    assert not outcome.failures, outcome.failures
    moved = f"{nn}.Linear(4, 2).to(" in outcome.source
    assert moved == torch_s, (shape, torch_s, outcome.source)
