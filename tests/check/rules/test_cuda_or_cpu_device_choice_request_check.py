"""TP109: a check of the caller's request before the choice is no per-device decision.

Recall round 5c (kokoro's ``KPipeline.__init__``): ``if device == 'cuda' and not
torch.cuda.is_available(): raise ...`` then ``if device is None: device = 'cuda' if
torch.cuda.is_available() else 'cpu'``. The raise only refuses a CUDA request on a
machine without CUDA; after it the device may be anything, so the CUDA-or-CPU choice
below still misses MPS and XPU. The oracle is the logic of the exit, written apart
from the rule: after ``if A and B: raise`` the code runs where ``not A or not B``, so
it is pinned to one device type only where the exit's test is a device-type test
alone (``if device.type != "cuda": raise``: the author decided per device).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_source

# (the exit's test, whether the code after it runs on one device type only)
TESTS = (
    ("device == 'cuda' and not torch.cuda.is_available()", False),
    ("not torch.cuda.is_available() and device == 'cuda'", False),
    ("str(device).startswith('cuda') and not torch.cuda.is_available()", False),
    # past it `device` is None or CUDA, and the choice runs where it is None (round 5f)
    ("device is not None and device.type != 'cuda'", False),
    ("device.type != 'cuda'", True),
)
EXITS = (
    "raise RuntimeError('CUDA requested but not available')",
    "sys.exit(1)",
)


def _program(test: str, exit_: str, in_class: bool) -> tuple[str, int]:
    body = (
        f"if {test}:\n"
        f"    {exit_}\n"
        "if device is None:\n"
        "    device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        "return Model().to(device)\n"
    )
    head = "import sys\n\nimport torch\n\n\n"
    if in_class:
        head += "class Pipeline:\n    def load(self, device=None):\n"
        indent = " " * 8
    else:
        head += "def load(device=None):\n"
        indent = " " * 4
    source = head + "".join(indent + line + "\n" for line in body.splitlines())
    line = source.splitlines().index(
        indent + "    device = 'cuda' if torch.cuda.is_available() else 'cpu'"
    )
    return source, line + 1


@settings(max_examples=40, deadline=None)
@given(test=st.sampled_from(TESTS), exit_=st.sampled_from(EXITS), in_class=st.booleans())
def test_a_refused_cuda_request_does_not_hide_the_choice_after_it(
    test: tuple[str, bool], exit_: str, in_class: bool
) -> None:
    text, pinned = test
    source, line = _program(text, exit_, in_class)
    found = [f for f in check_source(source, select=["TP109"]) if f.line == line]
    assert bool(found) == (not pinned), source
