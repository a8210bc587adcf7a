"""Code that needs CUDA anyway: it reaches a CUDA-only engine of its own or a CUDA-only package.

Sample R (benchmarks/RESULTS.md): 61 of TP101's 82 rows are correct but of low value, in
code that cannot run without CUDA whatever device it names: llm-awq's ``tinychat``
(its ``awq_inference_engine`` extension), MambaVision (``mamba_ssm``'s selective scan),
nvdiffrast's samples (its own rasterizer). Naming another accelerator there helps no
one; a default run leaves such code to the rules a user names (``_select.CUDA_NAMING``).

The invariant: a file **needs CUDA anyway** when one of its top-level statements (not
inside a function or a class; an ``if``/``else`` only when every arm does; a ``try`` only
when every ``except`` arm ends in ``raise``: ``rules/_import_gates.py``) imports

* a CUDA-only package (:data:`CUDA_PACKAGES`), CUTLASS, or a top-level extension named
  ``*_cuda`` (a module path: ``import selective_scan_cuda``, not ``from x import to_cuda``);
* or, by a relative import, its own package's extension named ``*_cuda`` (``from . import
  iou3d_nms_cuda``, ``from .ops.nms_cuda import nms``; sample Y's TAO ``pcdet`` builds it
  with a ``CUDAExtension`` through a helper): only where no Python source can be what the
  name is (no ``iou3d_nms_cuda.py`` nor folder beside, and the package's ``__init__.py``,
  not the file itself, never spells the name), so the import succeeds only with a compiled
  module, as the top-level ``*_cuda`` one does (``rules/_own_extensions.py``);
* or an extension its checkout builds for CUDA alone: a name given to ``CUDAExtension(...)``
  by that name in a ``setup.py`` of the checkout (the folder holding ``.git``, else the
  highest one up holding a ``setup.py`` or ``pyproject.toml``), and to no
  ``CppExtension(...)`` there (pytorch3d and detectron2 pick ``CppExtension`` without CUDA,
  through a variable: their kernels run on the CPU too, and their CUDA code was judged
  real);

or the module compiles CUDA sources itself (``load``/``load_inline`` called, and
``cuda_sources=`` or a ``.cu``/``.cuh`` name in it: nvdiffrast's ``ops.py``), or it surely
imports NVIDIA apex's ``amp`` or ``parallel`` at the top and calls their CUDA-only entry
(:data:`APEX_CUDA_CALLS`) on every run of the function (or module body) holding the call: not
behind an ``if``, ``try``, loop or ``with`` of its own; faiss's GPU entries too (``_faiss_gpu``).

apex's Python parts import without a GPU, so they count where used, not where imported
(NVIDIA/apex before ``cb65b8e``, which removed both in 2025): ``amp.initialize`` raises
unless every parameter is already on a CUDA device (``apex/amp/_initialize.py``,
``check_params_fp32`` -> ``warn_or_err``), and ``apex.parallel.DistributedDataParallel``
takes ``torch.cuda.current_stream()`` when built (``apex/parallel/distributed.py``).
Sample W's pytorch-distributed ``apex_distributed.py``, performer-pytorch's
``enc_dec_copy_apex.py`` (sample S) and jukebox's vendored apex DDP example (sample U) call
them so, and their ``.cuda()`` was judged low (a). A use behind a flag or a check (``if
args.fp16: amp.initialize(...)``; nnUNet's ``if amp is not None:`` and DDP built under ``if
not self.was_initialized:``, round 5d, whose port moved off apex and changed the ``.cuda()``
beside it) is a mode the program runs without, and is no sign for the file; an optional
import (under ``try``) is none either. ``apex.normalization`` keeps counting as a kernel part:
its modules' ``forward`` falls back to ``F.layer_norm`` for a CPU input, but their
``__init__`` imports ``fused_layer_norm_cuda``, an extension only a CUDA build of apex has.

So is a **helper of apex scripts**: a module that surely imports apex at its top, is no script
itself (no ``if __name__ == "__main__":`` block), and whose every importer in its repository
(one at least: ``rules/_importers.py``, the project view's resolution; any doubt, none) is a
script that surely imports apex at its top and surely calls :data:`APEX_CUDA_CALLS` when it
runs: in its module body, or in the function its ``__main__`` block calls (``main()``,
``sys.exit(main())``), in either with no ``return``, ``raise``, ``assert`` or ``sys.exit``
before the call, and, for the ``__main__`` route, with no importer of its own
(``rules/_apex_scripts.py``).
Sample X's fast_adversarial ``CIFAR10/utils.py`` (judged low (a), 3 rows), imported only by
``train_fgsm.py``, ``train_pgd.py`` and ``train_free.py``, whose ``main`` calls
``amp.initialize``. Its ``ImageNet/main_fast.py`` calls it under ``if configs.TRAIN.half and
not configs.evaluate:`` (an evaluation mode runs without it), so it and its
``lib/validation.py`` (no apex import of its own) stay reported.

A **line** needs CUDA anyway when its file does, or when a block holding it (a function's
body, an ``if`` arm, a ``try`` body: any level) surely imports one of those names before the
statement that holds the line (:func:`needs_cuda_here`): that line runs only once the import
succeeded. Vendored apex sets its ``amp_C`` overflow buffer so (``if
multi_tensor_applier.available: import amp_C`` then ``torch.cuda.IntTensor([0])``; sample U's
TP104 rows). A block's statement calling apex's CUDA-only entry (``if args.fp16: model, opt =
amp.initialize(model, opt)``) is such a sign for the statements after it in that block: they
run only once the call succeeded, on CUDA. So is a statement calling a function of a CUDA-only
package or kernel library (or of apex's kernel parts) however its import is guarded: the call
ran, so the import did (sample V's vendored ``TrainingArguments``: ``smdistributed`` imported
under a module-level ``if``, then ``local_rank = smp.local_rank()`` and ``torch.device("cuda",
local_rank)`` in one arm; issue 34, branch v34l). Only for a block: such a call is no sign for
the file. An import or call after the line, in another function, or in a ``try`` the line is
not in (the ``except`` arm, the code after it) is no such sign; a test class whose every
test is skipped unless one succeeded is one (``rules/_import_gates.py``).

So is a module surely importing a module of its own project that needs CUDA anyway by its
own statements (``rules/_cuda_imports.py``: one level, asked only where a finding is at stake;
the measure that decided it is there), and, not followed so, one defining its own Triton
kernel (``rules/_own_kernels.py``, with its cost). Not signals: an import of Triton (fla runs its
Triton kernels on XPU too), CUDA interop libraries (PyCUDA, CuPy: ``_cuda_kernels``), a ``_C``
or other extension built through a variable, an optional import (under a ``try`` going on
without it, for the code after it: a project that falls back when AutoGPTQ's kernels are
missing), TileLang (CUDA, ROCm and other back ends), the ``.cu`` files (a checkout's
``setup.py`` says what it builds). Computed once per file (``Context.memo``; the blocks walked
only when the source names a candidate); a checkout's extensions once per folder for the process.
"""

