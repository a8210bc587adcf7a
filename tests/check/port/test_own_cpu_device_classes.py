"""A class's own "cpu" device that the port's moves would leave behind (issue 31, h31p's b1-b6, c1).

h31p's breaker found the port "0 left" and the program stopping on any accelerator where:

* a class keeping the model (``self.model = model``, ``x.to(self.device)`` in its method)
  comes by its ``"cpu"`` elsewhere than an ``__init__`` parameter: ``kwargs.get("device",
  "cpu")``, a property over ``self._device``, a class attribute, ``getattr(config,
  "device", "cpu")``;
* the class is the model itself: an ``nn.Module`` moving its input (``x.to(self.device)``)
  or making its state (``torch.zeros(..., device=self.device)``) on its own ``device``, or
  a submodule of the model doing so (``self.enc = Enc()`` in the model's ``__init__``);
* a module keeps a lambda that makes a tensor on an attribute (``self.f = lambda n:
  torch.zeros(n)``).

The invariant: the port places it on the program's device where that is sure (the module's
device parameter handed the program's ``device`` by keyword, the lambda's tensor made on
the module's parameters' device), else it reports it at its line (TP501 at the model, TP504
at a submodule or at the lambda's tensor): never "0 left" with a CPU leftover. A CPU the
program hands the class itself (``Net(device="cpu")``) is its own choice: reported, not
rewritten. The oracle
(``no_cuda_sim``, written apart from the port) runs each original on the CPU and each port
on the simulated accelerator: the same values on ``sim`` where nothing is left, else a
finding on the expected line. The expectation is computed from the case's parameters alone;
each port is idempotent and gives the original's values on the CPU.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import ports_on_sim_or_stops
from torchport.check.port import port_text

torch = pytest.importorskip("torch")

_HEAD = (
    "import torch\nimport torch.nn as nn\nfrom types import SimpleNamespace\n\n"
    "device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() "
    'else torch.device("cpu")\n\n\n'
)
# where the class comes by its "cpu": (its class-body lines, its `__init__`'s parameters and
# the line storing the device); a property's lines after `__init__`
_SOURCES: dict[str, tuple[str, str, str, str]] = {
    "a parameter": ("", 'device="cpu"', "self.device = device", ""),
    "torch.device of a parameter": ("", 'device="cpu"', "self.device = torch.device(device)", ""),
    "a parameter or the cpu": ("", "device=None", 'self.device = device or "cpu"', ""),
    "kwargs.get": ("", "**kwargs", 'self.device = kwargs.get("device", "cpu")', ""),
    "a property": (
        "",
        'device="cpu"',
        "self._device = torch.device(device)",
        "    @property\n    def device(self):\n        return self._device\n\n",
    ),
    "a class attribute": ('    device = "cpu"\n\n', "", "pass", ""),
    "getattr of a config": (
        "",
        "config=None",
        'self.device = getattr(config, "device", "cpu")',
        "",
    ),
    "a property returning the cpu": (
        "",
        "",
        "pass",
        '    @property\n    def device(self):\n        return torch.device("cpu")\n\n',
    ),
}
_HANDED_TO = frozenset(list(_SOURCES)[:5])  # the sources a call can hand the device to
_USES = {  # how the class's method uses its device (`x`: its input)
    "moves its input": "x = x.to(self.device)",
    "makes its state": "x = x * torch.ones(1, 4, device=self.device)",
    "makes a tensor of its input": "x = torch.as_tensor(x.tolist(), device=self.device)",
}
_WHERE = ("the model", "a submodule", "a class keeping the model")
_HANDED = {"default": "", "the program's device": "device=device", "the cpu": 'device="cpu"'}


def _args(*parts: str) -> str:
    return ", ".join(p for p in parts if p)


def _program(where: str, source: str, use: str, handed: str) -> tuple[str, str, bool]:
    """The program, the line of the model the finding names (its text), and whether it is
    placed."""
    body, params, store, prop = _SOURCES[source]
    given = _HANDED[handed] if source in _HANDED_TO else ""
    if where != "a class keeping the model":
        name = "Net" if where == "the model" else "Enc"
        cls = (
            f"class {name}(nn.Module):\n{body}    def __init__({_args('self', params)}):\n"
            f"        super().__init__()\n        {store}\n        self.fc = nn.Linear(4, 2)\n\n"
            f"{prop}    def forward(self, x):\n        {_USES[use]}\n        return self.fc(x)\n"
        )
        make = f"model = Net({given})\nOUT.append(model(torch.randn(6, 4)))\n"
        placed = given == "device=device" or (not given and source in _HANDED_TO)
    if where == "a submodule":  # built in a module's `__init__`: reported where left to the CPU
        cls += (
            "\n\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            f"        self.enc = Enc({given})\n        self.out = nn.Linear(2, 2)\n\n"
            "    def forward(self, x):\n        return self.out(self.enc(x))\n"
        )
        make = "model = Net()\nOUT.append(model(torch.randn(6, 4)))\n"
        program = _HEAD + cls + "\n\ntorch.manual_seed(0)\n" + make
        return program, f"        self.enc = Enc({given})", given == "device=device"
    if where == "a class keeping the model":
        cls = (
            "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.fc = nn.Linear(4, 2)\n\n    def forward(self, x):\n"
            "        return self.fc(x)\n\n\n"
            f"class Predictor:\n{body}    def __init__({_args('self, model', params)}):\n"
            f"        self.model = model\n        {store}\n\n"
            f"{prop}    def predict(self, x):\n        {_USES[use]}\n        return self.model(x)\n"
        )
        make = f"p = Predictor({_args('Net()', given)})\nOUT.append(p.predict(torch.randn(6, 4)))\n"
        placed = given == "device=device"
    return _HEAD + cls + "\n\ntorch.manual_seed(0)\n" + make, make.splitlines()[0], placed


def _on_the_cpu(original: str, ported: str) -> None:
    """The port run on the CPU (in this process) gives the original's values."""
    outs = []
    for text in (original, ported):
        out: list[Any] = []
        torch.manual_seed(0)
        exec(compile(text, "<program>", "exec"), {"OUT": out, "__name__": "__main__"})
        outs.append(out)
    assert len(outs[0]) == len(outs[1]), ported
    assert all(torch.equal(a, b) for a, b in zip(*outs, strict=True)), ported


