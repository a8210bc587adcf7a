"""The recorder's decisions on new cases: what a copy to the host covers on its line, and
where a copy's data comes from.

Expected counts are worked out by hand from what an accelerator run of each snippet
does, written beside each case.
"""

from __future__ import annotations

import runpy
import sys

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import torchport as tp

META = torch.device("meta")


def _line() -> int:
    return sys._getframe(1).f_lineno


# Reads on one line after a copy to the host; True when the read is of the copy (or of
# what the line computes from it), False when it reads a tensor the accelerator holds.
READS = {
    "out.cpu().numpy()": [],
    "out.cpu().tolist()": [],
    "out.cpu().detach().numpy()": [],
    "float(loss.detach().cpu())": [],
    "(pred.cpu() == y.cpu()).sum().item()": [],
    "torch.stack([out.cpu(), out.cpu()]).numpy()": [],
    "out.cpu().numpy(), loss.item()": ["scalar read (.item())"],
    "out.cpu().numpy(), acc.item(), pred.tolist()": [
        "scalar read (.item())",
        "read to Python (.tolist())",
    ],
    "out.cpu().tolist(), float(acc)": ["scalar read (float(tensor))"],
}


PRELUDE = """\
import torch
import torchport as tp
out = torch.randn(4, 3)
loss, acc = out.sum(), out.mean()
pred, y = out.argmax(1), torch.tensor([0, 1, 2, 0])
with tp.audit() as report:
"""


@settings(max_examples=30, deadline=None)
@given(first=st.sampled_from(sorted(READS)), later=st.sampled_from(sorted(READS)))
def test_a_copy_to_the_host_covers_only_its_own_reads_on_its_line(
    tmp_path_factory: pytest.TempPathFactory, first: str, later: str
) -> None:
    path = tmp_path_factory.mktemp("reads") / "reads.py"
    path.write_text(f"{PRELUDE}    {first}\n    {later}\n")
    report: tp.AuditReport = runpy.run_path(str(path))["report"]
    line = PRELUDE.count("\n") + 1
    for offset, text in enumerate((first, later)):
        at = line + offset
        syncs = sorted(e.label for e in report.syncs if e.line == at for _ in range(e.count))
        # every line copies to the host (.cpu()); the reads of tensors the accelerator
        # holds beside it wait for the accelerator
        assert syncs == sorted(READS[text]), text
        assert any(e.line == at and e.device == "device→host" for e in report.transfers)


def test_new_tensor_copies_host_data_to_the_tensors_device() -> None:
    on_meta = torch.ones(2, device=META)
    with tp.audit() as report:
        on_meta.new_tensor([1.0, 2.0, 3.0])
        line = _line() - 1
    # the data is a Python list, on the host: one real copy to meta, 3 floats
    assert [(e.line, e.device, e.count, e.bytes, e.would_sync) for e in report.entries] == [
        (line, "cpu→meta", 1, 12, False)
    ]
