"""The names CUDA-only libraries' imports bind: the statements' answer is the scope pass's.

``cuda_only_names`` reads the imports the statement walk saw, with no scope pass.
The oracle is the scope pass's own import bindings, on generated programs that import
CUDA-only and other libraries every way and everywhere Python allows.
"""

from __future__ import annotations

import ast

from hypothesis import given
from hypothesis import strategies as st

from torchport.check._context import Context
from torchport.check.semantic._binding import BindingKind
from torchport.check.semantic._library_imports import cuda_only_names
from torchport.check.semantic._scope import ScopeMap

_CUDA_ONLY = ("tensorrt", "torch_tensorrt", "pycuda", "cupy", "cuda", "transformer_engine", "msamp")

IMPORTS = [
    "import cupy",
    "import cupy as cp",
    "import pycuda.driver as drv",
    "import pycuda.autoinit",
    "from cuda import cudart",
    "from cupy.cuda import Stream as S",
    "from cupy import *",
    "from . import cupy",
    "from .cupy import kernel",
    "from ..compat import torch",
    "import tensorrt as trt, numpy as np",
    "import torch.cuda",
    "from torch import cuda",
    "import numpy as cupy",
    "import transformer_engine.pytorch as te",
    "import torch_tensorrt",
    "import cupyx",
    "import msamp",
]


def _placed(statement: str, where: int) -> str:
    indented = statement.replace("\n", "\n    ")
    return [
        statement,
        f"try:\n    {indented}\nexcept ImportError:\n    pass",
        f"def f():\n    {indented}",
        f"class C:\n    {indented}",
        f"with ctx():\n    {indented}",
        f"match v:\n    case 1:\n        {indented}",
        f"if x:\n    pass\nelse:\n    {indented}",
        f"try:\n    pass\nexcept Exception:\n    {indented}",
        f"try:\n    pass\nfinally:\n    {indented}",
        f"while x:\n    {indented}",
        f"async def g():\n    async with c:\n        {indented}",
    ][where]


@st.composite
def programs(draw: st.DrawFn) -> str:
    parts = draw(
        st.lists(st.tuples(st.sampled_from(IMPORTS), st.integers(0, 10)), min_size=1, max_size=4)
    )
    return "\n".join(_placed(s, w) for s, w in parts) + "\n"


def _oracle(tree: ast.Module) -> frozenset[str]:
    names: set[str] = set()
    for scope in ScopeMap(tree).scopes.values():
        for name, bound in scope.bindings.items():
            for b in bound:
                target = b.qualified if b.kind is BindingKind.IMPORT else None
                if target is not None and target.partition(".")[0] in _CUDA_ONLY:
                    names.add(name)
    return frozenset(names)


@given(programs())
def test_cuda_only_names_are_the_scope_passs(source: str) -> None:
    tree = ast.parse(source)
    ctx = Context(source, "x.py", tree)
    assert cuda_only_names(ctx) == _oracle(tree), source
    assert ctx.built_scopes is None  # and no scope pass was needed


def test_cuda_only_names_finds_them() -> None:
    # the answer is not always empty (otherwise the test above holds trivially)
    source = "import cupy as cp\n\ndef f():\n    from cuda import cudart\n"
    tree = ast.parse(source)
    assert cuda_only_names(Context(source, "x.py", tree)) == {"cp", "cudart"} == _oracle(tree)
