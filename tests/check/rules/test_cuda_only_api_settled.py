"""TP401 leaves the ``torch.cuda`` counts whose own expression settles what they decide
(``rules/_settled_calls.py``): issue 34, branch k34.

* ``torch.cuda.device_count() > 1 and "cuda" in device.type``: the ``and`` is false wherever
  the device is not CUDA, and the count (0 without CUDA) never raises. Near misses stay
  reported: an ``or``, a later test that holds on other devices too (``!= "cpu"``, a plain
  flag), another call than the count (a memory read, a ``synchronize``).
* ``a if torch.cuda.device_count() else a``: both arms the same, the count picks nothing;
  different arms stay reported.

The oracles read the generated parts' labels, never the checker.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

RULES = ruleset_for(["TP401"], None)


def _reported(source: str) -> bool:
    return bool(check_text(source, "pkg/parallel.py", RULES).findings)


CALLS = ("device_count()", "memory_allocated()", "max_memory_reserved()")
# (a test of the device, whether it holds only where the device is CUDA)
TESTS = (
    ('"cuda" in device.type', True),
    ('device.type == "cuda"', True),
    ("x.is_cuda", True),
    ('str(device).startswith("cuda")', True),
    ('device.type != "cpu"', False),
    ('device.type == "mps"', False),
    ("ready", False),
)


@given(
    call=st.sampled_from(CALLS),
    compare=st.sampled_from(["> 1", ">= 2", "", "- 1 > 0"]),
    test=st.sampled_from(TESTS),
    op=st.sampled_from(["and", "or"]),
    as_if=st.booleans(),
)
def test_a_count_an_and_then_demands_cuda_for_decides_nothing(
    call: str, compare: str, test: tuple[str, bool], op: str, as_if: bool
) -> None:
    condition = f"torch.cuda.{call} {compare} {op} {test[0]}".replace("  ", " ")
    line = f"if {condition}:\n    model = wrap(model)" if as_if else f"wrap_it = {condition}"
    source = f"import torch\n\n{line}\n"
    settled = call == "device_count()" and op == "and" and test[1]
    assert _reported(source) != settled, source


ARMS = ("args.device", '"cpu"', "device", "torch.device(args.device)")


@given(
    first=st.sampled_from(ARMS),
    second=st.sampled_from(ARMS),
    compare=st.sampled_from(["", " > 0", " > 1"]),
    call=st.sampled_from(["device_count", "memory_allocated"]),
)
def test_a_count_between_two_same_arms_decides_nothing(
    first: str, second: str, compare: str, call: str
) -> None:
    source = f"import torch\n\nd = {first} if torch.cuda.{call}(){compare} else {second}\n"
    assert _reported(source) != (first == second), source
