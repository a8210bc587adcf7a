"""strict()'s advice on the simulated accelerator: the fix that applies, naming the culprit.

Each program is written out as a user would write it and run in a child interpreter on
``sim:0`` (see ``tests/sim/isolated.py``). The oracle is the program's own text: the test
knows which variable a factory made on the host and which argument of an index op it put
on the other device, and checks that the message names that one and gives its fix.
"""

from __future__ import annotations

import itertools
import json

import pytest

from tests.sim.isolated import run_isolated

pytestmark = pytest.mark.needs_simulator

# How forward makes the tensor on the host: (statement, the factory the message must name,
# helper code). The variable is `made` and forward's input is `inp` in every program.
_MAKERS = {
    "direct": ("made = torch.arange(n)", "torch.arange", ""),
    "keywords": ("made = torch.arange(0, n, dtype=torch.long)", "torch.arange", ""),
    "chained": ("made = torch.arange(n).unsqueeze(0)", "torch.arange", ""),
    "nested": ("made = torch.tril(torch.ones(n, n))", "torch.ones", ""),
    "annotated": ("made: torch.Tensor = torch.zeros(n)", "torch.zeros", ""),
    "from_list": ("made = torch.tensor(list(range(n)))", "torch.tensor", ""),
    "from_numpy": ("made = torch.from_numpy(np.arange(n))", "torch.from_numpy", ""),
    "helper": (
        "made = make(n)",
        "make(), which returns a tensor of torch.ones",
        "def make(n):\n    return torch.ones(n)\n",
    ),
    "method": (
        "made = self.make(n)",
        "self.make(), which returns a tensor of torch.full",
        "",
    ),
}
# Where it meets the model's tensors: in a child module, in forward's own op, as a mask,
# as an embedding's indices (integer makers only)
_USES = {
    "child": "return self.child(inp, made)",
    "own_op": "return self.lin(inp) * made",
    "mask": "return self.lin(inp).masked_fill(made == 0, 0.0)",
    "embedding": "return self.emb(made)",
}
_INTEGER = {"direct", "keywords", "from_list", "from_numpy"}


def _program(maker: str, use: str) -> str:
    statement, _, helper = _MAKERS[maker]
    return f"""import numpy as np
import torch
from torch import nn

{helper}
class Child(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, inp, extra):
        return self.lin(inp) + extra


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.child = Child()
        self.lin = nn.Linear(4, 4)
        self.emb = nn.Embedding(8, 4)

    def make(self, n):
        return torch.full((n,), 2.0)

    def forward(self, inp):
        n = inp.shape[-1]
        {statement}
        {_USES[use]}
"""


_RUN = """
import os, tempfile, linecache
import torchport as tp
device = simulate_accelerator()
programs = json.loads({programs!r})
folder = tempfile.mkdtemp()
said = {{}}
for key, source in programs.items():
    path = os.path.join(folder, key.replace(" ", "_") + ".py")
    with open(path, "w") as f:
        f.write(source)
    linecache.checkcache(path)
    scope = {{}}
    exec(compile(source, path, "exec"), scope)
    model = scope["Net"]().to(device)
    try:
        with tp.strict():
            model({batch})
        said[key] = None
    except Exception as caught:
        said[key] = [type(caught).__name__, str(caught)]
print(json.dumps(said))
"""


def test_a_factory_in_forward_is_told_to_create_on_the_inputs_device_wherever_it_lands() -> None:
    programs = {
        f"{maker} {use}": _program(maker, use)
        for maker, use in itertools.product(_MAKERS, _USES)
        if use != "embedding" or maker in _INTEGER
    }
    said = run_isolated(
        _RUN.format(programs=json.dumps(programs), batch="torch.ones(4, 4, device=device)")
    )
    for key, result in said.items():
        maker, _ = key.split()
        assert result is not None, key
        kind, message = result
        assert kind == "DeviceMismatchError", (key, message)
        numpy = maker == "from_numpy"  # no device= there: it always makes a CPU tensor
        missing = "without .to(device)" if numpy else "without device="
        assert f"'made' was made on the CPU by {_MAKERS[maker][1]}() {missing}" in message, (
            key,
            message,
        )
        assert "create that tensor on the input's device (device=x.device)" in message, key
        # forward's own input, by name
        assert (".to(inp.device)" if numpy else "device=inp.device") in message, key
        assert "model.to('cpu')" not in message and "move the model" not in message, key


