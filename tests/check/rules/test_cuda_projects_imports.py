"""A module whose top level surely imports a module of its own project that needs CUDA anyway
needs it too (``rules/_cuda_imports.py``; issue 34, branch n34i: sample AA's FoundationPose and
BundleSDF modules that ``from Utils import *``, where ``Utils.py`` imports ``nvdiffrast`` at its
top). Python runs the imported module's top level first: if that raises without CUDA, so does
the importer.

Two-module checkouts are drawn: what the imported module ``helpers`` does with a CUDA-only
package (imports it at its top, in a ``try`` going on without it, in a ``try`` raising again,
in a function, under an ``if``, or imports nothing of the kind), how the importer gets
``helpers`` (``import helpers``, ``from helpers import x``, ``from helpers import *``, ``from .
import helpers``, ``from pkg import helpers``, ``import pkg.helpers``, or the same under an
``if``, a ``try`` going on without it, a ``try`` raising again, in a function), where the two
files sit, and how the checkout is marked. The probe is the importer's
``torch.cuda.manual_seed(0)`` (TP402, a rule naming CUDA, on by default here) beside a rule that
does not name CUDA (TP307). The oracle is :func:`_needs`, the tables marked by hand: a default
run leaves the probe out exactly when the importer surely imports ``helpers`` and ``helpers``
surely imports the CUDA-only package at its top. A run naming TP402 reports it all the same.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.check.rules.default_probes import on_by_default
from torchport.check import check_paths


@pytest.fixture(autouse=True, scope="module")
def _probes_on_by_default() -> Iterator[None]:
    with on_by_default("TP307", "TP402"):
        yield


# What `helpers` holds, and whether its own top level needs CUDA anyway
HELPERS = {
    "top": ("import nvdiffrast.torch as dr\n", True),
    "top, from": ("from mamba_ssm import selective_scan_fn\n", True),
    "try, going on": ("try:\n    import nvdiffrast.torch as dr\nexcept ImportError:\n"
                      "    dr = None\n", False),
    "try, raising again": ("try:\n    import nvdiffrast.torch as dr\nexcept ImportError:\n"
                           "    print('install nvdiffrast')\n    raise\n", True),
    "in a function": ("def rasterize():\n    import nvdiffrast.torch as dr\n    return dr\n",
                      False),
    "under an if": ("import os\nif os.environ.get('GL'):\n    import nvdiffrast.torch as dr\n",
                    False),
    "nothing": ("import numpy as np\n", False),
}  # fmt: skip
HELPERS_TAIL = "\n\ndef x():\n    return 1\n"
# How the importer gets `helpers` ({line}: the statement), and whether surely at its top
FORMS = {
    "import helpers": ("import helpers\n", True),
    "from helpers import x": ("from helpers import x\n", True),
    "from helpers import *": ("from helpers import *\n", True),
    "from . import helpers": ("from . import helpers\n", True),
    "from .helpers import x": ("from .helpers import x\n", True),
    "from pkg import helpers": ("from pkg import helpers\n", True),
    "import pkg.helpers": ("import pkg.helpers\n", True),
    "if": ("if FLAG:\n    import helpers\n", False),
    "if/else": ("if FLAG:\n    import helpers\nelse:\n    helpers = None\n", False),
    "try, going on": ("try:\n    from helpers import *\nexcept ImportError:\n    pass\n", False),
    "try, raising again": ("try:\n    import helpers\nexcept ImportError:\n    raise\n", True),
    "in a function": ("def load():\n    import helpers\n    return helpers\n", False),
    "no import": ("import numpy\n", False),
}
# The forms that resolve only inside the package `pkg` (relative, or `pkg.` absolute)
PACKAGED = {"from . import helpers", "from .helpers import x", "from pkg import helpers"}
PACKAGED |= {"import pkg.helpers"}
LAYOUTS = ("flat", "package")  # both files at the checkout's top, or in `pkg/` beside


def _needs(helpers: str, form: str) -> bool:
    """The oracle, from the tables: does the importer need CUDA anyway?"""
    return HELPERS[helpers][1] and FORMS[form][1]


def _importer(form: str) -> str:
    lines = ["import torch", "FLAG = False", FORMS[form][0].rstrip("\n")]
    lines += ["torch.cuda.manual_seed(0)", 'state = torch.hub.load_state_dict_from_url("u")']
    return "\n".join(lines) + "\n"


def _write(root: Path, helpers: str, form: str, layout: str, marked: bool) -> Path:
    if marked:
        (root / ".git").mkdir()
    else:
        (root / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    folder = root
    if layout == "package" or form in PACKAGED:
        folder = root / "pkg"
        folder.mkdir()
        (folder / "__init__.py").write_text("")
    (folder / "helpers.py").write_text(HELPERS[helpers][0] + HELPERS_TAIL)
    path = folder / "train.py"
    path.write_text(_importer(form))
    return path


def _probe_line(form: str) -> int:
    return len(_importer(form).splitlines()) - 1


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(
    helpers=st.sampled_from(sorted(HELPERS)),
    form=st.sampled_from(sorted(FORMS)),
    layout=st.sampled_from(LAYOUTS),
    marked=st.booleans(),
)
@example(helpers="top", form="from helpers import *", layout="flat", marked=True)
@example(helpers="try, going on", form="import helpers", layout="flat", marked=True)
@example(helpers="in a function", form="from helpers import x", layout="package", marked=False)
@example(helpers="top", form="try, going on", layout="flat", marked=True)
@example(helpers="top", form="in a function", layout="package", marked=True)
@example(helpers="top, from", form="from . import helpers", layout="package", marked=True)
@example(helpers="try, raising again", form="try, raising again", layout="flat", marked=False)
def test_a_default_run_leaves_cuda_where_a_project_import_needs_it(
    helpers: str, form: str, layout: str, marked: bool, tmp_path: Path
) -> None:
    root = Path(tempfile.mkdtemp(dir=tmp_path))  # one folder per drawn checkout
    importer = _write(root, helpers, form, layout, marked)
    needs = _needs(helpers, form)
    line = _probe_line(form)
    default = {(f.code, f.line) for f in check_paths([importer], jobs=1).findings}
    assert (("TP402", line) in default) != needs, (helpers, form, layout, default)
    assert ("TP307", line + 1) in default  # a rule that does not name CUDA: unchanged
    named = check_paths([importer], extend_select=["TP402"], jobs=1).findings
    assert ("TP402", line) in {(f.code, f.line) for f in named}
    # the imported module's own probe is its own answer, not its importer's
    (importer.parent / "helpers.py").write_text(
        HELPERS[helpers][0] + "import torch\ntorch.cuda.manual_seed(0)\n"
    )
    own = {(f.code, f.line) for f in check_paths([importer.parent / "helpers.py"]).findings}
    probe = len(HELPERS[helpers][0].splitlines()) + 2
    assert (("TP402", probe) in own) != HELPERS[helpers][1], (helpers, own)


def test_one_level_only_and_a_cycle_ends(tmp_path: Path) -> None:
    """The imported module counts by its own statements: a module importing a module that
    imports a CUDA-only package is no sign for its importer (two levels), and modules
    importing each other end."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "kernels.py").write_text("import nvdiffrast.torch as dr\n")
    (tmp_path / "middle.py").write_text("from kernels import *\n")
    (tmp_path / "a.py").write_text("import b\nimport torch\ntorch.cuda.manual_seed(0)\n")
    (tmp_path / "b.py").write_text("import a\nimport torch\ntorch.cuda.manual_seed(0)\n")
    top = tmp_path / "train.py"
    top.write_text("import middle\nimport torch\ntorch.cuda.manual_seed(0)\n")
    found = {(Path(f.path).name, f.code) for f in check_paths([tmp_path], jobs=1).findings}
    assert ("middle.py", "TP402") not in found  # none of its own: a sign for its importers
    assert {("train.py", "TP402"), ("a.py", "TP402"), ("b.py", "TP402")} <= found


