"""TP103 leaves an ``is_cuda`` branch that spreads the work over several GPUs.

Sample K (opacus's examples/dcgan.py): ``if input.is_cuda and self.ngpu > 1: output =
nn.parallel.data_parallel(self.main, input, range(self.ngpu))``. What the branch does is
DataParallel's, over CUDA device ids (TP405 speaks of it); ``device.type != "cpu"`` would
hand an MPS tensor to it. Generated branches call one thing in the CUDA arm, spelled
through one import; the oracle is a table written here: DataParallel's function or
class (however imported) makes the branch CUDA's, any other call (the module itself, a
torch op, a user's function named ``parallel``) leaves the ``is_cuda`` test reported.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from torchport.check import check_source

# (import line, the call in the CUDA arm, whether it spreads over GPUs)
CALLS = (
    ("import torch.nn as nn", "nn.parallel.data_parallel(m, x, range(ngpu))", True),
    ("import torch", "torch.nn.parallel.data_parallel(m, x)", True),
    ("from torch.nn.parallel import data_parallel", "data_parallel(m, x, ids)", True),
    ("from torch import nn", "nn.DataParallel(m)(x)", True),
    ("from torch.nn import DataParallel as DP", "DP(m, device_ids=ids)(x)", True),
    ("import torch.nn as nn", "m(x)", False),
    ("import torch", "torch.cat([m(x), x])", False),
    ("import torch.nn as nn", "parallel.data_parallel(m, x)", False),  # not torch's
    ("import torch.nn as nn", "nn.functional.relu(m(x))", False),
)


@given(
    call=st.sampled_from(CALLS),
    test=st.sampled_from(["x.is_cuda", "x.is_cuda and ngpu > 1", "ngpu > 1 and x.is_cuda"]),
    expression=st.booleans(),
)
def test_a_branch_over_several_gpus_is_cudas(
    call: tuple[str, str, bool], test: str, expression: bool
) -> None:
    imports, text, spreads = call
    if expression:
        body = f"    out = {text} if {test} else m(x)\n"
    else:
        body = f"    if {test}:\n        out = {text}\n    else:\n        out = m(x)\n"
    source = f"{imports}\n\n\ndef forward(m, x, ngpu, ids):\n{body}    return out\n"
    found = [f.code for f in check_source(source, select=["TP103"])]
    assert found == ([] if spreads else ["TP103"]), source
