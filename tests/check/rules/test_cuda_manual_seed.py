"""TP402 leaves a CUDA seed that ``torch.manual_seed`` has already covered on every path.

Programs are generated: the CUDA seed sits under a few nested blocks (``if
torch.cuda.is_available():``, a loop, a ``with``, a ``try``) of a function, and
``torch.manual_seed`` is placed at one level of that nesting, either before the
block that holds the call (so it runs first on every path), inside a sibling block
that does not hold it, after the call, or in the enclosing function of a nested
``def``; the CUDA seed may be followed by a ``return``. The oracle is that placement,
known by construction: the rule stays quiet for a seed placed before, however many
statements above (sample U's outlier-exposure seeds 56 lines above its CUDA seed, judged
noise), and for one placed after where every path on from the CUDA seed reaches it (no
``return`` after the CUDA seed, no ``while`` between them: sample X's LightGCN), and
reports every other placement.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

WRAPPERS = (
    "if torch.cuda.is_available():",
    "for _ in range(2):",
    "with ctx:",
    "try:",
    "while s:",
)
SEEDS = ("torch.cuda.manual_seed(s)", "torch.cuda.manual_seed_all(s)")


def program(
    levels: list[str], seed_level: int, placement: str, gap: int, cuda: str, leave: bool
) -> str:
    """A function whose CUDA seed is nested in ``levels``; the CPU seed as placed."""

    def block(depth: int, indent: str) -> list[str]:
        here = depth == seed_level
        lines = []
        if here and placement == "before":
            lines += [indent + "torch.manual_seed(s)"] + [indent + "random.seed(s)"] * gap
        if here and placement == "sibling":
            lines += [indent + "if s:", indent + "    torch.manual_seed(s)"]
        if depth == len(levels):
            lines.append(indent + cuda)
            if leave:
                lines.append(indent + "return")
        else:
            lines += [indent + levels[depth], *block(depth + 1, indent + "    ")]
            if levels[depth] == "try:":
                lines += [indent + "except RuntimeError:", indent + "    pass"]
        if here and placement == "after":
            lines.append(indent + "torch.manual_seed(s)")
        return lines

    head = ["import random", "import torch", "", ""]
    if placement == "outer function":
        head += ["def outer(s):", "    torch.manual_seed(s)", "", "    def seed(s):"]
        return "\n".join([*head, *block(0, "        ")]) + "\n"
    return "\n".join([*head, "def seed(s):", *block(0, "    ")]) + "\n"


@settings(max_examples=200)  # small programs, checked in ~1 ms each: placements x exits
@given(
    levels=st.lists(st.sampled_from(WRAPPERS), max_size=3),
    data=st.data(),
    placement=st.sampled_from(["before", "sibling", "after", "outer function", "none"]),
    gap=st.integers(0, 60),
    cuda=st.sampled_from(SEEDS),
    leave=st.booleans(),
)
def test_reported_unless_seeded_on_every_path(
    levels: list[str], data: st.DataObject, placement: str, gap: int, cuda: str, leave: bool
) -> None:
    seed_level = data.draw(st.integers(0, len(levels)))
    source = program(levels, seed_level, placement, gap, cuda, leave)
    found = check_text(source, "m.py", ruleset_for(["TP402"], None)).findings
    between = levels[seed_level:]  # the blocks the CUDA seed is in and the later one is not
    after = placement == "after" and not leave and "while s:" not in between
    covered = placement == "before" or after
    assert bool(found) != covered, source
