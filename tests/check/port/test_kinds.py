"""The port moves only what it knows is a tensor, and reports what it cannot tell.

Generated call sites and loops fill parameters and loop variables with values of
known kinds; the oracle, written apart from the port's analysis, says for each
name whether it must be moved (every value a tensor), left alone (no value a
tensor) or reported (the values disagree, or the callers are not all visible).
"""

from __future__ import annotations

import ast

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check.port import port_text

# name -> (source text of a value of that kind, whether it is a tensor)
VALUES = {
    "tensor": ("torch.randn(2, 4)", True),
    "typed": ("torch.FloatTensor(2, 4)", True),
    "float": ("0.5", False),
    "int": ("3", False),
    "str": ("'relu'", False),
    "bool": ("True", False),
    "none": ("None", False),
    "class": ("int", False),
}
HEAD = "import torch\n\nmodel = torch.nn.Linear(4, 2)\n"


def _moved(ported: str, name: str) -> bool:
    return f"{name} = {name}.to(device" in ported or f"{name}.to(device, " in ported


def _reported(source: str, name: str) -> bool:
    return any(f.code == "TP520" and f"`{name}`" in f.message for f in port_text(source).remaining)


@settings(max_examples=60, deadline=None)
@given(
    sites=st.lists(st.sampled_from(sorted(VALUES)), min_size=0, max_size=3),
    annotated=st.booleans(),
)
def test_a_parameter_is_moved_only_when_every_caller_gives_a_tensor(
    sites: list[str], annotated: bool
) -> None:
    annotation = ": torch.Tensor" if annotated else ""
    calls = "".join(f"step(model, {VALUES[kind][0]})\n" for kind in sites)
    source = HEAD + f"def step(net, value{annotation}):\n    return net(value)\n\n" + calls
    ported = port_text(source).source
    tensors = {VALUES[kind][1] for kind in sites}
    # Each tensor here is a creator written in the call, which the port makes on the device
    # there (TP503): `step` is handed device tensors and non-tensors only (issue 31, q31t)
    for kind in sites:
        if VALUES[kind][1]:
            assert f"{VALUES[kind][0]}.to(device)" in ported, ported
    if annotated:
        assert _moved(ported, "value"), ported
        assert not _reported(source, "value")
    elif tensors:  # on the device where made (moved again nowhere), or no tensor: left
        assert not _moved(ported, "value") and not _reported(source, "value"), ported
    else:  # no caller here: cannot be told
        assert not _moved(ported, "value"), ported
        assert _reported(source, "value")
    ast.parse(ported)


@settings(max_examples=60, deadline=None)
@given(items=st.lists(st.sampled_from(sorted(VALUES)), min_size=1, max_size=3))
def test_a_loop_variable_is_moved_only_when_every_item_is_a_tensor(items: list[str]) -> None:
    listed = ", ".join(VALUES[kind][0] for kind in items)
    source = HEAD + f"for item in [{listed}]:\n    out = model(item)\n"
    ported = port_text(source).source
    tensors = {VALUES[kind][1] for kind in items}
    if tensors == {False}:
        assert "item.to(" not in ported and not _reported(source, "item")
    elif tensors == {True}:
        assert "item.to(" in ported or "torch.randn(2, 4).to(device)" in ported
    else:
        assert "item.to(" not in ported and _reported(source, "item")


def test_a_module_without_torch_is_not_ported() -> None:
    source = (
        "def build(net, gamma):\n    return net(gamma)\n\n"
        "for name in ['a', 'b']:\n    print(build(len, name))\n"
        "model = object()\nfor x in data:\n    model(x)\n"
    )
    outcome = port_text(source)
    assert outcome.source == source and outcome.remaining == []


def test_library_internals_get_no_moves() -> None:
    source = HEAD + (
        "from torch.utils.data import Dataset\n\n"
        "class Sgd(torch.optim.Optimizer):\n"
        "    def step(self, closure=None):\n"
        "        for group in self.param_groups:\n"
        "            for p in group['params']:\n"
        "                p.data.add_(p.grad)\n\n"
        "class Data(Dataset):\n"
        "    def __getitem__(self, i):\n"
        "        x = torch.zeros(4)\n"
        "        return model(x)\n\n"
        "class Net(torch.nn.Module):\n"
        "    def forward(self, batch):\n"
        "        for x in batch:\n"
        "            x = self.fc(x)\n"
        "        return x\n"
    )
    ported = port_text(source).source
    internals = ported[ported.index("class Sgd") :]
    assert ".to(" not in internals and "device=device" not in internals


PLACEMENTS = (
    'device_map="auto"',
    "load_in_8bit=True",
    "load_in_4bit=True",
    "quantization_config=bnb",
    "**options",
    'device_map={"": 0}',
)


@given(st.sampled_from(PLACEMENTS), st.booleans())
def test_a_model_placed_by_its_loader_is_reported_never_moved(option: str, wrapped: bool) -> None:
    load = f'AutoModel.from_pretrained("gpt2", {option})'
    if wrapped:
        load = f"torch.compile({load}).eval()"
    source = "import torch\nfrom transformers import AutoModel\n\n" + f"model = {load}\n"
    outcome = port_text(source + "out = model(ids)\n")  # `ids`: TP523's (made elsewhere)
    assert ".to(" not in outcome.source
    placed = [f for f in outcome.remaining if f.code == "TP501"]
    assert len(placed) == 1 and "placed by its loader" in placed[0].message
    # never called nor handed on (only an attribute read): no inputs to move, nothing said
    quiet = port_text(source + "OUT.append(model.config)\n")
    assert ".to(" not in quiet.source and quiet.remaining == [], quiet.remaining


@given(st.sampled_from(PLACEMENTS), st.sampled_from(["model(ids)", "model.generate(ids)",
       "run(model)", "models = [model]"]))  # fmt: skip
def test_a_placed_model_that_runs_or_is_handed_on_is_reported(option: str, use: str) -> None:
    source = (
        "import torch\nfrom transformers import AutoModel\n\n"
        f'model = AutoModel.from_pretrained("gpt2", {option})\nsize = model.config\n{use}\n'
    )
    assert "TP501" in [f.code for f in port_text(source).remaining]


@given(
    st.sampled_from(
        [
            ("from .base import BaseLoss\n", "BaseLoss"),
            ("from ..losses.base import Generic as Loss\n", "Loss"),
            ("from . import base\n", "base.BaseLoss"),
            ("from .base import BaseLoss\n", "BaseLoss[int]"),
            ("import mylib.losses as L\n", "L.Base"),
        ]
    )
)
def test_a_class_built_on_an_imported_base_is_left_alone(base: tuple[str, str]) -> None:
    """A package's own base class (a relative import) is a library's class too."""
    imports, name = base
    source = (
        f"import torch\n{imports}\n"
        f"class MyLoss({name}):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.act = torch.nn.Softplus(beta=1)\n"
        "    def compute(self, embeddings):\n"
        "        idx = torch.arange(embeddings.shape[0])\n"
        "        return idx * self.act(embeddings).sum()\n"
    )
    outcome = port_text(source)
    assert outcome.source == source and outcome.remaining == [], outcome.source
