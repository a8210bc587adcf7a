"""TP109 on generated ``if torch.cuda.is_available():`` bodies: what is only shown places nothing.

Oracle (by hand, per statement): a statement places data or picks a device on CUDA, or
only prints/logs CUDA facts, or does neither. The branch is a CUDA-or-CPU choice exactly
when one of its statements places.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_source

PLACES = [
    "model = model.cuda()",
    "device = 'cuda'",
    "torch.cuda.set_device(0)",
    "x = x.to('cuda:0')",
    "y = torch.zeros(2, device='cuda')",
]
SHOWS = [
    "print(torch.cuda.get_device_name(0))",
    "print(f'on {torch.cuda.current_device()}')",
    "logger.info('using cuda: %s', torch.cuda.get_device_properties(0))",
    "logging.warning(f'cuda:{torch.cuda.current_device()}')",
    "print('cuda available')",
]
NEITHER = ["torch.backends.cudnn.benchmark = True", "n += 1"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(PLACES + SHOWS + NEITHER), min_size=1, max_size=4))
def test_a_branch_is_a_choice_only_where_it_places(body: list[str]) -> None:
    source = (
        "import logging\nimport torch\nlogger = logging.getLogger()\n"
        "if torch.cuda.is_available():\n" + "".join(f"    {s}\n" for s in body)
    )
    reported = 4 in {f.line for f in check_source(source, select=["TP109"])}
    assert reported == any(s in PLACES for s in body), source