def _check(cases: list[Any], programs: list[tuple[str, str, bool]], code: str) -> None:
    """Port each program (no failure, idempotent, the same on the CPU) and run the ports on
    `sim`: a case placed leaves no finding and lands on `sim:0`; any other is reported with
    ``code`` (TP504 for "a submodule", whatever is asked) at its line."""
    ports = [port_text(source, "main.py") for source, _, _ in programs]
    for (source, _, _), port in zip(programs, ports, strict=True):
        assert not port.failures, port.failures
        assert port_text(port.source, "main.py").source == port.source, port.source
        _on_the_cpu(source, port.source)
    runs = ports_on_sim_or_stops(
        [(s, p.source) for (s, _, _), p in zip(programs, ports, strict=True)]
    )
    for case, (_, line, placed), port, run in zip(cases, programs, ports, runs, strict=True):
        said = [(f.code, f.line) for f in port.remaining]
        if placed:
            assert not said, (case, port.remaining, port.source)
            assert run.get("same") and set(run["devices"]) == {"sim:0"}, (case, run)
        else:  # reported at the model, whatever the port then does on `sim`
            at = port.source.splitlines().index(line) + 1  # (the port may add lines above)
            expected = "TP504" if case[0] == "a submodule" else code
            assert (expected, at) in said, (case, said, port.source)
            assert "error" in run or run["same"], (case, run)


# (each example is one simulated-accelerator child: a few, in the default run's budget)
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(_WHERE),
            st.sampled_from(sorted(_SOURCES)),
            st.sampled_from(sorted(_USES)),
            st.sampled_from(sorted(_HANDED)),
        ),
        min_size=6,
        max_size=6,
    )
)
@example(  # every source of each class, left to its default: each "0 left" and a stop on the base
    [("the model", s, "makes its state", "default") for s in _SOURCES]
    + [("a submodule", s, "moves its input", "default") for s in _SOURCES]
    + [("a class keeping the model", s, "moves its input", "default") for s in _SOURCES]
)
@example(  # the model moving its input; the cpu handed; the program's device handed
    [("the model", s, "moves its input", "default") for s in _SOURCES]
    + [("the model", s, "makes a tensor of its input", "the cpu") for s in sorted(_HANDED_TO)]
    + [(w, s, "moves its input", "the program's device") for w in _WHERE for s in _SOURCES]
)
def test_a_class_on_its_own_cpu_device_is_placed_or_said(
    cases: list[tuple[str, str, str, str]],
) -> None:
    _check(cases, [_program(*case) for case in cases], "TP501")


