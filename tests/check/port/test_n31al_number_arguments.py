"""A count handed to a device tensor's method that takes only numbers: no TP523.

timm's ``inference.py``: ``args.num_classes = model.num_classes``, ``top_k = min(args.topk,
args.num_classes)``, then ``output.topk(top_k)``: the flow took ``top_k`` for an operand that
meets the device value ``output``, and TP523 said "made by `args.num_classes`, which the port
cannot follow, so it may be a tensor on the CPU" (noise, issue 31 item 5). A tensor method whose
every argument is a count, a dim or a flag (``topk``, ``softmax``, ``cumsum``, ``split``,
``tril``, ``sum``...) reads what it is given as a number, wherever it lives: asked of a device
value, its arguments meet nothing (``_device_flow._NUMBER_ARGUMENTS``). A method that takes data
(``out.mul(v)``, ``out.add(v)``, ``out.max(v)``) still makes ``v`` meet ``out``.

The oracle (``no_cuda_sim``, apart from the port): the original on the CPU, the port on the
simulated accelerator. A count: nothing left, the original's values on ``sim:0``. Data of the
same origins: placed or said.
"""

from __future__ import annotations

import pytest
from hypothesis import Phase, example, given, settings
from hypothesis import strategies as st

pytest.importorskip("torch")

from tests.check.port.no_cuda_sim import placed_or_said, ports_on_sim_or_stops
from torchport.check.port import port_text

ORIGINS = {  # (statements, the expression): each gives 2, a number the port cannot follow
    "a config set from the model": ("cfg.k = model.out_features - 3", "cfg.k"),
    "min of a config": ("cfg.k = model.out_features - 3", "min(cfg.k, 4)"),
    "a helper's result": ("", "count()"),
    "an item of the output": ("k = int(out.argmax().item()) % 1 + 2", "k"),
    "an attribute of an object": ("cfg.k = len(model.weight) - 3", "cfg.k"),
}
COUNTS = {  # a method of the device value `out` that reads only numbers
    "topk": "out.topk({k})[0]",
    "softmax": "out.softmax({k} - 1)",
    "cumsum": "out.cumsum({k} - 1)",
    "split": "out.split({k})[0]",
    "tril": "out.tril({k})",
    "sum": "out.sum({k} - 1)",
    "argsort": "out.argsort({k} - 1).float()",
    "kthvalue": "out.kthvalue({k})[0]",
}
DATA = {  # near misses: a method that takes data, handed a CPU tensor of the same origin
    "mul": "out.mul({k})",
    "add": "out.add({k})",
    "max": "out.max({k})",
}
_HEAD = (
    "import torch\n\ntorch.manual_seed(0)\nmodel = torch.nn.Linear(4, 5)\n\n"
    "class Cfg:\n    pass\n\ndef count():\n    return 2\n\n"
)


def _program(origin: str, use: str, in_main: bool) -> str:
    setup, k = ORIGINS[origin]
    if use in DATA:  # the origin gives a tensor on the CPU instead
        setup = setup.replace("model.out_features - 3", "torch.full((5,), 2.0)")
        setup = setup.replace("len(model.weight) - 3", "torch.full((5,), 2.0)")
        setup = setup.replace("int(out.argmax().item()) % 1 + 2", "torch.full((5,), 2.0)")
        k = "torch.full((5,), 2.0)" if k == "count()" else k.replace("min(cfg.k, 4)", "cfg.k")
    body = ["cfg = Cfg()", "x = torch.ones(3, 4)", "out = model(x)", *setup.split("\n")]
    body = [b for b in body if b]
    body.append(f"OUT.append(({(COUNTS | DATA)[use].format(k=k)}).detach())")
    if in_main:
        return _HEAD + "def main():\n" + "".join(f"    {b}\n" for b in body) + "main()\n"
    return _HEAD + "".join(f"{b}\n" for b in body)


CASE = st.tuples(st.sampled_from(sorted(ORIGINS)), st.sampled_from(sorted(COUNTS)), st.booleans())
_EACH = [
    (o, u, i % 2 == 0)
    for i, (o, u) in enumerate(zip(sorted(ORIGINS) * 2, sorted(COUNTS), strict=False))
]


# (each example is one child's run on `sim`: every method and origin once, one drawn list)
@settings(max_examples=1, deadline=None, phases=(Phase.explicit, Phase.generate))
@given(st.lists(CASE, min_size=3, max_size=6))
@example(_EACH)
def test_a_count_handed_to_a_number_method_of_a_device_value_is_not_reported(
    cases: list[tuple[str, str, bool]],
) -> None:
    sources = [_program(*case) for case in cases]
    ports = [port_text(source) for source in sources]
    runs = ports_on_sim_or_stops([(s, p.source) for s, p in zip(sources, ports, strict=True)])
    for case, ported, run in zip(cases, ports, runs, strict=True):
        assert ported.remaining == [], (case, ported.remaining, ported.source)
        assert run.get("same") and run["devices"] == ["sim:0"], (case, run, ported.source)


def test_data_of_the_same_origins_handed_to_a_data_method_is_placed_or_said() -> None:
    placed_or_said(
        [_program(o, u, in_main) for o in sorted(ORIGINS) for u in DATA for in_main in (0, 1)]
    )
