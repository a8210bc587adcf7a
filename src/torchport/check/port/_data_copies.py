"""``torch.tensor(outs)`` of a Python list: a tensor on the CPU, whatever the list holds.

torch's data copies (``torch.tensor``, ``torch.as_tensor``, ``torch.asarray``) given a
Python sequence (a list, tuple or comprehension) make their tensor on the default device,
the CPU, unless told ``device=``: they read each item to the host (``.item()`` of a device
tensor) and build the result there. Given a tensor, they keep its device. The port took
``torch.tensor(outs)`` of ``outs = [x * model(x) for x in xs]`` for a device value, as any
call of device arguments: it moved nothing next to it and said "0 left", and the run
stopped where the copy met the model's weights; a host read of it had "it is on the
device" said of it (TP522; held-out set h31n, VlasovElectric's ``ode_torch/main.py``).

The invariant: a data copy whose data argument is a sequence (by its syntax, or a name
every binding of which that may reach the call is one) and that has no ``device=`` is a
CPU tensor for the device flow (:meth:`DeviceFlow.on_device
<torchport.check.port._device_flow.DeviceFlow.on_device>`) and for the value kinds
(:class:`~torchport.check.port._kinds.ValueKinds`). Anything else (a name the port
cannot follow to a sequence, a tensor) keeps the rule of any call.
"""

from __future__ import annotations

import ast

from torchport.check._match import keyword
from torchport.check.port._reaching import Reaching
from torchport.check.semantic import BindingKind, ScopeMap

__all__ = ["DATA_COPIES", "DataCopies", "copies_a_sequence"]

DATA_COPIES = frozenset({"torch.tensor", "torch.as_tensor", "torch.asarray"})
_SEQUENCES = (ast.List, ast.Tuple, ast.ListComp, ast.GeneratorExp)


def copies_a_sequence(call: ast.Call, name: str | None, reaching: Reaching) -> bool:
    """Whether ``call`` (qualified ``name``) copies a Python sequence to a CPU tensor."""
    if name not in DATA_COPIES or not call.args or keyword(call, "device") is not None:
        return False
    data = call.args[0]
    if isinstance(data, _SEQUENCES):
        return True
    if not isinstance(data, ast.Name):
        return False
    found = [b for b in reaching.may_reach(data) if b.kind is not BindingKind.DELETE]
    return bool(found) and all(
        b.kind is BindingKind.ASSIGN and isinstance(b.value, _SEQUENCES) for b in found
    )


class DataCopies:
    """:func:`copies_a_sequence` for one file, its may-reach questions made once."""

    def __init__(self, scopes: ScopeMap) -> None:
        self.reaching = Reaching(scopes)

    def to_the_cpu(self, call: ast.Call, name: str | None) -> bool:
        """Whether ``call`` (qualified ``name``) copies a Python sequence to a CPU tensor."""
        return copies_a_sequence(call, name, self.reaching)
