"""A dict literal holding a CPU tensor, copied or handed to a function and read there by key.

``d = {"a": torch.ones(8, 1), "b": model(x)}``, then ``e = dict(d)`` (``{**d}``,
``d.copy()``, ``copy.copy(d)``, ``e = d``) and ``e["a"] + e["b"]``, or ``f(d)`` with ``def
f(p): return p["a"] + p["b"]``: a dict is no device value to the flow, so the CPU item
never met the model's output in its eyes ("0 left"; the port stopped on any accelerator).
The invariant: a copy of a dict literal bound once to a name read only by key reads the
literal's items (and what is stored under their keys; ``_literal_items``), and a dict
literal (or a copy) handed to the file's own function hands its items: a parameter handed
one holding a device value is one there, and the dict's CPU items meet it, so they are
moved where they are made, or reported.

Programs are generated: the copy (seven forms, or none), handed on or not (by position or
keyword, the dict or a copy made in the call), a CPU tensor of several constructors (or a
name bound to one) and the model's output in either order, read by an operator or
``torch.cat``, at module level or in a function. The oracle (``no_cuda_sim``) runs the
original on the CPU and the port on the simulated accelerator: the same values on
``sim:0``, or a finding left. The port is idempotent.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import placed_or_said

pytest.importorskip("torch")

_MADE = {
    "ones": "torch.ones(8, 1)",
    "zeros scaled": "torch.zeros(8, 1) + 2",
    "typed": "torch.FloatTensor([[1.0]] * 8)",
    "tensor": "torch.tensor([[0.5]] * 8)",
}
_COPIES = {  # how `e` is made from `d` (None: no copy, `d` read or handed itself)
    "none": None,
    "dict call": "dict(d)",
    "unpacked": "{**d}",
    "copy method": "d.copy()",
    "copy module": "copy.copy(d)",
    "same dict": "d",
    "dict call with a key": "dict(d, c=3)",
    "unpacked with a key": '{**d, "c": 3}',
}
_HANDED = ("no", "positional", "keyword", "a copy in the call")


def _program(
    copy: str, handed: str, made: str, *, first: bool, named: bool, cat: bool, inside: bool
) -> str:
    cpu, dev = ("c" if named else _MADE[made]), "model(x)"
    items = {"a": cpu, "b": dev} if first else {"b": dev, "a": cpu}
    body = [f"c = {_MADE[made]}"] if named else []
    body.append("d = {" + ", ".join(f'"{k}": {v}' for k, v in items.items()) + "}")
    read = "d"
    if _COPIES[copy] is not None:
        body.append(f"e = {_COPIES[copy]}")
        read = "e"
    combine = 'torch.cat([{0}["a"], {0}["b"]], 1)' if cat else '{0}["a"] * {0}["b"]'
    if handed == "no":
        body.append("r = " + combine.format(read))
    else:
        given = {"positional": read, "keyword": f"p={read}"}.get(handed, f"dict({read})")
        body.append(f"r = combine({given})")
    head = ["import copy", "import torch", "", "torch.manual_seed(0)"]
    head += ["model = torch.nn.Linear(3, 1)", "x = torch.randn(8, 3)", ""]
    head += ["def combine(p):", "    return " + combine.format("p"), ""]
    if inside:
        lines = [*head, "def step(model, x):", *("    " + b for b in body), "    return r", ""]
        lines.append("OUT.append(step(model, x))")
    else:
        lines = [*head, *body, "OUT.append(r)"]
    return "\n".join(lines) + "\n"


_CASE = st.tuples(
    st.sampled_from(list(_COPIES)),
    st.sampled_from(_HANDED),
    st.sampled_from(sorted(_MADE)),
    *[st.booleans()] * 4,
)


# (each example is one simulated-accelerator child: a few, in the default run's budget)
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases=st.lists(_CASE, min_size=4, max_size=4))
@example(cases=[(c, "no", "ones", True, False, False, False) for c in list(_COPIES)[1:]])
@example(
    cases=[
        (c, h, "typed", False, True, True, True) for c in ("none", "unpacked") for h in _HANDED[1:]
    ]
)
def test_a_cpu_item_of_a_copied_or_handed_dict_isplaced_or_said(
    cases: list[tuple[str, str, str, bool, bool, bool, bool]],
) -> None:
    sources = [
        _program(c, h, m, first=first, named=named, cat=cat, inside=inside)
        for c, h, m, first, named, cat, inside in cases
    ]
    placed_or_said(sources)


def test_a_dict_changed_under_two_names_is_not_read_by_key() -> None:
    """Soundness: ``e = d`` then ``e["a"] = ...``: the one dict changed under another name;
    its reads are not taken for the literal's items (the port still places or says)."""
    source = _program("same dict", "no", "ones", first=True, named=False, cat=False, inside=False)
    source = source.replace("e = d\n", 'e = d\ne["a"] = torch.zeros(8, 1)\n')
    placed_or_said([source])
