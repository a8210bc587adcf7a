"""A ``device=`` keyword of another library's call: its own device string, not torch's.

Invariant: a ``device=`` given to a call whose callee resolves to an import of a library
listed here is that library's device, never a torch device, so TP101/TP109 (choose the torch
accelerator) say nothing of it. The list holds only libraries whose documentation gives their
``device`` parameter its own meaning, with no torch device and no MPS/XPU to choose:

* ``xgboost``: ``device`` is ``"cpu"``, ``"cuda"``, ``"cuda:<ordinal>"`` (or ``"gpu"``);
  XGBoost's GPU support is CUDA's (xgboost.readthedocs.io, "XGBoost GPU Support").
* ``lightgbm``: ``device`` is an alias of ``device_type`` (``cpu``, ``gpu``: OpenCL,
  ``cuda``); LightGBM's Parameters page.
* ``ctranslate2``: ``device`` is ``"cpu"``, ``"cuda"`` or ``"auto"`` (its ``str_to_device``
  accepts nothing else); ``faster_whisper`` (``WhisperModel(..., device=...)``) hands it to
  CTranslate2 as is.

Libraries that take torch's devices (transformers' ``pipeline``, sentence-transformers,
timm, ultralytics, whisper, ...) are not listed: their ``device=`` stays reported. CatBoost
(``task_type="GPU"``, ``devices="0:1"``) has no ``device`` keyword, so nothing to list.
"""

from __future__ import annotations

import ast

from torchport.check._context import Context

__all__ = ["OWN_DEVICE_LIBRARIES", "foreign_device"]

OWN_DEVICE_LIBRARIES = frozenset({"xgboost", "lightgbm", "ctranslate2", "faster_whisper"})


def foreign_device(value: ast.AST, ctx: Context, call: ast.Call | None = None) -> bool:
    """``value`` is the ``device=`` keyword of ``call`` (None: the call ``value`` sits in, read
    from ``ctx.ancestors``), a call whose callee is a listed library's import."""
    if call is None:
        outer = ctx.ancestors[-2:]
        if len(outer) < 2 or not isinstance(outer[1], ast.keyword):
            return False
        call = outer[0] if isinstance(outer[0], ast.Call) else None
    if call is None or not any(k.arg == "device" and k.value is value for k in call.keywords):
        return False
    name = ctx.qualname(call.func)
    return name is not None and name.partition(".")[0] in OWN_DEVICE_LIBRARIES