def test_a_module_outside_the_checkout_is_no_sign(tmp_path: Path) -> None:
    """Only a module of the importer's own checkout counts: a package the project view finds
    above the checkout's folder (``_package_above``) is some other code."""
    (tmp_path / "ext").mkdir()
    (tmp_path / "ext" / "__init__.py").write_text("")
    (tmp_path / "ext" / "kernels.py").write_text("import nvdiffrast.torch as dr\n")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "ext").mkdir()  # not a package: the import looks above for `ext`
    script = repo / "ext" / "train.py"
    script.write_text("import ext.kernels\nimport torch\ntorch.cuda.manual_seed(0)\n")
    beside = repo / "ext" / "kernels.py"
    found = {f.code for f in check_paths([script], jobs=1).findings}
    assert "TP402" in found
    beside.write_text("import nvdiffrast.torch as dr\n")  # now in the checkout, beside it
    (script).write_text("import kernels\nimport torch\ntorch.cuda.manual_seed(0)\n")
    assert "TP402" not in {f.code for f in check_paths([script], jobs=1).findings}


def test_the_check_cache_sees_the_imported_module_change(tmp_path: Path) -> None:
    """The importer's cached answer rests on the imported module: editing it (dropping its
    CUDA-only import) brings the importer's finding back."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text("[tool.torchport]\n")
    utils = tmp_path / "Utils.py"
    utils.write_text("import nvdiffrast.torch as dr\n")
    script = tmp_path / "train.py"
    script.write_text("from Utils import *\nimport torch\ntorch.cuda.manual_seed(0)\n")

    def codes() -> set[str]:
        result = check_paths([script], jobs=1, cache=True)
        return {f.code for f in result.findings}

    assert "TP402" not in codes()
    assert "TP402" not in codes()  # from the cache
    utils.write_text("import numpy as np\n")
    assert "TP402" in codes()
    utils.write_text("import nvdiffrast.torch as dr\n")
    assert "TP402" not in codes()


def test_the_imports_are_resolved_only_where_a_finding_is_at_stake(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Resolving a file's imports is asked only when a rule naming CUDA is about to report in
    it (``_select.default_reports``, asked whole only of a finding), once per file, never for
    every file: a file whose CUDA-naming candidates report nothing asks nothing."""
    from torchport.check.rules import _cuda_imports

    asked: list[str] = []
    real = _cuda_imports._imports_cuda_module

    def counted(ctx: object) -> bool:
        asked.append(str(getattr(ctx, "path", "")))
        return real(ctx)  # type: ignore[arg-type]

    monkeypatch.setattr(_cuda_imports, "_imports_cuda_module", counted)
    (tmp_path / ".git").mkdir()
    (tmp_path / "Utils.py").write_text("import nvdiffrast.torch as dr\n")
    quiet = tmp_path / "quiet.py"
    quiet.write_text(
        "from Utils import *\nimport torch\n"
        "device = torch.device('cpu')\nx = torch.zeros(1).to(device)\n"
    )
    loud = tmp_path / "loud.py"
    loud.write_text(
        "from Utils import *\nimport torch\ntorch.cuda.manual_seed(0)\ntorch.cuda.manual_seed(1)\n"
    )
    assert not check_paths([quiet], jobs=1).findings
    assert asked == []
    assert not [f for f in check_paths([loud], jobs=1).findings if f.code == "TP402"]
    assert [Path(p).name for p in asked] == ["loud.py"]  # once for the file, two findings
