"""TP101's forms a default run leaves out (``_select.LEFT_FORMS``), on generated programs.

Issue 34 item 5, branch a34ak: over the judged samples A-AH, TP101's CUDA default of a
parameter (``def f(device="cuda")``) was real in 54 of 126 judged findings and the CUDA value
of a settings dict (``{"device": "cuda"}``) in 0 of 5, and neither is at any held-out recall
site; a default run leaves both out, and a run naming the rule reports them. Oracle (by hand,
per form): a default run reports the program's one CUDA site unless it is a parameter's
default or a dict's value; ``--select TP101`` and ``--extend-select TP101`` report it always.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_source

CUDA = ['"cuda"', '"cuda:0"', 'torch.device("cuda")']
# (the program's one CUDA site, with {c} for the CUDA value; whether a default run leaves it)
FORMS = [
    ("def run(x, device={c}):\n    return x.to(device)\n", True),
    ("def run(x, *, device={c}):\n    return model(x, device)\n", True),
    (
        "class Runner:\n    def __init__(self, net, device={c}):\n        self.net = net(device)\n",
        True,
    ),
    ("run = lambda x, device={c}: x.to(device)\n", True),
    ('CONFIG = {{"device": {c}, "lr": 0.1}}\n', True),
    ('def settings():\n    return {{"lr": 0.1, "device": {c}}}\n', True),
    ("class Config:\n    device: str = {c}\n", False),  # a class field: kept
    ("device = {c}\n", False),
    ("def run(x):\n    return x.to({c})\n", False),
    ("def run(x):\n    return torch.ones(2, device={c}) + x\n", False),
    ("def run(x, y=torch.zeros(1, device={c})):\n    return x + y\n", False),  # runs at def
]


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(FORMS), st.sampled_from(CUDA), st.sampled_from(["default", "select", "extend"])
)
def test_a_default_run_leaves_parameter_defaults_and_dict_values(
    form: tuple[str, bool], cuda: str, run: str
) -> None:
    (template, left) = form
    if cuda == 'torch.device("cuda")' and "{{" in template:
        cuda = '"cuda:1"'
    source = "import torch\n\nmodel = None\n\n" + template.format(c=cuda)
    if run == "default":
        found = check_source(source)
    elif run == "select":
        found = check_source(source, select=["TP101"])
    else:
        found = check_source(source, extend_select=["TP101"])
    reported = any(f.code == "TP101" for f in found)
    assert reported == (run != "default" or not left), source
