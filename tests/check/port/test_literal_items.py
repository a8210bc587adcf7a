"""A CPU tensor kept beside a device value in a container literal, read back by key or index.

``d = dict(a=torch.zeros(8, 1), b=model(x))``, then ``d["a"] + d["b"]``: the flow took the
container whole (``dict(...)`` and ``{...}`` as no device value, a tuple or list as one
where any item is), so the two reads never met in its eyes: "0 left", and the port stopped
on any accelerator. The invariant: a constant subscript of a name bound once to a container
literal, and read only so, is the item it reads (``_literal_items``); the CPU item is moved
where it is made, or reported, never left silently.

Programs are generated: a container of four kinds (a ``dict(...)`` call, a ``{...}``
display, a tuple, a list) holding a CPU tensor of several constructors (or a name bound to
one) and a model's output, in either order, read back in several forms (an operator, a
torch function of both, names bound to the reads, a negative index), at module level or in
a function. The oracle (``no_cuda_sim``) runs the original on the CPU and the port on the
simulated accelerator: the same values on ``sim:0``, or a finding left. The port is
idempotent. A container the code changes, or hands on, is drawn apart (its forms listed);
a dict literal copied or handed on: ``test_dict_copies.py``.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import placed_or_said
from torchport.check.port import port_text

pytest.importorskip("torch")

_MADE = {  # a CPU tensor the shape of the model's output (8, 1)
    "zeros": "torch.zeros(8, 1)",
    "ones scaled": "torch.ones(8, 1) * 2",
    "arange": "torch.arange(8.0).view(8, 1)",
    "typed": "torch.FloatTensor([[1.0]] * 8)",
    "tensor": "torch.tensor([[0.5]] * 8)",
}
_KINDS = ("dict call", "dict display", "tuple", "list")
_READS = ("add", "cat", "named", "negative")


def _program(kind: str, made: str, read: str, *, first: bool, named: bool, inside: bool) -> str:
    """One program: the container, its two reads combined, the result appended to ``OUT``."""
    cpu, dev = ("c" if named else _MADE[made]), "model(x)"
    keys = ("a", "b") if first else ("b", "a")  # the CPU item's key, the device item's
    items = {keys[0]: cpu, keys[1]: dev}
    order = sorted(items)
    if kind == "dict call":
        made_as = "dict(" + ", ".join(f"{k}={items[k]}" for k in order) + ")"
    elif kind == "dict display":
        made_as = "{" + ", ".join(f'"{k}": {items[k]}' for k in order) + "}"
    else:
        inner = ", ".join(items[k] for k in order)
        made_as = f"({inner})" if kind == "tuple" else f"[{inner}]"
    if kind.startswith("dict"):
        at = {k: f'"{k}"' for k in order}
    else:  # an index; `negative`: counted from the end
        at = {k: str(i - 2 if read == "negative" else i) for i, k in enumerate(order)}
    host, device = f"m[{at[keys[0]]}]", f"m[{at[keys[1]]}]"
    if read == "cat":
        use = [f"r = torch.cat([{host}, {device}], 1)"]
    elif read == "named":
        use = [f"h = {host}", f"v = {device}", "r = v * h"]
    else:
        use = [f"r = {host} + {device}"]
    body = ([f"c = {_MADE[made]}"] if named else []) + [f"m = {made_as}", *use]
    head = ["import torch", "", "torch.manual_seed(0)", "model = torch.nn.Linear(3, 1)"]
    head.append("x = torch.randn(8, 3)")
    if inside:
        lines = [*head, "", "def step(model, x):", *("    " + b for b in body), "    return r"]
        lines += ["", "OUT.append(step(model, x))"]
    else:
        lines = [*head, *body, "OUT.append(r)"]
    return "\n".join(lines) + "\n"


# (each example is one simulated-accelerator child: a few, in the default run's budget)
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cases=st.lists(
        st.tuples(
            st.sampled_from(_KINDS),
            st.sampled_from(sorted(_MADE)),
            st.sampled_from(_READS),
            st.booleans(),
            st.booleans(),
            st.booleans(),
        ),
        min_size=4,
        max_size=4,
    )
)
@example(cases=[(kind, "zeros", "add", True, False, False) for kind in _KINDS])
@example(cases=[(kind, "typed", "named", False, True, True) for kind in _KINDS])
def test_a_cpu_item_beside_a_device_item_isplaced_or_said(
    cases: list[tuple[str, str, str, bool, bool, bool]],
) -> None:
    sources = [
        _program(kind, made, read, first=first, named=named, inside=inside)
        for kind, made, read, first, named, inside in cases
    ]
    placed_or_said(sources)


def test_the_item_is_moved_where_it_is_made() -> None:
    """The preferred answer: placed, not reported (the CPU item alone meets the model)."""
    for kind in _KINDS:
        source = _program(kind, "zeros", "add", first=True, named=False, inside=False)
        port = port_text(source)
        assert not port.remaining, port.remaining
        assert "torch.zeros(8, 1, device=device)" in port.source, port.source


_CHANGED = {  # the container changed, or read other than by key, after it is made
    "list appended": "m = [torch.ones(8, 1), model(x)]\nm.append(1)\nr = m[0] + m[1]",
    "list stored": "m = [torch.ones(8, 1), model(x)]\nm[0] = torch.zeros(8, 1)\nr = m[0] + m[1]",
    "list sized": "m = [torch.ones(8, 1), model(x)]\nprint(len(m))\nr = m[0] + m[-1]",
    "list copied": "m = [torch.ones(8, 1), model(x)]\nn = m\nr = n[0] + n[1]",
    "list looped": "m = [torch.ones(8, 1), model(x)]\nr = 0\nfor t in m:\n    r = r + t",
    "tuple handed": "def f(p):\n    return p[0] + p[1]\n\n"
    "m = (torch.ones(8, 1), model(x))\nr = f(m)",
    "dict stored": 'm = dict(a=torch.ones(8, 1), b=model(x))\nm["a"] = torch.zeros(8, 1)\n'
    'r = m["a"] * m["b"]',
    "dict new key": 'm = {"b": model(x)}\nm["c"] = torch.ones(8, 1)\nr = m["c"] + m["b"]',
}
_HANDED_DICTS = {  # a dict literal copied, or handed to the file's function (p31n)
    "dict copied": 'm = {"a": torch.ones(8, 1), "b": model(x)}\nn = m\nr = n["a"] + n["b"]',
    "dict handed": 'def f(d):\n    return d["a"] + d["b"]\n\n'
    'm = {"a": torch.ones(8, 1), "b": model(x)}\nr = f(m)',
}
_HEAD = (
    "import torch\n\ntorch.manual_seed(0)\nmodel = torch.nn.Linear(3, 1)\nx = torch.randn(8, 3)\n"
)


def test_a_container_the_code_changes_or_hands_on_isplaced_or_said() -> None:
    """A key stored, ``len``, a list grown at its end: still read by item; a container
    handed on, copied or looped over: taken whole, each of its items then put where the
    whole is (every case in one child)."""
    placed_or_said([_HEAD + body + "\nOUT.append(r)\n" for body in _CHANGED.values()])


def test_a_dict_literal_copied_or_handed_on_isplaced_or_said() -> None:
    """A dict is still no device value to the flow, whatever it holds (taken whole, the items
    of checkpoints and records met the device: ``torch.save({...}, path)``, five more findings
    on fairseq); a copy bound to a name read by key reads the literal's items, and a dict
    handed to the file's own function hands its items (p31n; ``test_dict_copies.py``)."""
    placed_or_said([_HEAD + body + "\nOUT.append(r)\n" for body in _HANDED_DICTS.values()])