from __future__ import annotations

import ast
import os
from itertools import pairwise
from pathlib import Path

from torchport.check._context import Context
from torchport.check._listing import note, real_path, remembered
from torchport.check._patterns import found_naming, lazy_pattern
from torchport.check.rules._own_extensions import own_extension

__all__ = [
    "APEX_CUDA_CALLS",
    "CUDA_PACKAGES",
    "cuda_extensions",
    "needs_cuda_anyway",
    "needs_cuda_here",
]

# Packages that run only on an NVIDIA GPU (their own CUDA kernels, no other backend; a ROCm
# build, where one exists, still calls the device "cuda"). Issue 34's TP101 rows judged low
# (a) in other code: apex's ``amp_C`` kernels, AutoGPTQ (``auto_gptq``, its examples and
# OLMo's copy of them), TensorRT (efficientvit's engines), gsplat (nerfstudio's splatfacto).
# Not DeepSpeed (CPU, XPU and NPU accelerators), nor Triton or TileLang (other back ends).
CUDA_PACKAGES = frozenset(
    {
        *("mamba_ssm", "causal_conv1d", "selective_scan_cuda", "nvdiffrast"),
        *("amp_C", "auto_gptq", "tensorrt", "gsplat"),
        # SageMaker's distributed data and model parallel libraries: NCCL on NVIDIA GPU
        # instances only (sample V's vendored transformers, `smp.local_rank()` then
        # `torch.device("cuda", local_rank)`)
        "smdistributed",
        *("flashinfer", "flash_attn"),  # attention kernels (sample Z's ktransformers)
        # NVIDIA's robot simulators, on PhysX's GPU pipeline and RTX rendering (held-out sample
        # AK's depthbasedRL: 8 TP101/TP109 rows judged low, 0 real rows of samples A-AK)
        *("isaacgym", "isaaclab", "isaacsim"),
    }
)
# apex's parts built on its CUDA kernels (fused optimizers and norms, ``apex.contrib``), not
# ``apex.amp`` or ``apex.parallel``: Python a port replaces with torch's own (round 5d's held-out
# nnUNet commit moved off both and changed the `.cuda()` calls beside them)
_APEX_KERNELS = frozenset({"contrib", "optimizers", "normalization", "mlp", "fused_dense"})
# ... and apex.amp's and apex.parallel's CUDA-only entries: a sign where called on every run
APEX_CUDA_CALLS = frozenset(
    {
        "apex.amp.initialize",
        "apex.parallel.DistributedDataParallel",
        "apex.parallel.distributed.DistributedDataParallel",
    }
)
_ABOVE = 8  # folders looked up for the checkout's root
_FOLDERS = 5000  # folders read for setup.py files, at most, per checkout
_SKIPPED = frozenset({"node_modules", "site-packages", "__pycache__", "build", "dist"})
_KERNEL_LIBRARIES = frozenset({"cutlass"})  # CUTLASS's Python DSL compiles for NVIDIA GPUs
# (answer, paths noted): _listing.remembered's
_CHECKOUTS: dict[str, tuple[frozenset[str], dict[str, object]]] = {}  # by checkout folder
_FOLDERS_SEEN: dict[str, tuple[frozenset[str], dict[str, object]]] = {}  # by a file's folder
_SCRIPTS: dict[object, object] = {}  # _apex_script's answers, by path


