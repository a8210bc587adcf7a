"""Tensors that meet the model by less direct roads are moved or reported, never left silent.

Each program is built from parts hypothesis draws; the oracle is the meta run of
``test_port_fuzz`` (``check_port``): the ported program, with ``meta`` standing
in for the accelerator, has every forward's parameters and inputs on it, or the
port left findings. The roads: items of a list or tuple handed to a call next
to a device value (``torch.cat([out, torch.zeros(...)])``), a name a
function rebinds through ``global`` or ``nonlocal``, a model handed to a method of the file's
own class, and a model put into a container or a ``functools.partial``.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.check.port.siblings import load
from torchport.check.port import port_text

HERE = Path(__file__).parent


fuzz = load("port_fuzz_oracle", HERE / "test_port_fuzz.py")

HEAD = "import torch\ntorch.manual_seed(0)\nmodel = torch.nn.Linear(4, 2)\n"
MAKERS = ("torch.zeros(1, 2)", "torch.ones(1, 2) * 3", "torch.tensor([[1.0, 2.0]])")


@settings(max_examples=12, deadline=None)
@given(
    op=st.sampled_from(["torch.cat", "torch.stack"]),
    kind=st.sampled_from(["list", "tuple", "starred"]),
    makers=st.lists(st.sampled_from(MAKERS), min_size=1, max_size=2),
    first=st.booleans(),
)
def test_items_beside_a_device_value_are_moved(
    op: str, kind: str, makers: list[str], first: bool
) -> None:
    items = ["out", *makers] if first else [*makers, "out"]
    inner = ", ".join(items)
    argument = {"list": f"[{inner}]", "tuple": f"({inner},)", "starred": f"[*[{inner}]]"}[kind]
    source = HEAD + f"out = model(torch.ones(1, 4))\nOUT.append({op}({argument}).detach())\n"
    fuzz.check_port(source)
    ported = port_text(source).source
    assert ported.count("device=device") == 1 + len(makers), ported  # x's and every maker's


@settings(max_examples=10, deadline=None)
@given(
    value=st.sampled_from(["torch.ones(1, 4)", "torch.randn(1, 4)", "make()"]),
    before=st.sampled_from(["None", "0.0", "torch.zeros(1, 4)"]),
    called=st.booleans(),
)
def test_a_name_a_function_rebinds_through_global(value: str, before: str, called: bool) -> None:
    source = HEAD + (
        "def make():\n    return torch.ones(1, 4)\n"
        f"x = {before}\n"
        f"def setup():\n    global x\n    x = {value}\n"
        + ("setup()\n" if called else "")
        + "if x is not None and not isinstance(x, float):\n    OUT.append(model(x).detach())\n"
    )
    fuzz.check_port(source)
    if called:  # the binding in `setup` may reach the forward: moved or said
        outcome = port_text(source)
        assert outcome.remaining or "x = x.to(device" in outcome.source, outcome.source


@settings(max_examples=8, deadline=None)
@given(
    value=st.sampled_from(["torch.ones(1, 4)", "torch.randn(1, 4)", "torch.zeros(1, 4) + 1"]),
    before=st.sampled_from(["None", "torch.zeros(1, 4)"]),
)
def test_a_name_a_nested_function_rebinds_through_nonlocal(value: str, before: str) -> None:
    source = HEAD + (
        "def outer():\n"
        f"    x = {before}\n"
        f"    def setup():\n        nonlocal x\n        x = {value}\n"
        "    setup()\n"
        "    return model(x)\n"
        "OUT.append(outer().detach())\n"
    )
    fuzz.check_port(source)
    assert port_text(source).remaining, "the binding in `setup` reaches the forward"


@settings(max_examples=10, deadline=None)
@given(
    call=st.sampled_from(["Job().run(model)", "job.run(model)", "Job.run_static(model)"]),
    param=st.sampled_from(["m", "f", "thing"]),
)
def test_a_model_handed_to_a_method_of_the_file(call: str, param: str) -> None:
    source = HEAD + (
        "class Job:\n"
        f"    def run(self, {param}):\n        return {param}(torch.ones(1, 4))\n"
        "    @staticmethod\n"
        f"    def run_static({param}):\n        return {param}(torch.zeros(1, 4))\n"
        f"job = Job()\nOUT.append({call}.detach())\n"
    )
    fuzz.check_port(source)
    assert port_text(source).remaining == []  # followed: the inputs are made on the device


@settings(max_examples=12, deadline=None)
@given(
    classes=st.integers(1, 3),
    receiver=st.sampled_from(["made", "bound", "either"]),
)
def test_a_method_several_classes_define_is_resolved_by_its_receiver_or_reported(
    classes: int, receiver: str
) -> None:
    source = (
        HEAD
        + "import sys\n"
        + "".join(
            f"class Job{i}:\n    def run(self, m):\n        return m(torch.ones(1, 4))\n"
            for i in range(classes)
        )
    )
    last = classes - 1
    source += {
        "made": f"job = Job{last}()\n",
        "bound": f"job = Job{last}()\njob = Job{last}()\n",
        "either": f"job = Job{last}() if len(sys.argv) < 100 else Job0()\n",
    }[receiver]
    source += "OUT.append(job.run(model).detach())\n"
    fuzz.check_port(source)
    remaining = port_text(source).remaining
    if receiver == "either" and classes > 1:
        assert [f.code for f in remaining] == ["TP523"], remaining  # which `run`: unknown
    else:
        assert remaining == [], remaining  # followed: the input made on the device


ESCAPES = {
    "list": ("models = [model]\n", "models[0]"),
    "dict": ("models = {'a': model}\n", "models['a']"),
    "tuple": ("pair = (model, 1)\n", "pair[0]"),
    "set": ("models = {model}\n", "next(iter(models))"),
    "partial": (
        "import functools\ndef run(m, x):\n    return m(x)\nf = functools.partial(run, model)\n",
        None,
    ),
}


@settings(max_examples=10, deadline=None)
@given(road=st.sampled_from(sorted(ESCAPES)))
def test_a_model_put_where_the_port_cannot_follow_it_is_reported(road: str) -> None:
    setup, callee = ESCAPES[road]
    use = f"{callee}(torch.ones(1, 4))" if callee else "f(torch.ones(1, 4))"
    source = HEAD + setup + f"OUT.append({use}.detach())\n"
    fuzz.check_port(source)
    outcome = port_text(source)
    remaining = outcome.remaining
    if road in ("list", "dict", "tuple", "partial"):
        # taken back out of the literal only to be called, or a partial of the file's
        # function only ever called: a forward the port follows (its input is moved), so
        # nothing is left and the run has everything on the device
        assert remaining == [], remaining
        result, off = fuzz.run(outcome.source, meta=True)
        assert not isinstance(result, BaseException) and off == [], (result, off)
    else:
        assert [f.code for f in remaining] == ["TP523"], remaining


def test_containers_that_build_a_model_are_followed() -> None:
    source = HEAD + (
        "stack = torch.nn.Sequential(*[model, torch.nn.ReLU()])\n"
        "layers = torch.nn.ModuleList([model])\n"
        "def build():\n    return model, 1\n"
        "net, _ = build()\n"
        "OUT.append(stack(torch.ones(1, 4)).detach())\n"
    )
    fuzz.check_port(source)
    assert port_text(source).remaining == []


CPU_SPELLINGS = ("'cpu'", "'cpu:0'", "torch.device('cpu')", "host", "dev")


@settings(max_examples=15, deadline=None)
@given(
    spelling=st.sampled_from(CPU_SPELLINGS),
    made=st.booleans(),
    in_function=st.booleans(),
)
def test_a_value_the_code_puts_on_the_cpu_is_reported(
    spelling: str, made: bool, in_function: bool
) -> None:
    value = f"torch.ones(1, 4, device={spelling})" if made else f"torch.ones(1, 4).to({spelling})"
    head = HEAD + "host = 'cpu'\n"
    if in_function:
        source = (
            head
            + f"def run(net, dev='cpu'):\n    return net({value})\n"
            + "OUT.append(run(model).detach())\n"
        )
    else:
        source = head + "dev = torch.device('cpu')\n" + f"OUT.append(model({value}).detach())\n"
    fuzz.check_port(source)
    assert any(f.code == "TP523" for f in port_text(source).remaining)


@settings(max_examples=8, deadline=None)
@given(spelling=st.sampled_from(CPU_SPELLINGS[:3]), op=st.sampled_from(["==", "-", "*"]))
def test_an_output_moved_to_the_cpu_is_no_device_value(spelling: str, op: str) -> None:
    source = HEAD + (
        f"pred = model(torch.ones(1, 4)).to({spelling})\n"
        f"y = torch.zeros(1, 2)\nOUT.append((pred {op} y).tolist())\n"
    )
    fuzz.check_port(source)  # `y` stays beside `pred`, on the CPU
    assert "torch.zeros(1, 2)\n" in port_text(source).source


# A literal holding the model beside a function of the file that computes on the host; the
# code calls an item taken back out. Where the item taken may be the host function, what it
# returns stays on the CPU, so the literal is reported; where it is surely the model, the
# forward is followed and nothing is left.
HOST = "import numpy as np\n\n\ndef host(x):\n    return torch.from_numpy(np.tanh(x.numpy()))\n\n\n"
TAKEN = {  # road -> (the literal, how an item is taken: {i} the position or key)
    "loop": ("for f in [{a}, {b}]:\n    ", "f"),
    "list": ("fs = [{a}, {b}]\n", "fs[{i}]"),
    "tuple": ("fs = ({a}, {b})\n", "fs[{i}]"),
    "negative": ("fs = ({a}, {b})\n", "fs[-{j}]"),  # {j}: 2 - the position
    "dict": ("fs = {{0: {a}, 1: {b}}}\n", "fs[{i}]"),
}


@settings(max_examples=20, deadline=None)
@given(road=st.sampled_from(sorted(TAKEN)), model_first=st.booleans(), take=st.integers(0, 1))
def test_an_item_called_back_out_of_a_literal_is_the_model_or_reported(
    road: str, model_first: bool, take: int
) -> None:
    made, callee = TAKEN[road]
    a, b = ("model", "host") if model_first else ("host", "model")
    taken_is_model = road != "loop" and (take == 0) == model_first
    call = callee.format(i=take, j=2 - take) + "(torch.ones(1, 4))"
    source = (
        HEAD + HOST + made.format(a=a, b=b) + f"OUT.append(({call} + torch.ones(1, 2)).detach())\n"
    )
    fuzz.check_port(source)  # on meta: all on the accelerator, or findings left
    remaining = port_text(source).remaining
    if taken_is_model:
        assert remaining == [], remaining
    else:
        assert [f.code for f in remaining] == ["TP523"], remaining
