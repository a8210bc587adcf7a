"""Values that flow through an iteration or an unpacking carry what the flow knows of the items.

A ``for`` statement over the model's outputs made each item a device value, and a host tensor
made beside it was moved; a comprehension over the same list (``[t * torch.ones(2) for t in
ts]``, ``sum(t * w for t in ts)``), a ``zip``/``enumerate`` of it, a starred target (``a, *rest
= model(x), torch.zeros(2)``) or a starred argument (``f(*outs)``) was followed nowhere: the
port said "0 left" of a program that mixes devices on the accelerator (issue 31; d31ai's
strict xfail and its "Left"). The invariant (``_iterated.taken``, ``_structure._pairs``,
``_call_sites.handed``): a target of a ``for`` statement or a comprehension's ``for`` takes an
item of what it iterates (through ``enumerate``, ``zip``, ``sorted``, ``list``...), a starred
target one of the items it takes, a parameter from a starred argument's place on one of its
items; where the flow cannot tell the items (a dict's ``.values()``, a lambda handed to
``map``), the tensor met there is reported (``_side_computations`` follows a comprehension's
items and a loop's, ``_lambdas`` reports a loose lambda's), never left silent.

The oracle (``no_cuda_sim.placed_or_said``, written apart from the port): each original on the
CPU, its port on the simulated accelerator: a finding left, or the original's values with
every printed tensor on ``sim:0``.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import Phase, example, given, settings
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import placed_or_said

pytest.importorskip("torch")

_HEAD = "import torch\nfrom torch import nn\n\nnet = nn.Linear(2, 2)\nx = torch.randn(3, 2)\n"
CONTAINERS = {  # `ts`, and how its items are iterated (`{c}` in a form)
    "a tuple": ("ts = (net(x), net(x) * 2)", "ts"),
    "a list": ("ts = [net(x), torch.zeros(3, 2)]", "ts"),  # a host item the list puts there
    "appended": ("ts = []\nfor _ in range(2):\n    ts.append(net(x))", "ts"),
    "chunks": ("ts = net(x).chunk(2, dim=1)", "ts"),
    "a dict's values": ("ts = {'a': net(x), 'b': net(x) * 2}", "ts.values()"),
}
MAKERS = {  # the host tensor made beside each item (`W`: made before, by name)
    "ones": "torch.ones(2)",
    "tensor": "torch.tensor([1.0, 2.0])",
    "a name": "W",
    "arange": "torch.arange(2.0)",
}
# How the items give `res`, the results (`{e}`: the item `t` met by the host tensor)
FORMS = {
    "a for statement": "res = []\nfor t in {c}:\n    res.append({e})",
    "a list comprehension": "res = [{e} for t in {c}]",
    "a generator": "res = ({e} for t in {c})",
    "a set comprehension": "res = sorted({{{e} for t in {c}}}, key=lambda v: float(v.sum()))",
    "a dict comprehension": "res = {{i: {e} for i, t in enumerate({c})}}.values()",
    "nested": "res = [v for row in [[{e} for t in {c}] for _ in range(2)] for v in row]",
    "enumerate": "res = [{e} for i, t in enumerate({c})]",
    "zip": "res = [{e} + s for t, s in zip({c}, {c})]",
    "zip in a for statement": "res = []\nfor t, s in zip({c}, {c}):\n    res.append({e} + s)",
    "sorted": "res = [{e} for t in sorted({c}, key=lambda v: float(v.sum()))]",
    "map": "res = map(lambda t: {e}, {c})",
    "a starred list": "res = [{e} for t in [*{c}]]",
    "a starred target": "first, *more = {c}\nres = [{e} for t in (first, *more)]",
    "a starred argument": "def each(*items):\n    return [{e} for t in items]\nres = each(*{c})",
    "starred parameters": "def pair(t, u):\n    return [{e}, {e} + u]\nres = pair(*{c})",
}
CONSUMERS = {  # what is printed (the program's `print` hands the tensors to the oracle)
    "print": "print(*res)",
    "sum": "print(sum(res))",
    "torch.stack": "print(torch.stack(list(res)))",
    "torch.cat": "print(torch.cat(tuple(res)))",
    "max": "print(max(res, key=lambda v: float(v.sum())))",
}
_Case = tuple[str, str, str, str]
CASE = st.tuples(*(st.sampled_from(sorted(t)) for t in (FORMS, CONTAINERS, MAKERS, CONSUMERS)))
# d31ai's strict xfail, and one of each form, container, maker and consumer
_EACH: list[_Case] = [
    ("a list comprehension", "a tuple", "ones", "print"),
    ("a generator", "a list", "ones", "sum"),
    ("a for statement", "a list", "a name", "print"),  # (the near form: held on the base)
]
_EACH += [
    (f, sorted(CONTAINERS)[i % 5], sorted(MAKERS)[i % 4], sorted(CONSUMERS)[(i + 1) % 5])
    for i, f in enumerate(sorted(FORMS))
]


def program(form: str, container: str, maker: str, consumer: str) -> str:
    """The program of one case (the model's outputs in ``ts``, the results printed)."""
    made, items = CONTAINERS[container]
    before = "W = torch.ones(2)\n" if maker == "a name" else ""
    body = FORMS[form].format(c=items, e=f"t * {MAKERS[maker]}")
    return f"{_HEAD}{before}{made}\n{body}\n{CONSUMERS[consumer]}\n"


# the default run: the explicit cases (one child on `sim`, 18 programs); every case, the
# slow test below
@settings(deadline=None, phases=(Phase.explicit,))
@given(st.lists(CASE, min_size=4, max_size=8))
@example(_EACH)
def test_a_host_tensor_met_by_iterated_device_values_is_placed_or_said(cases: list[_Case]) -> None:
    placed_or_said([program(*c) for c in cases], printed=True)


@pytest.mark.slow  # the whole table (1,500 programs) in one child
def test_every_iterated_form_is_placed_or_said() -> None:
    cases = itertools.product(sorted(FORMS), sorted(CONTAINERS), sorted(MAKERS), sorted(CONSUMERS))
    placed_or_said([program(*c) for c in cases], printed=True)
