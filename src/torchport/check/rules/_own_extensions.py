"""A package's own compiled ``*_cuda`` extension, imported relatively.

``from . import iou3d_nms_cuda`` (sample Y's TAO ``pcdet``, built with a ``CUDAExtension``
through a helper the checker does not read) names a compiled module only where no Python
source can be what the name is: no ``iou3d_nms_cuda.py`` nor ``iou3d_nms_cuda/`` in the
package the dots lead to, and the package's ``__init__.py`` (not the importing file itself)
never spells the name. Then the import succeeds only with the compiled module, as a top-level
``import selective_scan_cuda`` does (``rules/_cuda_projects.py``, which asks this).
"""

from __future__ import annotations

from pathlib import Path

from torchport.check._listing import note, real_path

__all__ = ["own_extension"]


def own_extension(path: str, name: str) -> bool:
    """``name`` (relative: ``.iou3d_nms_cuda``, ``..ops.nms_cuda``), imported by the file at
    ``path``, is its package's compiled ``*_cuda`` extension: the last part ends in
    ``_cuda`` and, in the package the dots and the parts before it lead to (a folder, no
    module file of its name), there is no ``<name>.py`` nor ``<name>/``, and the package's
    ``__init__.py`` (when there is one, and not the file itself) never spells the name."""
    level = len(name) - len(name.lstrip("."))
    parts = name[level:].split(".")
    ext = parts[-1]
    if not ext.endswith("_cuda") or ext == "_cuda":
        return False
    package = Path(real_path(path)).parent
    for _ in range(level - 1):
        package = package.parent
    for part in parts[:-1]:
        note(package / f"{part}.py")
        if (package / f"{part}.py").exists():
            return False  # `from .helpers import to_cuda`: a module's name, not a package
        package = package / part
    init = package / "__init__.py"
    for looked in (package, package / f"{ext}.py", package / ext, init):
        note(looked)
    if not package.is_dir() or (package / f"{ext}.py").exists() or (package / ext).exists():
        return False
    if not init.is_file():
        return True
    if init.resolve() == Path(real_path(path)):
        return False  # the package's own `__init__` may bind the name anywhere in it
    try:
        return ext not in init.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
