"""TP109 leaves ``if use_cuda:`` alone where the flag is the function's own parameter and the
branch only marks NVTX ranges (sample Y's N1, judged noise: pytorch-pfn-extras'
``profiler/_record.py``, ``record(tag, use_cuda=False)`` then ``if use_cuda:
torch.cuda.nvtx.range_pop()``): the caller decides, and no device is picked.

Programs are made for every pair (all 56): where the flag comes from and what the branch
does, each from a table marked by hand (whether the caller alone sets the flag; whether the
branch names CUDA only through NVTX). The oracle: left alone exactly when both hold; TP109
reports every other program as it did.
"""

from __future__ import annotations

from itertools import product

import pytest

from torchport.check._engine import check_text, ruleset_for

# where `use_cuda` comes from -> (the function's head, lines before the branch), and
# whether only the function's caller sets it
FLAGS = {
    "a parameter": ("def record(tag, use_cuda):", [], True),
    "a parameter defaulting to False": ("def record(tag, use_cuda=False):", [], True),
    "a keyword-only parameter": ("def record(tag, *, use_cuda=False):", [], True),
    "a parameter defaulting to is_available()": (
        "def record(tag, use_cuda=torch.cuda.is_available()):",
        [],
        False,
    ),
    "a parameter rebound": (
        "def record(tag, use_cuda=False):",
        ["use_cuda = use_cuda and torch.cuda.is_available()"],
        False,
    ),
    "a local bound to is_available()": (
        "def record(tag):",
        ["use_cuda = torch.cuda.is_available()"],
        False,
    ),
    "a global": ("def record(tag):", [], False),
}
# the branch -> whether it names CUDA only through NVTX (waiting for CUDA beside it, a
# timer's `synchronize()`, picks nothing either); None: it picks no device at all, so no
# flag makes it a choice (samples Y and Z: a branch that only synchronizes, judged low)
BODIES: dict[str, bool | None] = {
    "torch.cuda.nvtx.range_push(tag)": True,
    "torch.cuda.nvtx.range_pop()": True,
    "nvtx.mark(tag)\n        torch.cuda.nvtx.range_pop()": True,
    "torch.cuda.synchronize()": None,
    "torch.cuda.nvtx.range_pop()\n        torch.cuda.synchronize()": True,
    "tag = tag.cuda()": False,
    'torch.cuda.nvtx.range_push(tag)\n        x = torch.zeros(1, device="cuda")': False,
    "torch.cuda.synchronize()\n        tag = tag.cuda()": False,
}


def program(flag: str, body: str) -> str:
    head, before, _ = FLAGS[flag]
    lines = ["import torch", "from torch.cuda import nvtx", "", "use_cuda = True", "", "", head]
    lines += [f"    {line}" for line in before]
    lines += ["    if use_cuda:", f"        {body}", "    return tag", ""]
    return "\n".join(lines)


def reported(source: str) -> bool:
    return any(
        f.code == "TP109"
        for f in check_text(source, "lib.py", ruleset_for(["TP109"], None)).findings
    )


@pytest.mark.parametrize(("flag", "body"), list(product(sorted(FLAGS), sorted(BODIES))))
def test_left_alone_only_for_the_callers_flag_over_nvtx(flag: str, body: str) -> None:
    source = program(flag, body)
    if BODIES[body] is None:
        assert not reported(source), source
        return
    assert reported(source) != (FLAGS[flag][2] and BODIES[body]), source
