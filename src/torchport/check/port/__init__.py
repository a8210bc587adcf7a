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

from torchport.check.port._rewrite import PORT_SELECT, port_paths, port_source, port_text
from torchport.check.port._verify import Verification, verify_entry

__all__ = ["PORT_SELECT", "Verification", "port_paths", "port_source", "port_text", "verify_entry"]
