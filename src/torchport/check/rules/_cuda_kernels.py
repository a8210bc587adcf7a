"""Code of a CUDA kernel: its tests' hard-coded CUDA (TP101), its ``x.is_cuda`` (TP103).

Sample Q (benchmarks/RESULTS.md): flash-attention's CuTe, Triton and compiled-extension
tests put their inputs on ``"cuda"`` with no gate; the kernel under test exists only for
the GPU, so another device cannot run the test at all (judged low, 40 rows).

The invariant: in test code (``_test_code.collected_by_a_test_runner``), TP101 leaves
CUDA alone when the test module, or a project module it imports at its top level (the
module a package's ``__init__`` re-exports the name from counts as that module; nothing
further), **is written around a GPU-only kernel**: it cannot be imported without one, or
its kernels run only on a GPU (Triton and CUTLASS import anywhere, but compile for a GPU
only). That is, one of its top-level
statements (not inside ``try``, a function or a class) is

* an import of Triton (``triton``, or a dotted name with a ``triton`` part:
  ``aiter.ops.triton...``), of CUTLASS's Python DSL (``cutlass``, ``cutlass.cute``), or of a
  compiled extension named for CUDA (a last part, or the ``as`` name, ending in ``_cuda``:
  ``flash_attn_2_cuda``, ``import fused_dense_lib as fused_dense_cuda``);
* an ``if``/``else`` whose every arm imports one (flash-attention picks its ROCm Triton or
  its CUDA extension: either way a GPU kernel);
* or, anywhere in the module, ``load_inline(..., cuda_sources=...)`` or a ``load``/
  ``load_inline`` given a ``.cu`` source file (compiled with nvcc on first use).

Not signals: a CUDA interop library (``semantic/_library_imports``: PyCUDA, CuPy; pytorch3d's
camera tests import its ``pycuda.gl`` rasterizer and test plain torch code: judged real,
sample M), an optional import (under ``try``, or an ``if`` without an ``else``), torch's
own modules (``torch.utils._triton``, ``torch._C``), a ``_C`` extension (pytorch3d's and
torchvision's have CPU kernels too: their tests' ``.cuda()`` was judged real), a custom op
namespace (``torch.ops.<ns>`` may have a CPU kernel), and a kernel two imports away
(openfold's tests reach its ``attn_core_inplace_cuda`` through ``model.primitives``, and
they test plain torch code: judged real). In such a module itself (test or not), unless
its kernel is Triton's (which compiles for ROCm and XPU too), ``x.is_cuda`` guards the
kernel: TP103's ``device.type != "cpu"`` would send MPS tensors to it (flash-attention's
``fused_mlp_func``, sample Q: noise). Computed once per file; a
project module's answer is kept per path and modification time for the process.
"""

from __future__ import annotations

import ast
from pathlib import Path

from torchport.check._context import Context
from torchport.check._listing import note

__all__ = ["imports_a_kernel", "kernel_import", "kernel_module", "tests_a_kernel"]

_KERNEL_LIBRARIES = frozenset({"cutlass"})  # beside Triton, asked apart (``triton=``)
_LOADS = frozenset({"load", "load_inline"})
_ANSWERS: dict[tuple[str, int], tuple[bool, tuple[tuple[str | None, int, tuple[str, ...]], ...]]]
_ANSWERS = {}  # a project module's (kernel?, its `from ... import` statements), by path


def kernel_import(dotted: str, *, triton: bool = True) -> bool:
    """Whether importing the dotted name needs a CUDA-only kernel (the list above); with
    ``triton`` False, Triton is not counted (it compiles for ROCm and XPU too)."""
    parts = dotted.split(".")
    if parts[0] in ("torch", ""):
        return False
    if triton and "triton" in parts:
        return True
    return parts[0] in _KERNEL_LIBRARIES or parts[-1].endswith("_cuda")


def _imported(stmt: ast.stmt) -> list[str]:
    """The dotted names an import reads, and the names it binds with ``as`` (``import
    fused_dense_lib as fused_dense_cuda``: the author's word that it is CUDA's)."""
    if isinstance(stmt, ast.Import):
        return [name for a in stmt.names for name in (a.name, a.asname or "")]
    if isinstance(stmt, ast.ImportFrom) and not stmt.level and stmt.module:
        names = [(f"{stmt.module}.{a.name}", a.asname or "") for a in stmt.names]
        return [stmt.module, *(name for pair in names for name in pair)]
    return []


def _arm(block: list[ast.stmt], triton: bool = True) -> bool:
    """A block that imports a kernel at its own top level, or an ``if``/``else`` that does."""
    return any(_kernel_statement(stmt, triton) for stmt in block)


def _kernel_statement(stmt: ast.stmt, triton: bool = True) -> bool:
    if any(kernel_import(name, triton=triton) for name in _imported(stmt)):
        return True
    if not (isinstance(stmt, ast.If) and stmt.orelse):
        return False
    # every arm a GPU kernel (flash-attention: ROCm's Triton or its CUDA extension); without
    # Triton, one arm at least is not Triton's (no arm then reaches XPU)
    either = _arm(stmt.body) and _arm(stmt.orelse)
    return either and (triton or _arm(stmt.body, False) or _arm(stmt.orelse, False))


