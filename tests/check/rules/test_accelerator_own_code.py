"""Sample P's library classes: a model's own ``self.is_cuda`` flag, an accelerator's own class.

pyro's MuE model keeps ``self.is_cuda = cuda`` (a constructor flag) and branches on it: no
tensor's ``is_cuda``, so TP103's ``x.device.type != "cpu"`` does not apply (noise).
composer's ``DeviceHPU`` holds ``torch.device('hpu')``: HPU is the class's subject (TP112
noise). Generated files draw the receiver and whether the module assigns the flag, or the
class name and the accelerator named; the oracle is the class written out apart.
"""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

# What the module assigns, if anything.
ASSIGNED = {"": None, "self.is_cuda = cuda": "self", "self.uses_cuda = cuda": None}


@given(
    receiver=st.sampled_from(["self", "x", "batch"]),
    assigned=st.sampled_from(sorted(ASSIGNED)),
)
@example(receiver="self", assigned="self.is_cuda = cuda")
@example(receiver="x", assigned="self.is_cuda = cuda")
@example(receiver="self", assigned="")
def test_a_models_own_is_cuda_flag_is_no_tensors(receiver: str, assigned: str) -> None:
    init = ["    def __init__(self, cuda=False):", f"        {assigned or 'pass'}", ""]
    fit = ["    def fit(self, x, batch):", f"        if {receiver}.is_cuda:"]
    fit += ["            batch = batch.cuda()", "        return batch"]
    source = "\n".join(["import torch", "", "class MuE:", *init, *fit]) + "\n"
    left = ASSIGNED[assigned] == receiver
    found = check_text(source, "pyro/contrib/mue/models.py", ruleset_for(["TP103"], None))
    assert bool(found.findings) != left, (source, found.findings)


# The words that name each accelerator in a class's name.
WORDS = {"hpu": ("hpu", "habana"), "mps": ("mps",), "xpu": ("xpu",)}
CLASSES = ["DeviceHPU", "HabanaAccelerator", "MPSBackend", "DeviceXPU", "DeviceGPU", "Trainer"]


@given(
    cls=st.sampled_from(CLASSES),
    accelerator=st.sampled_from(sorted(WORDS)),
    method=st.booleans(),
)
@example(cls="DeviceHPU", accelerator="hpu", method=False)
@example(cls="DeviceHPU", accelerator="mps", method=True)
@example(cls="Trainer", accelerator="hpu", method=False)
def test_an_accelerators_own_class_is_its_subject(cls: str, accelerator: str, method: bool) -> None:
    line = f"torch.device('{accelerator}')"
    body = ["    def to_device(self, x):", f"        return x.to({line})"] if method else []
    body = body or [f"    _device = {line}"]
    source = "\n".join(["import torch", "", f"class {cls}(Device):", *body]) + "\n"
    left = any(word in cls.lower() for word in WORDS[accelerator])
    found = check_text(source, "composer/devices/device.py", ruleset_for(["TP112"], None))
    assert bool(found.findings) != left, (source, found.findings)
