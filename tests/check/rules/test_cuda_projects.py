"""Sample R's largest class: CUDA named in code that needs CUDA anyway (`rules/_cuda_projects.py`).

llm-awq's ``tinychat``, MambaVision and nvdiffrast's samples hard-code CUDA in modules that
import a CUDA-only engine (their own extension, ``mamba_ssm``, ``nvdiffrast``): correct, but
of low value (61 of TP101's 82 rows of R). Generated checkouts draw what the project's
``setup.py`` builds (a ``CUDAExtension`` by name, the same name also a ``CppExtension``, only
a ``CppExtension``, an extension class picked through a variable), where that ``setup.py``
is, how the checkout is marked (``.git`` or a top ``setup.py``), and how the module gets
the name (a top-level import in three spellings, an ``if``/``else``, or optional: under
``try``, inside a function, an ``if`` without ``else``). The oracle: the tables below,
marked by hand, and the rule written out in :func:`_needs`: a default run leaves the
module's ``torch.cuda.manual_seed`` (TP402, a rule naming CUDA that is on by default; TP101
is off by default since samples A-T) alone exactly when it surely imports a CUDA-only
package or an extension built only as ``CUDAExtension``, or compiles ``.cu`` sources
itself; a rule that does not name CUDA (TP307) and a run that names TP402 report it all
the same.
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


# What setup.py builds under the name `engine`, and whether that is CUDA-only.
BUILDS = {
    "ext_modules = [CUDAExtension('engine', ['k.cu'])]": True,
    "ext_modules = [CUDAExtension(name='engine', sources=['k.cu'])]": True,
    "ext_modules = [CUDAExtension('engine', ['k.cu']), CppExtension('engine', ['k.cpp'])]": False,
    "ext_modules = [CppExtension('engine', ['k.cpp'])]": False,
    "Ext = CUDAExtension if CUDA else CppExtension\next_modules = [Ext('engine', ['k.cu'])]": False,
    "ext_modules = [CUDAExtension('other_engine', ['k.cu'])]": False,
}
# How the module gets `{name}`, and whether it surely imports it at its top level.
SPELLINGS = {
    "import {name}": True,
    "from {name} import kernel": True,
    "import {name} as kernels": True,
    "try:\n    import {name}\nexcept ImportError:\n    kernels = None": False,
    "def load():\n    import {name}": False,
    "if FLAG:\n    import {name}": False,
}
# What the module imports: the project's extension, a CUDA-only package, or neither.
NAMES = {"engine": "extension", "mamba_ssm.ops": "package", "nvdiffrast.torch": "package"}
NAMES |= {"selective_scan_cuda": "package", "cutlass.cute": "package"}
NAMES |= {"numpy": "plain", "engine_cpu": "plain", "helpers.to_cuda": "plain"}
# A module that compiles its own kernel (True: CUDA sources), beside its imports.
COMPILES = {
    "": False,
    "from torch.utils.cpp_extension import load\nk = load('k', sources=['k.cpp', 'k.cu'])": True,
    "from torch.utils.cpp_extension import load_inline\nk = load_inline('k', cpp_sources=[''],"
    " cuda_sources=[''])": True,
    "from torch.utils.cpp_extension import load\nk = load('k', sources=['k.cpp'])": False,
    "SOURCES = ['k.cpp', 'k.cu']  # listed for a setup script, compiled elsewhere": False,
    "import torch.utils.cpp_extension\nSOURCES = ['k.cpp', 'k.cu']\n"
    "k = torch.utils.cpp_extension.load('k', sources=SOURCES)": True,
    "from mylib import load\nk = load('k', sources=['k.cpp', 'k.cu'])": False,
}
SETUPS = ("setup.py", "kernels/setup.py", "csrc/attention/setup.py")


def _needs(build: str, spelling: str, name: str, compiles: str) -> bool:
    """The oracle, from the tables: does the module need CUDA anyway?"""
    if COMPILES[compiles]:
        return True
    if not SPELLINGS[spelling]:
        return False
    kind = NAMES[name]
    return kind == "package" or (kind == "extension" and BUILDS[build])


def _write(root: Path, build: str, setup: str, marked: bool, module: str) -> Path:
    if marked:
        (root / ".git").mkdir()
    else:
        (root / "setup.py").write_text("from setuptools import setup\nsetup(name='x')\n")
    (root / setup).parent.mkdir(parents=True, exist_ok=True)
    head = "from torch.utils.cpp_extension import CUDAExtension, CppExtension\nCUDA = True\n"
    (root / setup).write_text(head + build + "\n")
    (root / "pkg").mkdir()
    path = root / "pkg" / "model.py"
    path.write_text(module)
    return path


def _module(spelling: str, name: str, compiles: str) -> str:
    lines = ["import torch", "FLAG = False", spelling.format(name=name), compiles]
    lines += ["torch.cuda.manual_seed(0)", 'state = torch.hub.load_state_dict_from_url("u")']
    return "\n".join(lines) + "\n"


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(
    build=st.sampled_from(sorted(BUILDS)),
    setup=st.sampled_from(SETUPS),
    marked=st.booleans(),
    spelling=st.sampled_from(sorted(SPELLINGS)),
    name=st.sampled_from(sorted(NAMES)),
    compiles=st.sampled_from(sorted(COMPILES)),
)
@example(
    build="ext_modules = [CUDAExtension('engine', ['k.cu'])]",
    setup="kernels/setup.py",
    marked=True,
    spelling="import {name}",
    name="engine",
    compiles="",
)
@example(
    build="Ext = CUDAExtension if CUDA else CppExtension\next_modules = [Ext('engine', ['k.cu'])]",
    setup="setup.py",
    marked=False,
    spelling="from {name} import kernel",
    name="engine",
    compiles="",
)
@example(
    build="ext_modules = [CppExtension('engine', ['k.cpp'])]",
    setup="setup.py",
    marked=True,
    spelling="try:\n    import {name}\nexcept ImportError:\n    kernels = None",
    name="mamba_ssm.ops",
    compiles="",
)
@example(
    build="ext_modules = [CUDAExtension('engine', ['k.cu']), CppExtension('engine', ['k.cpp'])]",
    setup="csrc/attention/setup.py",
    marked=True,
    spelling="import {name} as kernels",
    name="engine",
    compiles="",
)
@example(
    build="ext_modules = [CUDAExtension(name='engine', sources=['k.cu'])]",
    setup="setup.py",
    marked=True,
    spelling="def load():\n    import {name}",
    name="engine",
    compiles="SOURCES = ['k.cpp', 'k.cu']  # listed for a setup script, compiled elsewhere",
)
def test_a_default_run_leaves_cuda_in_code_that_needs_cuda_anyway(
    build: str,
    setup: str,
    marked: bool,
    spelling: str,
    name: str,
    compiles: str,
    tmp_path: Path,
) -> None:
    root = Path(tempfile.mkdtemp(dir=tmp_path))  # one folder per drawn checkout
    module = _write(root, build, setup, marked, _module(spelling, name, compiles))
    needs = _needs(build, spelling, name, compiles)
    default = {(f.code, f.line) for f in check_paths([module], jobs=1).findings}
    cuda_line = len(_module(spelling, name, compiles).splitlines()) - 1
    assert (("TP402", cuda_line) in default) != needs, (build, spelling, name, compiles, default)
    assert ("TP307", cuda_line + 1) in default  # a rule that does not name CUDA: unchanged
    named = check_paths([module], extend_select=["TP402"], jobs=1).findings
    assert ("TP402", cuda_line) in {(f.code, f.line) for f in named}


def test_both_arms_of_an_if_importing_a_cuda_only_package_count(tmp_path: Path) -> None:
    """``if``/``else`` whose every arm imports a CUDA-only package: needed either way."""
    arms = "if FLAG:\n    import mamba_ssm\nelse:\n    import causal_conv1d\n"
    one = "if FLAG:\n    import mamba_ssm\nelse:\n    import numpy\n"
    for imports, needs in ((arms, True), (one, False)):
        module = tmp_path / ("arms.py" if needs else "one.py")
        module.write_text("import torch\nFLAG = True\n" + imports + "torch.cuda.manual_seed(0)\n")
        found = [f.code for f in check_paths([module], jobs=1).findings]
        assert ("TP402" in found) != needs, (imports, found)


def test_a_helper_named_for_cuda_is_no_cuda_engine(tmp_path: Path) -> None:
    """``from nnunet.utilities.to_torch import to_cuda`` imports a helper function, not an
    extension: round 5d's port commit changed the ``.cuda()`` of its importers."""
    for imports, needs in (
        ("from helpers.to_torch import to_cuda", False),
        ("import helpers.to_torch as to_cuda", False),
        ("import flash_attn_2_cuda", True),
        ("from selective_scan_cuda import fwd", True),
    ):
        module = tmp_path / f"m{len(imports)}.py"
        module.write_text(f"import torch\n{imports}\ntorch.cuda.manual_seed(0)\n")
        found = [f.code for f in check_paths([module], jobs=1).findings]
        assert ("TP402" in found) != needs, (imports, found)
