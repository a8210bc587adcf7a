"""``torchport port``: the analysis that rewrites CPU-only code for the accelerator.

What a file's models and batches are (:mod:`._models`, :mod:`._facts`), which
values live on the device (:mod:`._device_flow`), what each value is (a
tensor, a batch, a loader, a model, none of these: :mod:`._value_kind`,
:mod:`._kinds`, across calls :mod:`._parameters`), how each batch is moved
(:mod:`._batches`), where the values that meet the model come from and which
rule answers for each (:mod:`._origins`), and the command itself
(:func:`port_source`, :func:`port_paths`), a fix run with the port rules
(TP5xx) selected. The port moves only what it knows, and reports the rest.
"""

from __future__ import annotations

from torchport._lazy import lazy_exports

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from torchport.check.port._rewrite import PORT_SELECT, port_paths, port_source, port_text
    from torchport.check.port._verify import Verification, verify_entry

__all__ = ["PORT_SELECT", "Verification", "port_paths", "port_source", "port_text", "verify_entry"]

# Imported on first use (PEP 562): a check whose fix asks the project view
# (_project_view.py, a module of this package) loads that, not the port command
# and its verifier (subprocess, tempfile, json: ~20 ms of a run).
_LAZY: dict[str, str] = {
    "PORT_SELECT": "torchport.check.port._rewrite",
    "port_paths": "torchport.check.port._rewrite",
    "port_source": "torchport.check.port._rewrite",
    "port_text": "torchport.check.port._rewrite",
    "Verification": "torchport.check.port._verify",
    "verify_entry": "torchport.check.port._verify",
}


__getattr__, __dir__ = lazy_exports(globals(), _LAZY)
