"""Device values handed to the file's own functions and methods (``_call_flow``, ``_call_sites``).

Issue 31's silent leftover: ``agent.step(model(x))`` whose ``step`` multiplies by a
CPU tensor was neither moved nor reported, as the port looked for a method's call
sites only as ``self.step(...)`` and never took a function's parameter for a device
value. The oracle is the run (``test_port_noise.placed``: the ported program gives
the original's values on the CPU; on ``meta`` as the accelerator every forward and
every operation mixing devices is watched): where the receiver's class is told, the
ported program runs with everything on the device; where it cannot be, the port
reports; never silence with data on the CPU.
"""

from __future__ import annotations

import ast
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tests.check.port.siblings import load
from torchport.check._context import Context
from torchport.check.port import port_paths
from torchport.check.port._facts import PortFacts

HERE = Path(__file__).parent
noise = load("port_noise_cases", HERE / "test_port_noise.py")
placed, wrap, MODEL = noise.placed, noise.wrap, noise.MODEL

OUTPUT = "model(torch.ones(1, 4))"
# What the method does with the model's output `y`: meets a tensor it makes (the port
# moves it), one its class holds (moved or reported), one a second method makes.
METHODS = {
    "factory": "    def step(self, y):\n        return y * torch.ones(2)\n",
    "attribute": (
        "    def __init__(self):\n        self.w = torch.ones(2)\n"
        "    def step(self, y):\n        return y * self.w\n"
    ),
    "chain": (
        "    def step(self, y):\n        return self.inner(y) * 2\n"
        "    def inner(self, y):\n        return y + torch.zeros(2)\n"
    ),
}
# How the method is reached: through a name bound to an instance, an instance made in
# place, another object's attribute, a parameter annotated with the class, a subclass.
RECEIVERS = {
    "bound": ("agent = Agent()\n", "agent.step({arg})"),
    "inline": ("", "Agent().step({arg})"),
    "attribute": (
        "class Holder:\n    def __init__(self):\n        self.agent = Agent()\n"
        "    def run(self, y):\n        return self.agent.step(y)\n",
        "Holder().run({arg})",
    ),
    "annotated": ("def use(a: Agent, y):\n    return a.step(y)\n", "use(Agent(), {arg})"),
    "subclass": ("class Sub(Agent):\n    pass\n", "Sub().step({arg})"),
}


@given(
    st.sampled_from(sorted(METHODS)),
    st.sampled_from(sorted(RECEIVERS)),
    st.sampled_from(["module", "if", "function"]),
)
def test_a_method_given_the_models_output_through_an_instance_is_followed(
    method: str, receiver: str, where: str
) -> None:
    setup, call = RECEIVERS[receiver]
    body = "class Agent:\n" + METHODS[method] + setup
    body += f"OUT.append({call.format(arg=OUTPUT)}.detach())\n"
    source = MODEL + wrap(body, where)
    left, clean = placed(source)
    assert clean or left, f"data left on the CPU and nothing reported:\n{source}"
    if method != "attribute":  # a tensor the method makes: moved where it is made
        assert clean and not left, (left, source)
    else:
        assert clean or any("self.w" in f for f in left), (left, source)


@given(st.sampled_from(["module", "if", "function"]), st.booleans())
def test_a_parameter_given_a_device_value_somewhere_gets_the_others_moved(
    where: str, cpu_first: bool
) -> None:
    """``shift(model(x))`` makes ``y`` a device value in ``shift``, so ``torch.ones(2)``
    there is moved; a second call handing a CPU tensor then meets it, and is moved too."""
    calls = [
        "OUT.append(shift(model(torch.ones(1, 4))).detach())\n",
        "OUT.append(shift(torch.zeros(1, 2)).detach())\n",
    ]
    if cpu_first:
        calls.reverse()
    body = "def shift(y):\n    return y + torch.ones(2)\n" + "".join(calls)
    source = MODEL + wrap(body, where)
    left, clean = placed(source)
    assert clean and not left, (left, source)


@given(st.sampled_from(["module", "if", "function"]))
def test_a_method_several_classes_define_on_an_unknown_receiver_is_reported(where: str) -> None:
    """Which ``apply`` runs on ``obj`` the port cannot tell: the output handed to it is
    reported (TP523), not left unsaid."""
    body = (
        "class Left:\n    def apply(self, y):\n        return y * torch.ones(2)\n"
        "class Right:\n    def apply(self, y):\n        return y + torch.ones(2)\n"
        "def through(obj, x):\n    return obj.apply(model(x))\n"
        "OUT.append(through(Left(), torch.ones(1, 4)).detach())\n"
        "OUT.append(through(Right(), torch.zeros(1, 4)).detach())\n"
    )
    source = MODEL + wrap(body, where)
    left, _ = placed(source)
    assert any("TP523" in f and "`.apply()`" in f for f in left), (left, source)


def test_a_subclass_override_runs_where_the_base_calls_it() -> None:
    """``self.inner(y)`` in the base runs ``Sub.inner`` on a ``Sub``: both are followed."""
    body = (
        "class Agent:\n    def step(self, y):\n        return self.inner(y)\n"
        "    def inner(self, y):\n        return y\n"
        "class Sub(Agent):\n    def inner(self, y):\n        return y - torch.ones(2)\n"
        f"OUT.append(Sub().step({OUTPUT}).detach())\n"
    )
    left, clean = placed(MODEL + body)
    assert clean and not left, left


def test_the_other_call_sites_arguments_meet_the_device_in_one_round() -> None:
    """Once ``y`` is a device value in ``shift``, the CPU tensor another call hands it is a
    sink of its caller in the same facts (moved where it is made), not only once a later
    fix round has moved what ``y`` meets."""
    source = (
        MODEL + "def shift(y):\n    return y + torch.ones(2)\n"
        "OUT = [shift(torch.zeros(1, 2)), shift(model(torch.ones(1, 4)))]\n"
    )
    facts = PortFacts(Context(source, "<calls>", ast.parse(source)))
    met = {ast.unparse(operand) for operand, _ in facts.operands}
    assert {"torch.zeros(1, 2)", "torch.ones(2)"} <= met, met


@given(st.sampled_from(["agent = Agent()\nout = agent.step(y)\n", "out = Agent().step(y)\n"]))
def test_a_device_value_handed_to_another_modules_class_is_reported(use: str) -> None:
    """``Agent`` imported from ``agent.py`` (another module of the project, ported on its
    own): what ``step`` does with the model's output there this file's port cannot see, so
    the output handed to it is reported (TP523), not left unsaid."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "agent.py").write_text(
            "import torch\n\nclass Agent:\n    def __init__(self):\n"
            "        self.w = torch.ones(2)\n    def step(self, y):\n        return y * self.w\n",
            encoding="utf-8",
        )
        (root / "train.py").write_text(
            "import torch\nfrom agent import Agent\n\nmodel = torch.nn.Linear(4, 2)\n"
            "y = model(torch.ones(1, 4))\n" + use,
            encoding="utf-8",
        )
        result = port_paths([root / "train.py"], diff=True, jobs=1)
    left = [f for f in result.remaining if f.code == "TP523"]
    assert any("`Agent.step()`" in f.message for f in left), result.remaining
