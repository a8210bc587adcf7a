"""What a module's imports of accelerator libraries say about its code.

A CUDA-only library (TensorRT, CuPy, PyCUDA, ...) makes the statements that use
its names CUDA code by nature (:func:`uses_cuda_only_library`); a backend's
extension imported unconditionally (``import torch_npu``) makes the whole module
code for that backend (:func:`module_backend`, from the vocabulary's
``BACKEND_LIBRARIES``). Device checks around a node are :mod:`._guards`.
"""

from __future__ import annotations

import ast
import weakref

from torchport.check.semantic._devices import BACKEND_LIBRARIES

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check._context import Context

__all__ = ["cuda_only_names", "module_backend", "uses_cuda_only_library"]

# Libraries that exist only for NVIDIA GPUs: a module importing one is CUDA code by
# nature (a TensorRT engine, a CuPy kernel), and asking it to be portable is noise.
_CUDA_ONLY_LIBRARIES = frozenset(
    {"tensorrt", "torch_tensorrt", "torch2trt", "pycuda", "cupy", "cuda", "transformer_engine",
     "msamp"}
)  # fmt: skip
_TOP_IMPORTS: weakref.WeakKeyDictionary[Context, tuple[frozenset[str], frozenset[str]]] = (
    weakref.WeakKeyDictionary()
)


def cuda_only_names(ctx: Context) -> frozenset[str]:
    """Names that imports of a CUDA-only library bind anywhere in the module (once per file).

    TensorRT, PyCUDA, CuPy, cuda-python, TransformerEngine, MS-AMP: ``import
    cupy as cp`` binds ``cp``, ``from cupy import cuda`` binds ``cuda``. Only
    these names are CUDA code by nature; an import of such a library, even
    inside ``try``, says nothing about the rest of the module.
    """
    found = _CUDA_ONLY_NAMES.get(ctx)
    if found is None:
        # The import bindings of every scope are the statements' imports (the statement
        # walk's `imported`): no scope pass (tests/check/semantic/test_library_imports.py
        # holds the answer to the scope pass's).
        found = _CUDA_ONLY_NAMES[ctx] = frozenset(
            local
            for local, target in ctx.imported
            if target is not None and target.partition(".")[0] in _CUDA_ONLY_LIBRARIES
        )
    return found


_CUDA_ONLY_NAMES: weakref.WeakKeyDictionary[Context, frozenset[str]] = weakref.WeakKeyDictionary()


def uses_cuda_only_library(node: ast.AST, ctx: Context) -> bool:
    """Whether the statement holding ``node`` reads a name a CUDA-only library's import binds.

    ``cp.asarray(x.cuda())``, ``engine.execute(bindings=[t.data_ptr()], stream=cuda.Stream())``:
    CUDA interop, which exists only on NVIDIA GPUs. Asked per candidate finding.
    """
    names = cuda_only_names(ctx)
    if not names:
        return False
    stmt: ast.AST = node
    if not isinstance(node, ast.stmt):
        stmt = next((a for a in reversed(ctx.ancestors) if isinstance(a, ast.stmt)), node)
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return False  # a finding on a whole definition (its arguments): not interop
    parts: list[ast.AST] = [stmt]
    if isinstance(
        stmt, (ast.If, ast.While, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.Try)
    ):
        parts = [getattr(stmt, f) for f in ("test", "iter", "target") if hasattr(stmt, f)]
        parts += [i.context_expr for i in getattr(stmt, "items", ())]
    if any(isinstance(n, ast.Name) and n.id in names for part in parts for n in ast.walk(part)):
        return True
    return _feeds_cuda_only_library(stmt, names, ctx)


def _feeds_cuda_only_library(stmt: ast.AST, names: frozenset[str], ctx: Context) -> bool:
    """Whether ``stmt`` makes an input of a CUDA-only library in its own block.

    The block (an ``if``'s arm or a function's body, not the module) imports such a
    library itself (``if trt_file: from torch2trt import TRTModule`` then ``x =
    torch.ones(...).cuda()``), or ``stmt`` binds (or moves in place: ``model.cuda()``) a
    name that a later simple statement of the same block hands to one (``x = ...cuda()``
    then ``trt = torch2trt(model, [x])``).
    """
    parent = ctx.scopes.parent(stmt)
    block: list[ast.stmt] | None = None
    for field in ("body", "orelse", "finalbody"):
        stmts = getattr(parent, field, None)
        if isinstance(stmts, list) and any(s is stmt for s in stmts):
            block = stmts
    if block is None:
        return False
    if not isinstance(parent, ast.Module) and any(_imports_cuda_only(s) for s in block):
        return True
    bound = {
        t.id
        for t in (stmt.targets if isinstance(stmt, ast.Assign) else ())
        if isinstance(t, ast.Name)
    }
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        func = stmt.value.func  # `model.cuda()` then `torch2trt(model, [x])`: moved in place
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            bound.add(func.value.id)
    if not bound:
        return False
    after = block[next(i for i, s in enumerate(block) if s is stmt) + 1 :]
    for later in after:
        if isinstance(later, _COMPOUND):
            continue
        read = {
            sub.id
            for sub in ast.walk(later)
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load)
        }
        if read & bound and read & names:
            return True
    return False


_COMPOUND = (ast.If, ast.While, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.Try,
             ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)  # fmt: skip


def _imports_cuda_only(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Import):
        return any(a.name.partition(".")[0] in _CUDA_ONLY_LIBRARIES for a in stmt.names)
    if isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module:
        return stmt.module.partition(".")[0] in _CUDA_ONLY_LIBRARIES
    return False


def module_backend(ctx: Context) -> str | None:
    """The accelerator a module is written for, by the extension it cannot run without.

    ``import intel_extension_for_pytorch`` or ``import torch_npu`` as a
    statement of the module itself (not in a ``try`` or ``if``): the module
    fails to import anywhere else, so naming that device in it
    (``"xpu"``, ``"npu"``) is no portability problem. See
    :data:`~torchport.check.semantic._devices.BACKEND_LIBRARIES`.
    """
    for name in _top_imports(ctx)[0]:
        if name in BACKEND_LIBRARIES:
            return BACKEND_LIBRARIES[name]
    return None


def _top_imports(ctx: Context) -> tuple[frozenset[str], frozenset[str]]:
    """Top-level packages the module imports: unconditionally, and also in top-level try/if.

    Only those statements: walking the whole tree for the rare import inside a
    function costs too much. Computed once per file.
    """
    found = _TOP_IMPORTS.get(ctx)
    if found is None:
        always: set[str] = set()
        maybe: set[str] = set()
        for stmt in ctx.tree.body:
            nested: list[ast.stmt] = []
            if isinstance(stmt, (ast.Try, ast.If)):
                nested = stmt.body + stmt.orelse
                nested += [s for h in getattr(stmt, "handlers", ()) for s in h.body]
            for inner, into in ((stmt, always), *((s, maybe) for s in nested)):
                if isinstance(inner, ast.Import):
                    into.update(alias.name.partition(".")[0] for alias in inner.names)
                elif isinstance(inner, ast.ImportFrom) and not inner.level and inner.module:
                    into.add(inner.module.partition(".")[0])
        found = (frozenset(always), frozenset(always | maybe))
        _TOP_IMPORTS[ctx] = found
    return found
