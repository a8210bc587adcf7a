"""Three classes of port noise found on aamirmalik-dr/text-sentiment-lstm (issue 31 item 5).

1. ``cls(model, vocab, device=device)`` whose ``__init__`` runs ``self.model =
   model.to(device)``: the callee places the model (no TP501); where its device is left to
   the default the callee would undo ``.to(device)``: TP501 reported, not written.
2. ``Vocabulary.from_stoi(d)``, a classmethod of a project class returning ``cls()``: an
   object, no tensor (no TP520/TP521/TP523); one returning a tensor is still reported, and
   never as "a library the port cannot see into" (TP521).
3. ``def accuracy(model, xs, device="cpu")`` whose every caller passes the program's device:
   its ``.to(device)`` is no CPU placement (no TP523); a caller that leaves the default, or
   passes ``"cpu"``, keeps it.

Programs and projects of each shape are generated with their near misses. The oracle is
written apart from the port: the finding expected from the case's parameters, and the run:
every original on the CPU, then every port on the simulated accelerator, in one child; a
port with none of these findings left must run to its end with the original's values, every
output on the accelerator (a silenced finding hides no leftover), and one with a finding left
must show that leftover (it stops, or an output stays on the CPU).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import in_a_child
from torchport.check.port import port_paths

pytest.importorskip("torch")

_CODES = frozenset({"TP501", "TP520", "TP521", "TP523"})
_DEVICE = (
    "device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() "
    'else torch.device("cpu")\n'
)
_HEAD = "import torch\nimport torch.nn as nn\n\nOUT = []\n" + _DEVICE
_NET = (
    "\n\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.fc = nn.Linear(3, 2)\n\n    def forward(self, x):\n        return self.fc(x)\n"
)

_CHILD = """
import json, runpy, sys
import torch

jobs = json.loads(open(sys.argv[1]).read())

def run(folder):
    sys.path.insert(0, folder)
    try:
        torch.manual_seed(0)
        return runpy.run_path(folder + "/main.py", run_name="__main__")["OUT"], None
    except Exception as exc:
        return None, f"{type(exc).__name__}: {exc}"
    finally:
        sys.path.remove(folder)
        for name, module in list(sys.modules.items()):
            if (getattr(module, "__file__", None) or "").startswith(folder):
                del sys.modules[name]

cpus = [run(original) for original, _ in jobs]
from torchport.testing import simulate_accelerator
simulate_accelerator()
results = []
for (cpu, error), (_, ported) in zip(cpus, jobs):
    assert error is None, error  # the original runs on the CPU
    sim, stop = run(ported)
    if stop is not None:
        results.append({"stop": stop})
        continue
    same = len(cpu) == len(sim) and all(torch.equal(a, b.cpu()) for a, b in zip(cpu, sim))
    results.append({"stop": None, "same": same, "devices": [t.device.type for t in sim]})
