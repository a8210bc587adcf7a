"""Issue 31 item 5 (branch n31aj): a value the program's own text shows is no tensor is never
reported as device data.

Branch b31ai's held-out set found TP522 saying ``[''] + output_words`` (tick labels, a list of
strings) is on the device, and TP523 asking to move ``random.choice(pairs)`` of pairs of
strings. The flow is name-blind: a string made from a device value (``"%s" % out``), or a name
once bound to one (``s.strip()``), was a device value to it. Now a str/bytes literal, an
f-string, a list or tuple of such, ``.strip()``/``.join()``/``str()``/``input()`` results,
``random.choice`` of such a list and a string joined to one are text (``_text_values``), and
TP522 does not report them; matplotlib's tick-label setters take text, as ``set_title`` does.

The oracle is apart from the port: the program itself, run on the CPU with numpy and pyplot
stubbed, says whether the value reaching the sink holds a tensor. A tensor flowing the same
way (the near miss) must still be reported.
"""

from __future__ import annotations

import random
import types

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_source

_HEAD = """import random
import numpy as np
import torch
import matplotlib.pyplot as plt

model = torch.nn.Linear(4, 2)
out = model(torch.ones(2, 4))
s = "x"
s = out
"""

_TEXT = (  # values the text shows are strings (or lists of them), made beside a device value
    '"%s" % out',
    '"<" + str(out)',
    "str(out).strip()",
    '" ".join([str(out), "b"])',
    'f"{out}"',
    '[str(out), "b"]',
    'random.choice(["a", str(out)])',
    "s.__class__.__name__.lower()",
    '"" + "a"',
)
_TENSOR = ("out", "out + 1", "out * 2", "out.sum()", "out.detach()")  # the near misses
_FLOWS = {
    "direct": "{sink}({v})\n",
    "name": "v = {v}\n{sink}(v)\n",
    "tuple": "pair = ({v}, 1)\n{sink}(pair[0])\n",
}
_SINKS = ("np.argmax", "np.asarray", "plt.plot", "np.mean")


def _holds_tensor(program: str) -> bool:
    """The oracle: run the program on the CPU, numpy and pyplot stubbed by a recorder."""
    seen: list[object] = []
    record = lambda *a, **k: seen.extend(a)  # noqa: E731
    stub = types.SimpleNamespace(argmax=record, asarray=record, plot=record, mean=record)
    body = program.replace("import numpy as np\n", "").replace(
        "import matplotlib.pyplot as plt\n", ""
    )
    exec(compile(body, "<prog>", "exec"), {"np": stub, "plt": stub, "__name__": "prog"})

    def tensor(v: object) -> bool:
        return isinstance(v, torch.Tensor) or (
            isinstance(v, list | tuple) and any(tensor(i) for i in v)
        )

    return any(tensor(v) for v in seen)


@settings(max_examples=25, deadline=None)
@given(
    value=st.sampled_from(_TEXT + _TENSOR),
    flow=st.sampled_from(sorted(_FLOWS)),
    sink=st.sampled_from(_SINKS),
)
def test_text_is_never_device_data_and_a_tensor_still_is(value: str, flow: str, sink: str) -> None:
    random.seed(0)
    program = _HEAD + _FLOWS[flow].format(v=value, sink=sink)
    line = program.count("\n")  # the sink is the last line
    found = [f for f in check_source(program, select=["TP522"]) if f.line == line]
    assert bool(found) == _holds_tensor(program), (program, found)


def test_the_oracle_and_the_rule_agree_on_every_form() -> None:
    """Every value once through each flow into np.argmax (the draws above are few)."""
    for value in _TEXT + _TENSOR:
        for flow in _FLOWS.values():
            program = _HEAD + flow.format(v=value, sink="np.argmax")
            line = program.count("\n")
            found = [f for f in check_source(program, select=["TP522"]) if f.line == line]
            assert bool(found) == _holds_tensor(program), (program, found)


def test_tick_labels_take_text() -> None:
    """mt-hw4's form: ``ax.set_yticklabels([''] + output_words)`` (matplotlib formats labels)."""
    program = _HEAD + "fig, ax = plt.subplots()\nax.set_yticklabels([''] + [out])\n"
    assert not check_source(program, select=["TP522"])
    assert check_source(program + "ax.plot(out)\n", select=["TP522"])  # not blind


_TP523 = """import random
import torch

model = torch.nn.Linear(4, 2)


def main(lines):
    pairs = [l.split("|||") for l in lines]
    model({v})
"""


def test_a_choice_of_strings_is_not_to_be_moved() -> None:
    """mt-hw4's ``random.choice(pairs)`` of split lines (TP523): text, not reported; the same
    choice of the parameter ``lines`` (anything a caller gives) still is."""
    for value, said in (
        ("random.choice(pairs)", False),
        ("random.choice(pairs)[0]", False),
        ("random.choice(lines)", True),
        ("random.choice(lines)[0]", True),
    ):
        found = check_source(_TP523.format(v=value), select=["TP523"])
        assert bool([f for f in found if f.line == 9]) == said, (value, found)