_LAMBDA_HEAD = "import torch\nimport torch.nn as nn\n\n\nclass Net(nn.Module):\n"
_LAMBDAS = {  # the lambda, how forward uses it
    "beside its parameter": ("lambda t: t + torch.ones(3)", "{f}(self.fc(x))"),
    "of a size": ("lambda n: torch.zeros(n)", "self.fc(x) + {f}(3)"),
    "full": ("lambda t: t * torch.full((3,), 2.0)", "{f}(self.fc(x))"),
    "drawn": ("lambda n: torch.rand(n)", "self.fc(x) + {f}(3)"),
    "arange": ("lambda n: torch.arange(n).float()", "self.fc(x) + {f}(3)"),
}
_HELD = {  # how `__init__` keeps it, how forward reads it back
    "attribute": ("self.f = {lam}", "self.f"),
    "list": ("self.fs = [{lam}]", "self.fs[0]"),
    "dict": ('self.fs = {{"f": {lam}}}', 'self.fs["f"]'),
    "attribute, by a method __init__ calls": ("self.f = {lam}", "self.f"),
}
_SURE = {  # whether the module's parameters' device is sure there when the lambda runs:
    # (before the lambda is kept, after it)
    "weights": ("self.fc = nn.Linear(3, 3)", ""),
    "called in __init__": ("self.fc = nn.Linear(3, 3)", "\n        self.first = {read}(3)"),
    "no weights": ("self.fc = lambda x: x * 2.0", ""),
}


def _lambda_program(lam: str, held: str, sure: str) -> tuple[str, str, bool]:
    text, use = _LAMBDAS[lam]
    keep, read = _HELD[held]
    before, after = _SURE[sure]
    kept, builder = f"\n        {keep.format(lam=text)}", ""
    if held.endswith("calls"):  # `self.build()`: the lambda kept there
        kept, builder = "\n        self.build()", f"    def build(self):{kept}\n\n"
    program = (
        _LAMBDA_HEAD + "    def __init__(self):\n        super().__init__()\n"
        f"        {before}{kept}{after.format(read=read)}\n\n{builder}"
        f"    def forward(self, x):\n        return {use.format(f=read)}\n\n\n"
        "torch.manual_seed(0)\nmodel = Net()\nOUT.append(model(torch.randn(2, 3)))\n"
    )
    return program, f"        {keep.format(lam=text)}", sure == "weights"


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(sorted(_LAMBDAS)),
            st.sampled_from(sorted(_HELD)),
            st.sampled_from(sorted(_SURE)),
        ),
        min_size=4,
        max_size=4,
    )
)
@example([(lam, "attribute", "weights") for lam in _LAMBDAS])
@example([("of a size", held, sure) for held in _HELD for sure in _SURE])
@example([(lam, "attribute, by a method __init__ calls", "weights") for lam in _LAMBDAS])
def test_a_lambda_a_module_keeps_that_makes_a_tensor_is_placed_or_said(
    cases: list[tuple[str, str, str]],
) -> None:
    _check(cases, [_lambda_program(*case) for case in cases], "TP504")


_PARAMETERS_DEVICE = """import torch
import torch.nn as nn


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    @property
    def device(self):
        for param in self.parameters():
            return param.device
        return torch.device("cpu")

    def forward(self, x):
        return self.fc(x.to(self.device))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.critic = Critic()

    def forward(self, x):
        return self.critic(x)


torch.manual_seed(0)
model = Net()
OUT.append(model(torch.randn(6, 4)))
"""


def test_a_device_read_from_the_parameters_with_a_cpu_fallback_is_no_leftover() -> None:
    """stable-baselines3's ``BaseModel.device``: the parameters' device, the CPU only where
    there are none: the class follows ``model.to(device)``; nothing reported (five trees)."""
    port = port_text(_PARAMETERS_DEVICE, "main.py")
    assert not port.remaining, port.remaining
    (run,) = ports_on_sim_or_stops([(_PARAMETERS_DEVICE, port.source)])
    assert run.get("same") and set(run["devices"]) == {"sim:0"}, run


_CLASS_BODY = """import torch
import torch.nn as nn


class Net(nn.Module):
    {bound}

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x):
        return {use}


torch.manual_seed(0)
model = Net()
OUT.append(model(torch.randn(2, 3)))
"""
_CLASS_BODY_FORMS = {  # the lambda the class body binds, how forward uses it
    "a static method": ("f = staticmethod(lambda n: torch.zeros(n))", "self.fc(x) + self.f(3)"),
    "a method": ("g = lambda self, t: t + torch.ones(3)", "self.g(self.fc(x))"),
    "a class method": ("h = classmethod(lambda cls, n: torch.full((n,), 2.0))", "self.h(3) * x"),
}


def test_a_lambda_a_module_class_binds_in_its_body_is_said() -> None:
    """Bound by the class body, not by ``__init__``: reported at its line (TP504), never
    "0 left"; the CPU run unchanged."""
    programs = [_CLASS_BODY.format(bound=b, use=u) for b, u in _CLASS_BODY_FORMS.values()]
    ports = [port_text(p, "main.py") for p in programs]
    for (bound, _), program, port in zip(_CLASS_BODY_FORMS.values(), programs, ports, strict=True):
        at = port.source.splitlines().index(f"    {bound}") + 1
        assert ("TP504", at) in [(f.code, f.line) for f in port.remaining], port.remaining
        assert port_text(port.source, "main.py").source == port.source
        _on_the_cpu(program, port.source)