def needs_cuda_anyway(ctx: Context) -> bool:
    """Whether the file needs CUDA anyway by its own statements (the invariant above; its
    project imports: ``rules/_cuda_imports.py``). Once per file."""
    found = ctx.memo.get("cuda_projects.needs")
    if found is None:
        found = ctx.memo["cuda_projects.needs"] = _needs(ctx) or _own_kernel(ctx, cpp=False)
    return bool(found)


def needs_cuda_here(ctx: Context, node: ast.AST | None = None) -> bool:
    """Whether ``node``, the node being checked, needs CUDA anyway: its file does, or a block
    holding it surely imports a CUDA-only name before it (the invariant above)."""
    if needs_cuda_anyway(ctx):
        return True
    if ctx.mentions("skipIf") or ctx.mentions("skipUnless"):  # a gated test class
        from torchport.check.rules._import_gates import in_a_gated_test  # on first use

        if in_a_gated_test(ctx, node, _imports_cuda, _sure_imports):
            return True
    inner = ctx.memo.get("cuda_projects.blocks")
    if not isinstance(inner, dict):
        inner = ctx.memo["cuda_projects.blocks"] = _blocks(ctx)
    if not inner:
        return False
    chain = [*ctx.ancestors, node]
    for holder, stmt in pairwise(chain):
        if not isinstance(stmt, ast.stmt):
            continue
        for field in _BLOCKS:
            block = getattr(holder, field, None)
            if not isinstance(block, list):
                continue
            first = inner.get(id(block))
            if first is not None and any(s is stmt for s in block[first + 1 :]):
                return True
    return False


_BLOCKS = ("body", "orelse", "finalbody")
# an import inside a block (indented): the module it names, a cheap look before the walk.
# Both looks run on "\n" + the source and start with that line break, where `^` with
# re.MULTILINE (the text's start, or after a "\n") would be: a pattern starting with a
# literal jumps from one line break to the next, `^` is tried at every character (the two
# looks: 2.4x less on detectron2's files, the same matches).
_INDENTED_IMPORT = lazy_pattern(r"\n[ \t]+(?:import|from)[ \t]+([\w.]+)")


