"""Code that needs a GPU anyway by a kernel of its own: CUDA sources it compiles, or a Triton
kernel it defines (``rules/_cuda_projects.py`` asks both, on first use).

A module **compiles CUDA sources** when it calls ``torch.utils.cpp_extension.load`` or
``load_inline`` and holds CUDA sources (``cuda_sources=``, or a ``.cu``/``.cuh`` name anywhere in
it: nvdiffrast's ``ops.py`` lists its ``.cu`` files apart from the call); not ``torch.load`` nor
another ``load`` (:func:`compiles_cuda`). Its importers count too (``rules/_cuda_imports.py``).

A module **defines its own Triton kernel** when a statement of its top level (not inside a
function, a class, an ``if``, a ``try`` or a loop) is a function decorated with Triton's
``jit``, ``autotune`` or ``heuristics``, by any import (``import triton``, ``import triton as
tr``, ``from triton import jit``, ``triton.runtime``'s own), with or without arguments
(``@triton.autotune(configs=..., key=...)``) (:func:`defines_triton_kernel`). The module's top
level runs that decorator on every import, and the module holds a GPU kernel its own code
launches. A default run leaves the rules naming CUDA (``_select.CUDA_NAMING``) out of such a
module (``rules/_cuda_projects.needs_cuda_anyway``), as out of one importing a CUDA-only
package; a rule the run names reports there as everywhere. Its importers are not followed.

Measured over every judged row of samples A-AG (issue 34, branch a34ai, with each row's file
read at its pinned commit: 3,897 of 4,398 rows, every real row of a rule naming CUDA among
them): the modules defining their own Triton kernel hold 9 judged rows of rules naming CUDA,
8 judged low (a) (Reinforcement-Casino's sparse-Adam training scripts, 6 rows of AB and its
uniform draw; natural_language_autoencoders' FP8 dequantisation tool, 2 rows of AF) and **1
judged real**: ktransformers' ``convert_cpu_weights_ds4.py`` (sample Z), whose FP8 converter
launches the kernel while its AWQ converter moves weights to ``"cuda"`` without it. No row of
A-Y is in such a module (the default scope's figures do not move). The cost is said: Triton
also compiles for AMD GPUs (where the device is still ``"cuda"``) and Intel's XPU, so such a
module can run on an XPU once its hard-coded CUDA is ported; what a default run leaves there,
``--extend-select TP101`` (or the rule's code) shows, and the rules' pages say so.

Not signals: an import of Triton alone (fla and others import their Triton kernels from a
library that runs them on XPU too; a module may import it for a type or an optional fast
path), a kernel defined under an ``if``, a ``try`` or in a function (a fast path the module
may run without), ``torch.jit`` and Numba's ``jit``, a module importing a module that defines
a kernel (its importers are not followed: ``rules/_cuda_imports.py`` reads imported modules
for CUDA-only packages and extensions only).
"""

from __future__ import annotations

import ast

from torchport.check._context import Context

__all__ = ["compiles_cuda", "defines_triton_kernel"]

_LOADS = frozenset({"load", "load_inline"})
_EXTENSIONS = "torch.utils.cpp_extension"
# Triton's decorators that make (or wrap) a kernel, as qualified names
_KERNEL_DECORATORS = frozenset(
    {
        *("triton.jit", "triton.autotune", "triton.heuristics", "triton.runtime.jit.jit"),
        *("triton.runtime.autotune", "triton.runtime.heuristics"),
        *("triton.runtime.autotuner.autotune", "triton.runtime.autotuner.heuristics"),
    }
)


def defines_triton_kernel(ctx: Context) -> bool:
    """Whether the module's top level defines a function decorated by Triton's ``jit``,
    ``autotune`` or ``heuristics`` (the invariant above). A look at the text first."""
    if "triton" not in ctx.source:
        return False
    for stmt in ctx.tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
            _kernel_decorator(ctx, decorator) for decorator in stmt.decorator_list
        ):
            return True
    return False


def _kernel_decorator(ctx: Context, decorator: ast.expr) -> bool:
    """``@triton.jit``, ``@triton.autotune(...)``, ``@jit`` from triton: the called or named
    expression resolves, through the module's imports, to one of Triton's kernel decorators."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    if not isinstance(target, (ast.Name, ast.Attribute)):
        return False
    return ctx.qualname(target, at_module=True) in _KERNEL_DECORATORS


def compiles_cuda(ctx: Context) -> bool:
    """``torch.utils.cpp_extension.load``/``load_inline`` called, with CUDA sources in the
    module (above)."""
    calls, sources = False, False
    for node in ast.walk(ctx.tree):
        if isinstance(node, ast.Call):
            func = node.func
            tail = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if tail in _LOADS and ctx.qualname(func) == f"{_EXTENSIONS}.{tail}":
                calls = True
                sources = sources or any(kw.arg == "cuda_sources" for kw in node.keywords)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            sources = sources or node.value.endswith((".cu", ".cuh"))
    return calls and sources