def _compiles_cuda(call: ast.Call) -> bool:
    func = call.func
    tail = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if tail not in _LOADS:
        return False
    if any(kw.arg == "cuda_sources" for kw in call.keywords):
        return True
    values = [*call.args, *(kw.value for kw in call.keywords)]
    return any(
        isinstance(n, ast.Constant)
        and isinstance(n.value, str)
        and n.value.endswith((".cu", ".cuh"))
        for value in values
        for n in ast.walk(value)
    )


def imports_a_kernel(tree: ast.Module, *, triton: bool = True) -> bool:
    """Whether the module is written around a GPU-only kernel (the invariant); with
    ``triton`` False, one that is not Triton's (a CUDA extension, CUTLASS, nvcc sources)."""
    if any(_kernel_statement(stmt, triton) for stmt in tree.body):
        return True
    return any(isinstance(n, ast.Call) and _compiles_cuda(n) for n in ast.walk(tree))


def kernel_module(ctx: Context, *, triton: bool = True) -> bool:
    """Whether the file itself is written around a CUDA-only kernel (the list above), once;
    with ``triton`` False, a kernel that is not Triton's: there ``x.is_cuda`` is the
    kernel's precondition (TP103 leaves it; a Triton kernel also runs on ROCm and XPU, where
    ``x.is_cuda`` wrongly turns XPU away, so TP103 reports it)."""
    key = "cuda_kernels.module" if triton else "cuda_kernels.module_not_triton"
    found = ctx.memo.get(key)
    if found is None:
        found = ctx.memo[key] = imports_a_kernel(ctx.tree, triton=triton)
    return bool(found)


def tests_a_kernel(ctx: Context) -> bool:
    """Whether the file (test code, the caller's question) tests a CUDA kernel. Once per file."""
    found = ctx.memo.get("cuda_kernels.tests")
    if found is None:
        found = ctx.memo["cuda_kernels.tests"] = kernel_module(ctx) or _reaches(ctx)
    return bool(found)


def _reaches(ctx: Context) -> bool:
    if not ctx.path or ctx.path.startswith("<") or not Path(ctx.path).is_file():
        return False
    here = Path(ctx.path)
    for stmt in ctx.tree.body:
        targets: list[tuple[str | None, int, tuple[str, ...]]]
        if isinstance(stmt, ast.Import):
            targets = [(a.name, 0, ()) for a in stmt.names]
        elif isinstance(stmt, ast.ImportFrom):
            targets = [(stmt.module, stmt.level, tuple(a.name for a in stmt.names))]
        else:
            continue
        for module, level, names in targets:
            if _module_answer(here, module, level, names, reexport=True):
                return True
    return False


def _module_answer(
    importer: Path, module: str | None, level: int, names: tuple[str, ...], *, reexport: bool
) -> bool:
    """The project module's answer; through a package ``__init__`` to the modules it
    re-exports ``names`` from (one hop), and to a submodule a name may be."""
    found = _find(importer, module, level)
    if found is None:
        return False
    kernel, froms = _read(found)
    if kernel:
        return True
    if not (reexport and found.name == "__init__.py"):
        return False
    for name in names:  # `from kern import attn`: kern/__init__ says `from kern.ops import attn`
        sub = f"{module}.{name}" if module else name
        if _module_answer(importer, sub, level, (), reexport=False):
            return True
        for source, source_level, imported in froms:
            if name in imported and _module_answer(found, source, source_level, (), reexport=False):
                return True
    return False


def _find(importer: Path, module: str | None, level: int) -> Path | None:
    """The project's file of the import, as the port finds it, or else (a test folder that is
    no package importing the project's package: ``from flash_attn import ...`` in
    ``tests/``) the package of that name in the first folder up that holds one."""
    from torchport.check.port._module_files import find_module, module_in  # on first use

    found = find_module(importer, module, level)
    if found is not None or level or not module:
        return found
    head = module.partition(".")[0]
    for up in list(importer.parents)[1:_ABOVE]:
        note(up / head / "__init__.py")  # one appearing changes the answer (check/_listing.py)
        if (up / head / "__init__.py").is_file():
            return module_in(str(up), module, None)
    return None


_ABOVE = 8  # folders looked up for a package, as `port/_module_files.py` does


def _read(path: Path) -> tuple[bool, tuple[tuple[str | None, int, tuple[str, ...]], ...]]:
    note(path)
    try:
        key = (str(path), path.stat().st_ctime_ns)
    except OSError:
        return False, ()
    found = _ANSWERS.get(key)
    if found is None:
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        except (SyntaxError, ValueError):
            tree = ast.Module(body=[], type_ignores=[])
        froms = tuple(
            (s.module, s.level, tuple(a.asname or a.name for a in s.names))
            for s in tree.body
            if isinstance(s, ast.ImportFrom)
        )
        found = _ANSWERS[key] = (imports_a_kernel(tree), froms)
    return found