# Made on the failing line, never named: (the expression, the factory the message names)
_INLINE = {
    "factory": ("torch.arange(n)", "torch.arange"),
    "chained": ("torch.ones(n).unsqueeze(0)", "torch.ones"),
    "helper": ("make(n)", "make(), which returns a tensor of torch.ones"),
    "method": ("self.make(n)", "self.make(), which returns a tensor of torch.full"),
}


def test_a_factory_made_on_the_failing_line_is_named_by_its_expression() -> None:
    programs = {
        key: _program("helper", "own_op")
        .replace("made = make(n)", "pass")
        .replace("self.lin(inp) * made", f"self.lin(inp) * {expression}")
        for key, (expression, _) in _INLINE.items()
    }
    said = run_isolated(
        _RUN.format(programs=json.dumps(programs), batch="torch.ones(4, 4, device=device)")
    )
    for key, (expression, factory) in _INLINE.items():
        kind, message = said[key]
        assert kind == "DeviceMismatchError", (key, message)
        assert f"`{expression}` was made on the CPU by {factory}() without device=" in message, (
            key,
            message,
        )
        assert "create that tensor on the input's device (device=x.device)" in message, key
        assert "device=inp.device" in message, key


def test_a_batch_the_script_made_on_the_host_keeps_the_move_advice_on_the_device() -> None:
    """The control: a host tensor forward did not make is the script's batch to move."""
    plain = _program("direct", "own_op").replace("made = torch.arange(n)", "pass")
    programs = {
        "batch": plain.replace("self.lin(inp) * made", "self.lin(inp)"),
        # a factory beside it on the failing line is not what failed: the batch is
        "batch beside a factory": plain.replace(
            "self.lin(inp) * made", "self.lin(inp) * torch.ones(n)"
        ),
    }
    said = run_isolated(_RUN.format(programs=json.dumps(programs), batch="torch.ones(4, 4)"))
    for key in programs:
        kind, message = said[key]
        assert kind == "DeviceMismatchError", key
        assert "without device=" not in message, (key, message)
        assert "move the input with x.to('sim:0')" in message, (key, message)


# Index ops: (call written with `data` and `index`, the parameter that holds the index)
_INDEX_CALLS = {
    "gather": "torch.gather(data, 1, index)",
    "gather_method": "data.gather(1, index)",
    "index_select": "torch.index_select(data, 0, index.view(-1))",
    "index_select_method": "data.index_select(0, index.view(-1))",
    "embedding": "F.embedding(index, data)",
    "take": "torch.take(data, index)",
    "take_along_dim": "torch.take_along_dim(data, index, 1)",
    "index_add": "data.index_add(0, index.view(-1), data[:2].clone())",
    "index_fill": "data.index_fill(0, index.view(-1), 1.0)",
    "scatter": "data.scatter(1, index, 1.0)",
    "scatter_add": "data.scatter_add(1, index, data[:, :2].clone())",
}

