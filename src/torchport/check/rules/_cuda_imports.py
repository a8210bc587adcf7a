"""Code that needs CUDA anyway through a module of its own project it imports.

A module **needs CUDA anyway** (``rules/_cuda_projects.py``'s invariant) also when its top
level surely imports (``_cuda_projects._sure_imports``' sense: not under an ``if``, in a
function or in a ``try`` going on without it) a module of its own checkout (resolved as
the project view resolves imports, ``port/_module_files.find_module``: ``import m``, ``from m
import x``, ``from m import *``, ``from . import m``, ``import pkg.m``; inside the folder
holding ``.git``, else the highest one holding a ``setup.py`` or ``pyproject.toml``, else the
module's own folder) that needs CUDA anyway by its own statements, by that invariant
(:func:`imports_cuda_module`): Python runs the imported module's top level first, and if that
raises without CUDA, so does the importer. One level: the imported module counts by its own
statements, not by what it imports in turn (no cycle to guard). Asked only where a finding of
a rule naming CUDA is about to be reported in the file (``_select.default_reports``), the
project view's lookups loaded only when a file or folder of an imported name is where they
would look (``_own_extensions.may_import_local``: a plain check of a script importing only installed
packages loads none of the port), the imported module read only when its text names a
candidate (a CUDA-only package, apex, ``_cuda``, ``cpp_extension``, a name its checkout
builds for CUDA alone), and kept per path with what it read (``_listing.remembered``: the
check cache sees an edit of it).

Measured over every judged row of samples A-AA in other code (issue 34, branch n34i; the rows
a rule naming CUDA reports there): one level takes 12 more of TP101's low rows (RWKV-LM's
``verify.py`` and ``train.py``, which import the model module loading its timex/wkv CUDA
kernel, 9 rows of S; MambaVision's ``train.py`` and ``validate.py``, ``from
models.mamba_vision import *``, 2 of R; FoundationPose's ``estimater.py``, ``from Utils import
*`` where ``Utils.py`` imports nvdiffrast, 1 of AA) and a low TP403 row (MambaVision's
throughput script), and 2 judged real: KAIR's ``network_rvrt.py`` imports
``op/deform_attn.py``, which compiles a ``.cu`` kernel with ``load`` at its top, and
llm-awq's ``auto_scale.py`` imports ``qmodule.py``, which imports the ``awq_inference_engine``
``CUDAExtension``: both modules raise on import without CUDA, which the judgments did not weigh.
TP101 where a default run reports it, A-Y: 650 of 809 -> 648 of 796. Two levels (what the
imported module imports, once more) would take 19 low and 6 real TP101 rows in all, and 5
real rows of TP102, TP109, TP110 and TP401 (4 low of TP113, TP401, TP403): not taken.
Not followed: a module found only through a ``sys.path`` edit (FoundationPose's
``learning/*`` modules put a folder above them on the path,
``sys.path.append(f"{code_dir}/../../")``, before ``from Utils import *``: 4 low rows of
AA), a package's ``__init__`` run on the way to its module.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

from torchport.check._context import Context
from torchport.check._listing import note, real_path, remembered
from torchport.check.rules._cuda_projects import (
    _KERNEL_LIBRARIES,
    CUDA_PACKAGES,
    _folder_of,
    _needs,
    _root,
    cuda_extensions,
    needs_cuda_here,
)
from torchport.check.rules._own_extensions import may_import_local, sure_import_nodes

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from torchport.check.port._module_files import Lookups

__all__ = ["imports_cuda_module", "needs_cuda_with_imports"]

# A module's text holds one of these when it may need CUDA anyway by its own statements (the
# names its checkout builds for CUDA alone apart): a CUDA-only package or kernel library, apex,
# a `*_cuda` extension, a compile of CUDA sources. A look before the module is parsed.
_NEEDS_WORDS = (
    *sorted(CUDA_PACKAGES),
    *sorted(_KERNEL_LIBRARIES),
    "apex",
    "_cuda",
    "cpp_extension",
)
_MODULES: dict[object, object] = {}  # _module_needs' answers, by path


def imports_cuda_module(ctx: Context) -> bool:
    """Whether the module's top level surely imports a module of its own checkout that
    needs CUDA anyway by its own statements (the invariant above). Once per file."""
    found = ctx.memo.get("cuda_imports.needs")
    if found is None:
        found = ctx.memo["cuda_imports.needs"] = _imports_cuda_module(ctx)
    return bool(found)


def needs_cuda_with_imports(ctx: Context, node: ast.AST | None = None) -> bool:
    """``_cuda_projects.needs_cuda_here``, the module's project imports followed too: the
    whole of what a default run leaves to a rule naming CUDA (``_select.default_reports``)."""
    return needs_cuda_here(ctx, node) or (may_import_local(ctx) and imports_cuda_module(ctx))


def _imports_cuda_module(ctx: Context) -> bool:
    """The module's top level surely imports (``_own_extensions.sure_import_nodes``) a
    module of its own checkout (``port/_module_files.find_module``, the project view's
    resolution) that needs CUDA anyway by its own statements (:func:`_module_needs`)."""
    if not may_import_local(ctx):  # (a file, a look with os.path first: no port loaded)
        return False  # (its callers ask it first too: it is kept in ctx.memo)
    from torchport.check.port._module_files import Lookups  # on first use

    importer = real_path(ctx.path)
    nodes = [node for stmt in ctx.tree.body for node in sure_import_nodes(stmt)]
    top = _root(Path(importer).parent)
    inside = str(top if top is not None else Path(importer).parent) + os.sep
    lookups = Lookups()
    for node in nodes:
        for found in _imported_files(node, Path(importer), lookups):
            path = real_path(str(found))
            if path != importer and path.startswith(inside) and _module_needs(path):
                return True
    return False


def _imported_files(
    node: ast.Import | ast.ImportFrom, importer: Path, lookups: Lookups
) -> list[Path]:
    """The project's files ``node`` runs (as the project view resolves them): the module it
    names, and for ``from m import a`` the submodule ``m.a`` where ``a`` is one."""
    from torchport.check.port._module_files import find_module  # on first use

    if isinstance(node, ast.Import):
        asked = [(alias.name, 0) for alias in node.names]
    else:
        module, level = node.module, node.level
        asked = [(module, level)] if module else []  # `from . import m`: the package runs
        asked += [  # already (the importer is in it); its modules `m` are asked below
            (f"{module}.{alias.name}" if module else alias.name, level)
            for alias in node.names
            if alias.name != "*"
        ]
    found = [find_module(importer, dotted, level, lookups) for dotted, level in asked]
    return [f for f in found if f is not None]


def _module_needs(path: str) -> bool:
    """The module at ``path`` needs CUDA anyway by its own statements (:func:`_needs`); kept
    per path with what it read (``_listing.remembered``)."""
    return bool(remembered(_MODULES, path, lambda: _reads_needs(path)))


def _reads_needs(path: str) -> bool:
    from torchport.check._syntax import parsed_module  # on first use

    note(path)  # what the answer rests on (check/_listing.py)
    try:
        source = Path(path).read_text(encoding="utf-8", errors="surrogateescape")
    except (OSError, ValueError):
        return False
    built = cuda_extensions(_folder_of(path))
    if not any(w in source for w in _NEEDS_WORDS) and not any(n in source for n in built):
        return False
    try:
        tree = parsed_module(path, source)
    except (SyntaxError, ValueError):
        return False
    return _needs(Context(source, path, tree))
