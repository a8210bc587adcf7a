"""Code after a CUDA-only import in a block holding it needs CUDA anyway (``needs_cuda_here``).

Vendored apex (sample U, TP104 0 of 6) sets its overflow buffer right after the import of its
CUDA kernels, inside a method: ``if multi_tensor_applier.available: import amp_C`` then
``self._overflow_buf = torch.cuda.IntTensor([0])``. That line runs only once the import
succeeded, so naming another device there helps no one: a default run leaves it to the rules a
user names, as it does a file whose top level imports such a package (``test_cuda_projects``).

Programs are drawn: the CUDA line (TP104's ``torch.cuda.IntTensor``, TP402's seed) nested in a
method under a few blocks (``if``, ``for``, ``with``, ``try``); the import, of a CUDA-only
package or of a name that only mentions one, placed at one level of that nesting: before
the block holding the line (on every path to it), after the line, in a sibling ``if`` that
does not hold it, in the ``except`` arm of a ``try`` around the line's block, in another
method. The oracle is that placement, known by construction, and the tables: a default run
leaves the line alone exactly when a CUDA-only import is placed before it; a run naming the
rule reports it all the same.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.check.rules.default_probes import on_by_default
from torchport.check._engine import check_text, ruleset_for


@pytest.fixture(autouse=True, scope="module")
def _probes_on_by_default() -> Iterator[None]:
    # the probes as on by default everywhere: what is left out must not hang on today's set
    with on_by_default("TP104", "TP402"):
        yield


WRAPPERS = ("if FLAG:", "for _ in range(2):", "with ctx:", "try:")
# What is imported, and whether it is a CUDA-only package (a name that mentions one is not)
IMPORTS = {
    "import amp_C": True,
    "from apex.optimizers import FusedAdam": True,  # apex's parts built on its kernels
    "import apex.contrib.optimizers": True,
    "from apex import amp": False,  # apex's Python parts, which a port replaces with torch's
    "import apex.parallel": False,
    "from auto_gptq import AutoGPTQForCausalLM": True,
    "import tensorrt as trt": True,
    "from gsplat import rasterization": True,
    "import mamba_ssm": True,
    "import flashinfer": True,  # attention kernels for CUDA (and ROCm, still "cuda")
    "from flash_attn import flash_attn_func": True,
    "from flash_attention import attention": False,  # another package, by its name
    "from utils import apex": False,  # a module of the project named like the package
    "import amp_C_helpers": False,
    "import deepspeed": False,  # runs on CPU, XPU and NPU accelerators too
    "import triton": False,
    "from isaacgym import gymapi": True,  # NVIDIA's robot simulators (held-out sample AK)
    "from isaaclab.app import AppLauncher": True,
    "import isaacsim": True,
    "import isaacgym_utils": False,  # another package, by its name
}
LINES = {"TP104": "self.buf = torch.cuda.IntTensor([0])", "TP402": "torch.cuda.manual_seed(0)"}
PLACEMENTS = ("before", "after", "sibling", "except", "other method", "none")


def program(levels: list[str], level: int, placement: str, imported: str, line: str) -> str:
    """A class whose method holds ``line`` under ``levels``; the import placed as drawn."""

    def block(depth: int, indent: str) -> list[str]:
        here = depth == level
        out = []
        if here and placement == "before":
            out += [indent + imported, indent + "self.ready = True"]
        if here and placement == "sibling":
            out += [indent + "if FLAG:", indent + "    " + imported]
        if depth == len(levels):
            out.append(indent + line)
        else:
            out += [indent + levels[depth], *block(depth + 1, indent + "    ")]
            if levels[depth] == "try:":
                arm = [indent + "    " + imported] if here and placement == "except" else []
                out += [indent + "except ImportError:", *(arm or [indent + "    pass"])]
        if here and placement == "after":
            out.append(indent + imported)
        return out

    head = ["import torch", "", "FLAG = True", "", "", "class Optimizer:"]
    other = ["    def load(self):", "        " + imported, ""]
    method = ["    def __init__(self):", *block(0, "        ")]
    return "\n".join([*head, *(other if placement == "other method" else []), *method]) + "\n"


@given(
    levels=st.lists(st.sampled_from(WRAPPERS), max_size=3),
    data=st.data(),
    placement=st.sampled_from(PLACEMENTS),
    imported=st.sampled_from(sorted(IMPORTS)),
    code=st.sampled_from(sorted(LINES)),
)
def test_a_default_run_leaves_code_after_a_cuda_only_import_in_its_block(
    levels: list[str], data: st.DataObject, placement: str, imported: str, code: str
) -> None:
    level = data.draw(st.integers(0, len(levels)))
    if placement == "except" and (level == len(levels) or levels[level] != "try:"):
        placement = "none"  # no `try` at that level: no `except` arm to place it in
    source = program(levels, level, placement, imported, LINES[code])
    needs = placement == "before" and IMPORTS[imported]
    default = [f.code for f in check_text(source, "m.py", ruleset_for(None, None)).findings]
    assert (code in default) != needs, source
    named = check_text(source, "m.py", ruleset_for([code], None)).findings
    assert [f.code for f in named] == [code], source  # named, the rule reports it all the same


def test_every_cuda_only_package_in_the_table_is_drawn_before_the_line_at_least_once() -> None:
    """The draw above may miss an entry; each True entry, placed before the line, is asked here."""
    for imported, needs in IMPORTS.items():
        for code, line in LINES.items():
            source = program([], 0, "before", imported, line)
            default = [f.code for f in check_text(source, "m.py", ruleset_for(None, None)).findings]
            assert (code in default) != needs, source