print(json.dumps(results))
"""


def _port_and_run(
    projects: list[dict[str, str]],
) -> list[tuple[list[Any], set[str], dict[str, Any]]]:
    """Each project (file name -> text, ``main.py`` appending to ``OUT``) written twice,
    one copy ported in place: (the port's findings of ``_CODES`` left, the codes of
    ``_CODES`` it fixed, the run's result)."""
    with tempfile.TemporaryDirectory() as tmp:
        jobs, left, fixed = [], [], []
        for index, files in enumerate(projects):
            for copy in ("original", "ported"):
                folder = Path(tmp) / f"{copy}{index}"
                folder.mkdir()
                for name, text in files.items():
                    (folder / name).write_text(text, encoding="utf-8")
            ported = Path(tmp) / f"ported{index}"
            result = port_paths([ported], jobs=1)
            assert not result.errors, result.errors
            left.append([f for f in result.remaining if f.code in _CODES])
            fixed.append({c for f in result.changed for c in f.fixed if c in _CODES})
            jobs.append((str(Path(tmp) / f"original{index}"), str(ported)))
        runs = in_a_child(_CHILD, jobs)
    return list(zip(left, fixed, runs, strict=True))


def _on_the_device(run: dict[str, Any]) -> bool:
    return run["stop"] is None and run["same"] and "cpu" not in run["devices"]


def _check(
    case: Any, expected: set[str], left: list[Any], fixed: set[str], run: dict[str, Any]
) -> None:
    """The findings reported (``left``) or fixed are ``expected``; a port that leaves none
    runs on the accelerator, one that leaves one shows the leftover it names."""
    codes = {f.code for f in left} | fixed  # reported, or moved by the port
    assert codes == expected, (case, fixed, [(f.code, f.line, f.message) for f in left])
    # a port that leaves none of these findings runs on the accelerator, as the original
    # ran on the CPU; one that leaves a finding shows the leftover it names
    assert _on_the_device(run) == (not left), (case, run, left)


# ---------------------------------------------------------------- 1. a callee places the model

_INITS = {  # __init__ of the class the model is handed to; True: it always moves the model
    "to": (("self.model = model.to(device)", "self.device = device"), True),
    "to eval": (("self.model = model.to(device).eval()", "self.device = device"), True),
    "statement": (("model.to(device)", "self.model = model", "self.device = device"), True),
    "attribute": (("self.device = device", "self.model = model.to(self.device)"), True),
    "kept": (("self.model = model", "self.device = device"), False),
    "kept as torch.device": (("self.model = model", "self.device = torch.device(device)"), False),
    "kept or the CPU": (("self.model = model", "self.device = device or 'cpu'"), False),
}
_HANDED = {  # how the device is handed to it; True: the program's device
    "keyword": ("device=device", True),
    "position": ("device", True),
    "default": ("", False),
    "cpu": ('device="cpu"', False),
}
_BUILT = ("written in the call", "named first", "in a classmethod")


_RUNS = {  # how `Clf.run` brings its input to `self.device`
    "moved": "return self.model(x.to(self.device))",
    "made there": "return self.model(torch.as_tensor(x.tolist(), device=self.device))",
}


def _placing_project(
    init: str, handed: str, built: str, module: bool, runs: str = "moved"
) -> dict[str, str]:
    given = _HANDED[handed][0]
    extra = f", {given}" if given else ""
    cls = (
        "\n\nclass Clf:\n    def __init__(self, model, tag, device='cpu'):\n"
        + _body(_INITS[init][0])
        + f"\n    def run(self, x):\n        {_RUNS[runs]}\n"
    )
    if built == "in a classmethod":  # `SentimentClassifier.load`'s shape
        cls += (
            "\n    @classmethod\n    def load(cls, device='cpu'):\n        model = Net()\n"
            "        model.eval()\n        return cls(model, 'tag', device=device)\n"
        )
    if built == "written in the call":
        make = f"clf = Clf(Net(), 'tag'{extra})\n"
    elif built == "named first":
        make = f"model = Net()\nmodel.train()\nclf = Clf(model, 'tag'{extra})\n"
    else:  # the classmethod hands its own `device` on: its caller's decides
        make = f"clf = Clf.load({given})\n"
    use = "OUT.append(clf.run(torch.ones(2, 3)))\n"
    if not module:
        return {"main.py": _HEAD + _NET + cls + "\n\n" + make + use}
    return {
        "clf.py": "import torch\nimport torch.nn as nn" + _NET + cls,
        "main.py": _HEAD + "from clf import Clf, Net\n\n" + make + use,
    }


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(sorted(_INITS)),
            st.sampled_from(sorted(_HANDED)),
            st.sampled_from(_BUILT),
            st.booleans(),
        ),
        min_size=1,
        max_size=3,
    )
)
def test_a_model_handed_to_a_callee_that_places_it(
    cases: list[tuple[str, str, bool, bool]],
) -> None:
    runs = _port_and_run([_placing_project(*case) for case in cases])
    for case, (left, fixed, run) in zip(cases, runs, strict=True):
        init, handed, built, module = case
        placed = _INITS[init][1] and _HANDED[handed][1]
        if built == "in a classmethod" and module:
            # `Clf.load(...)` called from another module: the port of `clf.py` does not see
            # what its callers hand `load`'s `device` (its default is the CPU): reported, as
            # `SentimentClassifier.load` is, whatever the caller hands
            assert [f.code for f in left if "the CPU here" in f.message] == ["TP501"], left
            continue
        # (TP523 on `clf.run(x)` where `Clf` is another module's: another class, not this)
        left = [f for f in left if f.code == "TP501"]
        _check(case, set() if placed else {"TP501"}, left, fixed & {"TP501"}, run)


_KEPT = ("kept", "kept as torch.device", "kept or the CPU")  # how `__init__` stores the device


def test_a_class_that_keeps_the_model_and_moves_its_inputs() -> None:
    """A class that keeps the model where it is given and moves its inputs to its own
    ``self.device`` (stored as it is, as ``torch.device(device)``, or as ``device or "cpu"``):
    handed the program's device, TP501's fix moves the model and the port runs on the
    accelerator; left to its ``"cpu"`` default or given ``"cpu"``, TP501 is reported with no
    fix (a moved model would meet the class's CPU inputs), and the port stays on the CPU, as
    the finding says (8e497a0b left nothing and stopped on ``sim``). Every case in one child."""
    ways = [(False, "moved"), (True, "moved"), (False, "made there")]
    cases = [(i, h, m, r) for i in _KEPT for h in sorted(_HANDED) for m, r in ways]
    runs = _port_and_run([_placing_project(i, h, _BUILT[0], m, r) for i, h, m, r in cases])
    for case, (left, fixed, run) in zip(cases, runs, strict=True):
        handed = case[1]
        left = [f for f in left if f.code == "TP501"]
        _check(case, {"TP501"}, left, fixed & {"TP501"}, run)
        assert bool(left) == (not _HANDED[handed][1]), (case, left)
        assert all("inputs" in f.message for f in left), (case, left)