def _blocks(ctx: Context) -> dict[int, int]:
    """The blocks below the module's own (a function's body, an arm, a ``try`` body) that
    surely import a CUDA-only name: ``id(block)`` -> the index of the first such import.
    Once per file, walked only when the source names a candidate at all."""
    text = "\n" + ctx.source  # (see _INDENTED_IMPORT)
    # (the pattern compiled only for a text with an indented line, which it needs)
    indented = _INDENTED_IMPORT.findall(text) if "\n " in text or "\n\t" in text else []
    apex = _may_call_apex(ctx) or "faiss" in ctx.source  # (faiss's GPU entries)
    package = found_naming(_CALLED_IMPORT, text, _CALLED_PACKAGES)  # (it needs a name)
    if not indented and not apex and not package:
        return {}
    relative = "_cuda" in ctx.source and any(n.startswith(".") for n in indented)
    built: frozenset[str] = frozenset()
    if ctx.path and not ctx.path.startswith("<") and Path(ctx.path).is_file():
        built = cuda_extensions(_folder_of(ctx.path))
    if (
        not apex
        and not package
        and not relative
        and not any(_package(n) or n.split(".")[0] in built for n in indented)
    ):
        return {}
    found: dict[int, int] = {}
    for holder in ast.walk(ctx.tree):
        # the module's own imports are the file's answer (needs_cuda_anyway); its own apex
        # calls are read here too (one after an import under `try`)
        imports = holder is not ctx.tree
        for field in _BLOCKS:
            block = getattr(holder, field, None)
            if not isinstance(block, list):
                continue
            for index, stmt in enumerate(block):
                if (
                    imports
                    and isinstance(stmt, (ast.Import, ast.ImportFrom, ast.If, ast.Try, ast.TryStar))
                    and _imports_cuda(ctx, _sure_imports(stmt))
                ) or ((apex or package) and _calls_apex_cuda(ctx, stmt, packages=package)):
                    found[id(block)] = index
                    break
    return found


def _needs(ctx: Context) -> bool:
    imported = [found for stmt in ctx.tree.body for found in _sure_imports(stmt)]
    return (
        _own_kernel(ctx, cpp=True)
        or _imports_cuda(ctx, imported)
        or (_may_call_apex(ctx) and _imports_apex(imported) and _surely_calls_an_entry(ctx))
        or ("faiss" in ctx.source and _surely_calls_an_entry(ctx))
        or (_imports_apex(imported) and _helper_of_apex_scripts(ctx))
    )


def _imports_apex(imported: list[tuple[str, bool]]) -> bool:
    return any(path and name.partition(".")[0] == "apex" for name, path in imported)


def _helper_of_apex_scripts(ctx: Context) -> bool:
    """Every importer the repository has (one at least) is an apex script (:func:`_apex_script`);
    the module is no script itself (``rules/_importers.py``: any doubt, no)."""
    from torchport.check.rules._importers import importers_of, is_script  # on first use

    if not ctx.path or ctx.path.startswith("<") or not Path(ctx.path).is_file():
        return False
    if is_script(ctx.tree):
        return False
    importers = importers_of(ctx.path)
    return bool(importers) and all(_apex_script(p) for p in importers or ())


def _apex_script(path: str) -> bool:
    """The module at ``path`` surely imports apex at its top and surely calls one of
    :data:`APEX_CUDA_CALLS` when it runs: its module body does, or its entry (the module-level
    function its ``if __name__ == "__main__":`` block calls, no statement before leaving) does
    and no module of the repository imports it."""
    answer = remembered(_SCRIPTS, path, lambda: _is_apex_script(path))
    return bool(answer)


def _is_apex_script(path: str) -> bool:
    from torchport.check.port._module_files import parse_file  # on first use
    from torchport.check.rules._apex_scripts import surely_runs
    from torchport.check.rules._importers import importers_of

    note(path)  # what the answer rests on (check/_listing.py)
    tree = parse_file(Path(path))
    if tree is None or not _imports_apex([f for s in tree.body for f in _sure_imports(s)]):
        return False
    ctx = Context(Path(path).read_text(encoding="utf-8", errors="surrogateescape"), path, tree)
    route = surely_runs(ctx, tree, _calls_apex_cuda)
    return route == "module" or (route == "entry" and importers_of(path) == ())


def _may_call_apex(ctx: Context) -> bool:
    """A cheap look: the source names apex and one of its CUDA-only entries."""
    source = ctx.source
    return "apex" in source and ("initialize" in source or "DistributedDataParallel" in source)


def _faiss(called: str) -> bool:  # faiss's GPU entries (rules/_faiss_gpu.py, read on first use)
    from torchport.check.rules._faiss_gpu import faiss_gpu

    return called.startswith("faiss.") and faiss_gpu(called)


