"""TP202 leaves a number read per iteration that sizes the work the iteration launches next.

Generated loops run a model, read ``counts[i].item()`` (bare, in arithmetic, or wrapped
in ``round``/``max``; ``int(...)`` is left already, as an index), keep it under a name
drawn at random or hand it straight to a call, and use it in one or two ways drawn at
random: as the first argument or a keyword of a call whose result is assigned (``x =
gen.sample(n, ...)``), as another argument, in a sink (``sizes.append(n)``, ``total +=
n``, a call whose result is dropped), in a conversion (``m = float(n)``).
The oracle is a table written apart: the read is needed now only when the number reaches
an assigned call as its first argument (through a name that counts work: ``n``,
``num_samples``, ``batch_size``; not ``num_correct`` or ``loss``) or as a keyword that
counts work (``num_samples=``, ``n=``); every other read is reported.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

NAMES = {  # a name the number is kept under, and whether it counts work
    "n": True,
    "k": True,
    "num_samples": True,
    "n_steps": True,
    "batch_size": True,
    "max_len": True,
    "num_correct": False,
    "n_loss": False,
    "loss": False,
    "value": False,
    "total_size": False,
}
USES = {  # a use of the name (`{}`), and whether it sizes a call whose result is kept
    "x = gen.sample({}, 3)": True,
    "x, y = gen.sample_all({}, batch, dist)": True,
    "x = gen.sample(3, num_samples={})": True,
    "x = gen.sample(3, {})": False,  # not the first argument, no keyword: a value
    "x = gen.sample(3, scale={})": False,
    "gen.sample({})": False,  # the result is dropped
    "sizes.append({})": False,
    "total += {}": False,
    "m = float({})": False,
    "print({})": False,
}
READS = ("counts[i].item()", "quota - counts[i].item()", "round(counts[i].item() * frac)",
         "max(1, counts[i].item() // 2)")  # fmt: skip
KEYWORDS = {"num_samples": True, "n": True, "size": True, "scale": False, "weight": False}


def reported(source: str) -> bool:
    return bool(check_text(source, "m.py", ruleset_for(["TP202"], None)).findings)


def loop(*body: str) -> str:
    lines = ["for i in range(rounds):", "    out = model(x)", *(f"    {line}" for line in body)]
    return "import torch\n\n" + "\n".join(lines) + "\n"


@given(
    name=st.sampled_from(sorted(NAMES)),
    uses=st.lists(st.sampled_from(sorted(USES)), min_size=1, max_size=2),
    read=st.sampled_from(READS),
)
def test_a_number_kept_under_a_name_that_sizes_the_next_call_is_left(
    name: str, uses: list[str], read: str
) -> None:
    source = loop(f"{name} = {read}", *(use.format(name) for use in uses))
    needed = NAMES[name] and any(USES[use] for use in uses)
    assert reported(source) != needed, source


@given(keyword=st.sampled_from(sorted(KEYWORDS)), read=st.sampled_from(READS), kept=st.booleans())
def test_a_number_handed_straight_to_a_keyword_that_counts_work_is_left(
    keyword: str, read: str, kept: bool
) -> None:
    call = f"gen.sample(3, {keyword}={read})"
    source = loop(f"x = {call}" if kept else call)
    assert reported(source) != (KEYWORDS[keyword] and kept), source