# ---------------------------------------------------------------- 2. a classmethod's object

_FACTORIES = {  # the classmethod's body; True: it returns an object, no tensor
    "instance": (("vocab = cls()", "vocab.stoi = dict(stoi)", "return vocab"), True),
    "named class": (("return Vocabulary()",), True),
    "constant": (("return 'vocab'",), True),
    "tensor": (("return torch.tensor([len(stoi)])",), False),
    "tensor in a name": (("t = torch.ones(3)", "return t"), False),
}


def _body(lines: tuple[str, ...]) -> str:
    return "".join(f"        {line}\n" for line in lines)


def _factory_project(body: str, module: bool) -> dict[str, str]:
    cls = (
        "\n\nclass Vocabulary:\n    def __init__(self):\n        self.stoi = {}\n"
        "\n    @classmethod\n    def from_stoi(cls, stoi):\n" + _body(_FACTORIES[body][0])
    )
    use = (
        "vocab = Vocabulary.from_stoi({'a': 1})\nmodel = Net().to(device)\n"
        "OUT.append(model(torch.ones(2, 3)))\nOUT.append(run(model, vocab))\n"
    )
    run = (
        "\n\ndef run(model, vocab):\n    if isinstance(vocab, torch.Tensor):\n"
        "        return model(vocab.float().expand(2, 3))\n"
        "    return model(torch.zeros(2, 3, device=device))\n\n\n"
    )
    if not module:
        return {"main.py": _HEAD + _NET + cls + run + use}
    return {
        "vocab.py": "import torch\n" + cls,
        "main.py": _HEAD + "from vocab import Vocabulary" + _NET + run + use,
    }


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(st.sampled_from(sorted(_FACTORIES)), st.booleans()), min_size=1, max_size=5)
)
def test_a_project_classmethod_that_makes_an_object(cases: list[tuple[str, bool]]) -> None:
    runs = _port_and_run([_factory_project(*case) for case in cases])
    for case, (left, fixed, run) in zip(cases, runs, strict=True):
        if _FACTORIES[case[0]][1]:  # an object: no finding at all
            _check(case, set(), left, fixed, run)
        else:  # a project's tensor: TP523 (and TP520 on `run`'s `vocab`), never TP521
            named = {f.code for f in left} & {"TP521", "TP523"}
            assert named == {"TP523"}, (case, [(f.code, f.message) for f in left])
            assert not _on_the_device(run), (case, run)


# ---------------------------------------------------------------- 3. a device parameter handed

_CALLS = {  # how one call hands the device; True: the program's device
    "keyword": ("device=device", True),
    "position": ("device", True),
    "default": ("", False),
    "cpu": ('"cpu"', False),
    # from a method, `self.device`: set from what `Runner(...)` is given, or a class default
    # no one sets (text-sentiment-lstm's `Trainer.device = "cpu"`: the CPU, reported)
    "attribute given": ("Runner(device)", True),
    "attribute default": ("Default()", False),
}
_RUNNERS = {  # (each class's `go` calls `accuracy`: written only where the case uses it)
    "attribute given": "\n\nclass Runner:\n    def __init__(self, device):\n"
    "        self.device = device\n",
    "attribute default": "\n\nclass Default:\n    device: str = 'cpu'\n",
}
_GO = "\n    def go(self, model):\n        return accuracy(model, torch.ones(2, 3), self.device)\n"


def _device_parameter_program(calls: list[str]) -> dict[str, str]:
    body = "\n\ndef accuracy(model, xs, device: str = 'cpu'):\n    return model(xs.to(device))\n"
    body += "".join(_RUNNERS[how] + _GO for how in sorted(set(calls) & set(_RUNNERS)))
    body += "\n\nmodel = Net().to(device)\n"
    for how in calls:
        given = _CALLS[how][0]
        if how.startswith("attribute"):
            body += f"OUT.append({given}.go(model))\n"
        else:
            extra = f", {given}" if given else ""
            body += f"OUT.append(accuracy(model, torch.ones(2, 3){extra}))\n"
    return {"main.py": _HEAD + _NET + body}


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.lists(st.sampled_from(sorted(_CALLS)), min_size=1, max_size=3), min_size=1, max_size=5
    )
)
def test_a_device_parameter_every_caller_hands(cases: list[list[str]]) -> None:
    runs = _port_and_run([_device_parameter_program(calls) for calls in cases])
    for calls, (left, fixed, run) in zip(cases, runs, strict=True):
        handed = all(_CALLS[how][1] for how in calls)
        _check(calls, set() if handed else {"TP523"}, left, fixed, run)