def _surely_calls_an_entry(ctx: Context) -> bool:
    """:data:`APEX_CUDA_CALLS` or faiss's GPU entries called on every run of a body holding one."""
    bodies: list[list[ast.stmt]] = [ctx.tree.body]
    while bodies:
        for stmt in bodies.pop():
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bodies.append(stmt.body)
            elif _calls_apex_cuda(ctx, stmt):
                return True
    return False


_DEFERRED = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.IfExp,
             ast.BoolOp)  # fmt: skip


def _calls_apex_cuda(ctx: Context, stmt: ast.stmt, *, packages: bool = False) -> bool:
    """``stmt`` is an expression, an assignment or a ``return`` whose value calls one of
    :data:`APEX_CUDA_CALLS` (``model, opt = amp.initialize(model, opt)``, ``model =
    DDP(model)``), or with ``packages`` a function of a CUDA-only package (``local_rank =
    smp.local_rank()``, ``smp`` imported from ``smdistributed`` however guarded: the call
    ran, so the import did; a sign for a block, never for the file), outside any lambda,
    comprehension, ``x if c else y`` or ``and``/``or``."""
    if not isinstance(stmt, (ast.Expr, ast.Assign, ast.AnnAssign, ast.Return)):
        return False
    if stmt.value is None:
        return False
    todo: list[ast.AST] = [stmt.value]
    while todo:
        node = todo.pop()
        if isinstance(node, _DEFERRED):
            continue  # runs later, or only on one side of a choice
        if isinstance(node, ast.Call):
            called = ctx.qualname(node.func) or ""
            if called in APEX_CUDA_CALLS or _faiss(called) or (packages and _of_package(called)):
                return True
        todo.extend(ast.iter_child_nodes(node))
    return False


def _imports_cuda(ctx: Context, imported: list[tuple[str, bool]]) -> bool:
    """Whether ``imported`` (:func:`_sure_imports`' pairs) holds a CUDA-only package or an
    extension the file's checkout builds for CUDA alone."""
    names = [name for name, _ in imported]
    if any(path and _package(name) for name, path in imported):
        return True
    if not names:
        return False
    if not ctx.path or ctx.path.startswith("<") or not Path(ctx.path).is_file():
        return False
    if any(n.startswith(".") and own_extension(ctx.path, n) for n in names):
        return True
    built = cuda_extensions(_folder_of(ctx.path))
    return any(name == ext or name.startswith(ext + ".") for name in names for ext in built)


# the packages whose functions' calls are a sign for their block: a call resolves to one only
# through an import line naming it (a cheap look before the walk; `import a, \` lines aside)
_CALLED_PACKAGES = (*sorted(CUDA_PACKAGES), *sorted(_KERNEL_LIBRARIES), "apex")
_CALLED_IMPORT = lazy_pattern(  # (on "\n" + the source: see _INDENTED_IMPORT)
    r"\n[ \t]*(?:import|from)[ \t][^\n]*\b(?:" + "|".join(_CALLED_PACKAGES) + r")\b"
)


def _of_package(called: str) -> bool:
    """``called`` (a qualified name) is a function of a CUDA-only package or kernel library,
    or of apex's kernel parts; not of a top-level ``*_cuda`` extension, which counts where
    imported (:func:`_package`)."""
    parts = called.split(".")[:-1]
    if not parts:
        return False
    if parts[0] in CUDA_PACKAGES or parts[0] in _KERNEL_LIBRARIES:
        return True
    return parts[0] == "apex" and len(parts) > 1 and parts[1] in _APEX_KERNELS


def _package(name: str) -> bool:
    """A CUDA-only package or kernel library, or a top-level extension named ``*_cuda``
    (``selective_scan_cuda``, ``flash_attn_2_cuda``): a module path, never a name imported
    from a module (nnUNet's ``from nnunet.utilities.to_torch import to_cuda`` is a helper
    function; round 5d's port commit changed its callers)."""
    parts = name.split(".")
    if parts[0] in CUDA_PACKAGES or parts[0] in _KERNEL_LIBRARIES:
        return True
    if parts[0] == "apex" and len(parts) > 1 and parts[1] in _APEX_KERNELS:
        return True
    return len(parts) == 1 and name.endswith("_cuda")


