"""A module importing its package's own compiled ``*_cuda`` extension by a relative import
needs CUDA anyway, as one importing a top-level ``*_cuda`` extension does
(``rules/_cuda_projects.py``; sample Y pos 5: NVIDIA TAO's ``pcdet/ops/iou3d_nms/
iou3d_nms_utils.py`` does ``from . import iou3d_nms_cuda``, which its ``setup.py`` builds as a
``CUDAExtension`` through a helper).

Generated packages draw the relative spelling, the extension's name, and what lies where the
name would be found (nothing: a checkout before its build; a built ``.so``; a Python module
or folder of that name; an ``__init__.py`` binding it; no ``__init__.py``). The oracle: the
tables below, marked by hand (a name ending in ``_cuda`` that no Python source there can be
is a compiled extension), observed through a default run's TP402 on the module's
``torch.cuda.manual_seed``, and TP307 on a line no CUDA gate touches.
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
    # the probes as on by default everywhere: what is left out must not hang on today's set
    with on_by_default("TP307", "TP402"):
        yield


# spelling -> (the folder, below the checkout, where the name is looked up; whether the
# module surely imports it at its top level)
SPELLINGS = {
    "from . import {ext}": ("pkg/sub", True),
    "from . import {ext} as kernels": ("pkg/sub", True),
    "from .{ext} import nms": ("pkg/sub", True),
    "from .ops import {ext}": ("pkg/sub/ops", True),
    "from .ops.{ext} import nms": ("pkg/sub/ops", True),
    "from .. import {ext}": ("pkg", True),
    "from .helpers import {ext}": ("pkg/sub", False),  # helpers.py: a function, maybe
    "try:\n    from . import {ext}\nexcept ImportError:\n    pass": ("pkg/sub", False),
    "def load():\n    from . import {ext}": ("pkg/sub", False),
}
# the extension's name -> whether a compiled module of that name is CUDA-only by its name
EXTS = {"iou3d_nms_cuda": True, "nms_cuda": True, "nms_cpu": False, "nms": False}
# what lies where the name is looked up -> whether only a compiled module can be it
BESIDE = {
    "nothing": True,
    "a built .so": True,
    "a module {ext}.py": False,
    "a folder {ext}/": False,
    "an __init__.py binding it": False,
    "no __init__.py": True,
}


def _write(root: Path, spelling: str, ext: str, beside: str) -> Path:
    (root / ".git").mkdir()
    for folder in ("pkg", "pkg/sub", "pkg/sub/ops"):
        (root / folder).mkdir()
        (root / folder / "__init__.py").write_text('"""A package."""\n')
    (root / "pkg/sub/helpers.py").write_text(f"def {ext}(x):\n    return x\n")
    where = root / SPELLINGS[spelling][0]
    if beside == "a built .so":
        (where / f"{ext}.cpython-312-x86_64-linux-gnu.so").write_bytes(b"\x7fELF")
    elif beside == "a module {ext}.py":
        (where / f"{ext}.py").write_text("def nms(x):\n    return x\n")
    elif beside == "a folder {ext}/":
        (where / ext).mkdir()
        (where / ext / "__init__.py").write_text("def nms(x):\n    return x\n")
    elif beside == "an __init__.py binding it":
        (where / "__init__.py").write_text(f"from .impl import nms as {ext}\n")
    elif beside == "no __init__.py":
        (where / "__init__.py").unlink()
    module = root / "pkg/sub/model.py"
    body = ["import torch", spelling.format(ext=ext), "torch.cuda.manual_seed(0)"]
    body += ['state = torch.hub.load_state_dict_from_url("u")']
    module.write_text("\n".join(body) + "\n")
    return module


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(
    spelling=st.sampled_from(sorted(SPELLINGS)),
    ext=st.sampled_from(sorted(EXTS)),
    beside=st.sampled_from(sorted(BESIDE)),
)
@example(spelling="from . import {ext}", ext="iou3d_nms_cuda", beside="nothing")  # pos 5
@example(spelling="from .helpers import {ext}", ext="nms_cuda", beside="nothing")
@example(spelling="from . import {ext}", ext="nms_cuda", beside="an __init__.py binding it")
@example(spelling="from .. import {ext}", ext="nms_cuda", beside="a module {ext}.py")
def test_a_relative_import_of_the_packages_cuda_extension_counts(
    spelling: str, ext: str, beside: str, tmp_path: Path
) -> None:
    root = Path(tempfile.mkdtemp(dir=tmp_path))  # one folder per drawn package
    module = _write(root, spelling, ext, beside)
    needs = SPELLINGS[spelling][1] and EXTS[ext] and BESIDE[beside]
    lines = module.read_text().splitlines()
    seed = lines.index("torch.cuda.manual_seed(0)") + 1
    default = {(f.code, f.line) for f in check_paths([module], jobs=1).findings}
    assert (("TP402", seed) in default) != needs, (spelling, ext, beside, default)
    assert ("TP307", seed + 1) in default  # a rule that does not name CUDA: unchanged


def test_the_package_init_itself_is_not_trusted(tmp_path: Path) -> None:
    """An ``__init__.py`` importing ``from . import nms_cuda`` may bind the name itself."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "pkg").mkdir()
    init = tmp_path / "pkg" / "__init__.py"
    init.write_text("import torch\nfrom . import nms_cuda\ntorch.cuda.manual_seed(0)\n")
    assert "TP402" in {f.code for f in check_paths([init], jobs=1).findings}


def test_a_block_importing_it_covers_the_lines_after(tmp_path: Path) -> None:
    """Inside a function, the lines after ``from . import nms_cuda`` run only once it did."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    module = tmp_path / "pkg" / "model.py"
    module.write_text(
        "import torch\n\n\ndef run():\n    torch.cuda.manual_seed(1)\n"
        "    from . import nms_cuda\n    torch.cuda.manual_seed(0)\n"
    )
    found = {(f.code, f.line) for f in check_paths([module], jobs=1).findings}
    assert ("TP402", 5) in found
    assert ("TP402", 7) not in found