_INDEX_RUN = """
import os, tempfile, linecache
import torch.nn.functional as F
import torchport as tp
device = simulate_accelerator()
cases = json.loads({cases!r})
folder = tempfile.mkdtemp()
said = {{}}
for key, (call, index_on_host, helper) in cases.items():
    path = os.path.join(folder, key.replace(" ", "_") + ".py")
    if helper:
        source = (
            "import torch\\nimport torch.nn.functional as F\\n\\n"
            f"def look_up(data, index):\\n    return {{call}}\\n\\n"
            "def run(batch):\\n    return look_up(batch['table'], batch['rows'])\\n"
        )
    else:
        source = (
            "import torch\\nimport torch.nn.functional as F\\n\\n"
            f"def run(batch):\\n    data, index = batch['table'], batch['rows']\\n"
            f"    return {{call}}\\n"
        )
    with open(path, "w") as f:
        f.write(source)
    linecache.checkcache(path)
    scope = {{}}
    exec(compile(source, path, "exec"), scope)
    table = torch.randn(4, 3)
    rows = torch.tensor([[0, 1], [1, 0], [2, 1], [0, 0]])
    batch = {{
        "table": table if not index_on_host else table.to(device),
        "rows": rows if index_on_host else rows.to(device),
    }}
    try:
        with tp.strict():
            scope["run"](batch)
        said[key] = None
    except Exception as caught:
        said[key] = [type(caught).__name__, str(caught)]
print(json.dumps(said))
"""


def test_index_ops_name_the_argument_on_the_other_device_and_its_fix() -> None:
    cases = {
        f"{name} {'index' if on_host else 'data'} {'helper' if helper else 'inline'}": [
            call,
            on_host,
            helper,
        ]
        for (name, call), on_host, helper in itertools.product(
            _INDEX_CALLS.items(), (True, False), (False, True)
        )
    }
    said = run_isolated(_INDEX_RUN.format(cases=json.dumps(cases)))
    for key, result in said.items():
        name, stray, helper = key.split()
        op = name.removesuffix("_method")
        call = _INDEX_CALLS[name]
        assert result is not None, key
        kind, message = result
        assert kind == "DeviceMismatchError", (key, message)
        # which argument, as the call writes it: the index expression or the indexed tensor
        culprit = next(
            part.strip()
            for part in _arguments(call)
            if (part.strip().startswith("index") if stray == "index" else part.strip() == "data")
        )
        assert f"{op}'s " in message, (key, message)
        assert f"`{culprit}`" in message and " is on cpu but its " in message, (key, message)
        assert "is on sim:0" in message, (key, message)
        assert "To fix: move " in message and f"{culprit}.to(" in message, (key, message)
        assert "move every tensor of that op" not in message, key
        if helper == "helper":
            outer = "batch['rows']" if stray == "index" else "batch['table']"
            if culprit in ("index", "data"):
                assert f"(the caller's `{outer}`)" in message, (key, message)


def _arguments(call: str) -> list[str]:
    """The receiver and arguments of a one-line call, as written (no nested commas here
    but inside the parentheses of an argument)."""
    head, _, rest = call.partition("(")
    receiver = head.rsplit(".", 1)[0] if not head.startswith(("torch.", "F.")) else None
    inner = rest[: rest.rindex(")")]
    parts, depth, current = [], 0, ""
    for char in inner:
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        current += char
    parts.append(current)
    return ([receiver] if receiver else []) + parts


def test_a_host_array_indexed_by_a_device_index_names_both() -> None:
    said = run_isolated(
        """
        import linecache, os, tempfile
        import torchport as tp
        device = simulate_accelerator()
        source = "def run(table, picks):\\n    return table[picks]\\n"
        path = os.path.join(tempfile.mkdtemp(), "host_array.py")
        with open(path, "w") as f:
            f.write(source)
        linecache.checkcache(path)
        scope = {}
        exec(compile(source, path, "exec"), scope)
        try:
            with tp.strict():
                scope["run"](torch.randn(5, 3), torch.tensor([0, 2], device=device))
            print(json.dumps(None))
        except Exception as caught:
            print(json.dumps([type(caught).__name__, str(caught)]))
        """
    )
    kind, message = said
    assert kind == "DeviceMismatchError"
    assert "the index `picks` of `table[...]` is on sim:0 but `table` is on cpu" in message
    assert "picks.to(table.device)" in message