def _sure_imports(stmt: ast.stmt) -> list[tuple[str, bool]]:
    """What ``stmt`` imports whatever path the program takes (every arm of an ``if``): each
    dotted name, and whether it is a module path (not a name imported from one)."""
    if isinstance(stmt, ast.Import):
        return [(a.name, True) for a in stmt.names]
    if isinstance(stmt, ast.ImportFrom):
        if stmt.level:  # relative: the dots kept, resolved by own_extension
            dots = "." * stmt.level
            base = f"{dots}{stmt.module}" if stmt.module else ""
            names = [(f"{base or dots}{'.' if base else ''}{a.name}", False) for a in stmt.names]
            return [(base, True), *names] if base else names
        if not stmt.module:
            return []
        return [(stmt.module, True), *((f"{stmt.module}.{a.name}", False) for a in stmt.names)]
    if isinstance(stmt, ast.If) and stmt.orelse:
        body = [n for s in stmt.body for n in _sure_imports(s) if n[1] and _package(n[0])]
        orelse = [n for s in stmt.orelse for n in _sure_imports(s) if n[1] and _package(n[0])]
        return body + orelse if body and orelse else []
    if isinstance(stmt, (ast.Try, ast.TryStar)) and all(  # `rules/_import_gates.py`
        h.body and isinstance(h.body[-1], ast.Raise) for h in stmt.handlers
    ):  # every arm raises again (none: an exception passes through `finally`)
        return [n for s in (*stmt.body, *stmt.orelse) for n in _sure_imports(s)]
    return []


def _folder_of(path: str) -> Path:
    """``Path(path).resolve().parent`` (one ``lstat`` a file in a span: ``real_path``)."""
    return Path(real_path(path)).parent


def _own_kernel(ctx: Context, *, cpp: bool) -> bool:
    """The module compiles CUDA sources (``cpp``) or defines its own Triton kernel: both in
    ``rules/_own_kernels.py``, imported on first use, where the text names one at all."""
    if ("cpp_extension" if cpp else "triton") not in ctx.source:
        return False
    from torchport.check.rules._own_kernels import compiles_cuda, defines_triton_kernel

    return compiles_cuda(ctx) if cpp else defines_triton_kernel(ctx)


def cuda_extensions(folder: Path) -> frozenset[str]:
    """The extension names the checkout holding ``folder`` builds for CUDA alone (above).

    Kept per folder and checkout with the paths read or looked for (``_listing.note``),
    noted again on each answer from memory, so the check cache sees an edited
    ``setup.py``."""
    return remembered(_FOLDERS_SEEN, str(folder), lambda: _of_folder(folder))


def _of_folder(folder: Path) -> frozenset[str]:
    root = _root(folder)
    if root is None:
        return frozenset()
    return remembered(_CHECKOUTS, str(root), lambda: _extensions(root))


def _root(folder: Path) -> Path | None:
    top: Path | None = None
    for up in [folder, *folder.parents][:_ABOVE]:
        for name in (".git", "setup.py", "pyproject.toml"):
            note(up / name)
        if (up / ".git").exists():
            return up
        if (up / "setup.py").is_file() or (up / "pyproject.toml").is_file():
            top = up
    return top


def _extensions(root: Path) -> frozenset[str]:
    cuda: set[str] = set()
    cpu: set[str] = set()
    for count, (folder, dirs, files) in enumerate(os.walk(root)):
        if count >= _FOLDERS:
            break
        note(folder)  # a setup.py appearing changes the folder's names
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in _SKIPPED]
        if "setup.py" not in files:
            continue
        try:
            note(os.path.join(folder, "setup.py"))
            source = Path(folder, "setup.py").read_text(encoding="utf-8", errors="replace")
            tree = ast.parse(source)
        except (OSError, SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                tail = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if tail in ("CUDAExtension", "CppExtension"):
                    name = _extension_name(node)
                    if name:
                        (cuda if tail == "CUDAExtension" else cpu).add(name)
    return frozenset(cuda - cpu)


def _extension_name(call: ast.Call) -> str | None:
    values = [*call.args[:1], *(kw.value for kw in call.keywords if kw.arg == "name")]
    for value in values:
        if isinstance(value, ast.Constant) and isinstance(value.value, str) and value.value:
            return value.value
    return None
