"""TP101 leaves the CUDA inside a class's own ``cuda()`` method.

``def cuda(self, device=None): return self._apply(lambda t: t.cuda(device))`` (gpytorch's
priors, sample K) is what ``.cuda()`` means for that class: it runs only when a caller
asks for CUDA by name, and that caller's line is the finding. Only a method named
exactly ``cuda`` directly in a class is this; a function named ``cuda`` outside a class,
a method named otherwise (``to_cuda``, ``forward``) or a function nested in another
method keeps its CUDA reported. The oracle is that sentence, on drawn parts.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

NAMES = ("cuda", "to_cuda", "forward", "cpu")
CALLS = (
    "return self._apply(lambda t: t.cuda(device))",
    "self.buf = self.buf.cuda(device)",
    'return self.to("cuda")',
)


@given(
    name=st.sampled_from(NAMES),
    in_class=st.booleans(),
    nested=st.sampled_from(("", "helper")),
    call=st.sampled_from(CALLS),
)
def test_a_class_s_own_cuda_method_is_left(
    name: str, in_class: bool, nested: str, call: str
) -> None:
    body = [call]
    if nested:
        body = [f"def {nested}(self, device):", *("    " + line for line in body)]
    function = [f"def {name}(self, device=None):", *("    " + line for line in body)]
    if in_class:
        function = ["class Prior(torch.nn.Module):", *("    " + line for line in function)]
    source = "\n".join(["import torch", "", "", *function]) + "\n"
    found = check_text(source, "pkg/priors.py", ruleset_for(["TP101"], None)).findings
    own = in_class and name == "cuda" and not nested
    assert bool(found) != own, source
