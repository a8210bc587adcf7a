"""Diagnosing never changes the program: during an audit()/strict() block, and after it.

Two oracles, neither sharing code with what they check:

* **The rule itself.** Every class torch defines (``torch.Tensor``, its C base, modules,
  the DataLoader and its iterators, ...) keeps its ``__dict__`` entry for entry, and the
  type slots CPython derives from them behave as before (``PySequence_Check`` and
  kin, asked through ``ctypes``): setting and deleting ``torch.Tensor.__getitem__``
  once left a sequence slot on every tensor, and ``torch.tensor([t0, t1])`` of 0-dim
  tensors raised ``TypeError`` for the rest of the process.
* **A differential run.** Hypothesis writes small programs from a vocabulary of tensor
  statements (indexing by masks, lists, numpy arrays and tensors; ``torch.tensor`` of
  0-dim tensors; list and numpy conversions; in-place ops; scalar reads; errors torch
  raises and errors the program raises itself); each runs in a fresh namespace bare,
  under ``audit()``, under ``strict()``, with the block left by an exception, and bare
  again after all of them. Every statement's value (or exception type and message)
  and every warning's category and text must be the same in all runs. The scripts the
  audit is hand-counted on, and a small actor-critic loop, run the same under ``python``
  and ``torchport run --audit``.
"""

from __future__ import annotations

import ctypes
import runpy
import subprocess
import sys
import types
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

import torchport as tp

SCRIPTS = Path(__file__).parent / "scripts"


# -- the rule: no class attribute of torch changes -----------------------------------------


def _torch_classes() -> list[type]:
    """Every class reachable from torch's main modules, torch.Tensor and its C base first."""
    found: dict[int, type] = {
        id(torch.Tensor): torch.Tensor,
        id(torch._C.TensorBase): torch._C.TensorBase,
    }
    modules: list[types.ModuleType] = [
        torch,
        torch.nn,
        torch.nn.functional,
        torch.nn.modules,
        torch.optim,
        torch.utils.data,
        torch.utils.data.dataloader,
        torch.jit,
        torch.autograd,
        torch.overrides,
    ]
    for module in modules:
        for value in list(vars(module).values()):
            if isinstance(value, type) and (value.__module__ or "").startswith("torch"):
                found.setdefault(id(value), value)
    return list(found.values())


_CLASSES = _torch_classes()


def _class_dicts() -> dict[type, dict[str, int]]:
    """Each class's own attributes by identity: an entry added, removed or replaced shows."""
    return {cls: {name: id(value) for name, value in vars(cls).items()} for cls in _CLASSES}


_API = ctypes.pythonapi
for _name in (
    "PySequence_Check",
    "PyMapping_Check",
    "PyIter_Check",
    "PyNumber_Check",
    "PyIndex_Check",
):
    getattr(_API, _name).argtypes = [ctypes.py_object]
    getattr(_API, _name).restype = ctypes.c_int


def _slot_behaviour() -> dict[str, Any]:
    """What CPython's type slots say of tensors of each rank, and what they do."""
    seen: dict[str, Any] = {}
    for rank in (0, 1, 2):
        t = torch.ones((2,) * rank)
        for name in ("PySequence_Check", "PyMapping_Check", "PyIter_Check", "PyNumber_Check"):
            seen[f"{name}/{rank}"] = getattr(_API, name)(t)
        seen[f"PyIndex_Check/{rank}"] = _API.PyIndex_Check(t)
        seen[f"len/{rank}"] = _outcome(lambda t=t: len(t))
        seen[f"iter/{rank}"] = _outcome(lambda t=t: [x.tolist() for x in t])
        seen[f"list/{rank}"] = _outcome(lambda t=t: [x.tolist() for x in list(t)])
    zero = [torch.tensor(1.0), torch.tensor(2.0)]
    seen["tensor(0-dim list)"] = _outcome(lambda: torch.tensor(zero).tolist())
    seen["as_tensor(0-dim list)"] = _outcome(lambda: torch.as_tensor(zero).tolist())
    seen["np.array(0-dim list)"] = _outcome(lambda: np.array(zero).tolist())
    seen["hash"] = type(torch.ones(1)).__hash__ is torch.Tensor.__hash__
    return seen


def _outcome(run: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return ("value", run())
    except Exception as err:  # the exception is the outcome compared
        return (type(err).__name__, str(err))


@pytest.mark.parametrize("tool", ["audit", "strict", "audit+strict", "audit(every=2)"])
def test_no_class_of_torch_changes_during_or_after_the_block(tool: str) -> None:
    _exercise()  # torch's own first-use changes (Optimizer hooks its subclass's step) first
    dicts, slots = _class_dicts(), _slot_behaviour()
    with _tool(tool) as report:
        _exercise()
        assert _class_dicts() == dicts
        assert _slot_behaviour() == slots
        if report is not None:
            with report.step():
                _exercise()
                assert _class_dicts() == dicts
    assert _class_dicts() == dicts
    assert _slot_behaviour() == slots


def test_torchs_modules_are_as_before_after_the_block() -> None:
    modules = (torch, torch.jit, torch.nn.functional, torch.utils.data.dataloader)
    before = [{k: id(v) for k, v in vars(m).items()} for m in modules]
    with tp.audit(), tp.strict():
        _exercise()
    assert [{k: id(v) for k, v in vars(m).items()} for m in modules] == before


def _exercise() -> None:
    """What a training step's neighbourhood does: indexing, reads, a loader, a step."""
    x = torch.arange(6.0)
    x[x > 2]
    x[x > 2] = 0.0
    x[[0, -1]]
    x[np.array([1, 2])]
    torch.from_numpy(np.ones(2)) + torch.frombuffer(bytearray(8), dtype=torch.float32)
    torch.tensor([x[0], x[1]])
    x.tolist()
    float(x.sum())
    model = nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for (batch,) in torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.ones(4, 2)), batch_size=2
    ):
        model(batch).sum().backward()
        opt.step()


@pytest.fixture(autouse=True)
def _no_torchport_device(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TORCHPORT_DEVICE", raising=False)


class _tool:
    """``audit()``, ``strict()``, both, or a sampled audit, entered as one context."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._stack: list[Any] = []

    def __enter__(self) -> Any:
        report = None
        if "audit" in self.name:
            every = 2 if "every" in self.name else 1
            self._stack.append(tp.audit(every=every))
            report = self._stack[-1].__enter__()
        if "strict" in self.name:
            self._stack.append(tp.strict())
            self._stack[-1].__enter__()
        return report if "every" in self.name else None

    def __exit__(self, *exc: Any) -> bool:
        suppress = False
        for context in reversed(self._stack):
            if context.__exit__(*exc):
                suppress = True
                exc = (None, None, None)
        return suppress


# -- the differential oracle -------------------------------------------------------------

# One statement per entry; each binds `r` or changes `a`. Written to reach the paths a
# diagnostic watches: indexing by masks/lists/arrays/tensors (reads and writes), 0-dim
# tensors in Python lists, conversions to Python and NumPy, scalar reads, in-place ops,
# data-dependent shapes, moves, printing, errors from torch and from the program.
STATEMENTS = [
    "r = a[a > 0]",
    "a[a > 0] = 0.5",
    "a[a < 0] = a[a < 0] * 2",
    "r = a[[0, -1]]",
    "r = a[np.array([1, 0])]",
    "r = a[torch.tensor([0, 1])]",
    "r = a[s.long().clamp(0, 1)]",
    "r = torch.tensor([s, s2])",
    "r = torch.tensor([a[0], a[1]])",
    "r = torch.as_tensor([s, s2])",
    "r = torch.stack([s, s2])",
    "r = np.array([s, s2])",
    "r = a.tolist()",
    "r = a.numpy().copy()",
    "r = np.asarray(a).copy()",
    "r = [float(v) for v in a]",
    "r = list(a)",
    "r = len(a)",
    "r = len(s)",
    "r = [v for v in s]",
    "r = s[0]",
    "r = a[100]",
    "r = s.item()",
    "r = float(s)",
    "r = int(s > 0)",
    "r = bool(s > 0)",
    "r = bool(a > 0)",
    "r = (s > 0) and 1 or 2",
    "r = s in a",
    "r = a.sum()",
    "a.add_(1)",
    "a.mul_(-1)",
    "a = a.clone()",
    "r = a.nonzero()",
    "r = torch.unique(a)",
    "r = torch.masked_select(a, a > 0)",
    "r = a.repeat_interleave(2)",
    "r = F.one_hot(torch.tensor([0, 2]), 3)",
    "r = F.one_hot(torch.tensor([0, 2]))",
    "r = F.one_hot(torch.tensor([0, 5]), 3)",
    "r = a.to('cpu')",
    "r = a.cpu()",
    "r = str(a)",
    "r = f'{s:.3f}'",
    "r = a.view(2, -1)",
    "r = torch.where(a > 0)",
    "r = torch.zeros(3)[torch.tensor([True, False])]",
    "r = a.max(0)",
    "r = divmod(float(s), 2)",
    "r = torch.tensor(np.float32(1.5))",
    "r = torch.tensor(a)",
    "r = a.new_tensor([1, 2])",
    "raise ValueError('the program raised this itself')",
    "r = torch.ones(2) + torch.ones(3)",
    "assert float(s) < 100, 'the program asserts'",
]


def _value(r: Any) -> Any:
    """A comparable picture of a result: tensors and arrays by dtype, shape and values."""
    if isinstance(r, torch.Tensor):
        return ("tensor", str(r.dtype), tuple(r.shape), r.tolist(), r.requires_grad)
    if isinstance(r, np.ndarray):
        return ("ndarray", str(r.dtype), r.shape, r.tolist())
    if isinstance(r, (list, tuple)):
        return (type(r).__name__, [_value(v) for v in r])
    return (type(r).__name__, repr(r))


def _run_program(program: list[str], values: list[float]) -> list[Any]:
    """Run each statement in one fresh namespace; record what it gives, raises and warns."""
    scope: dict[str, Any] = {"torch": torch, "np": np, "F": F}
    scope["a"] = torch.tensor(values)
    scope["s"] = torch.tensor(values[0])
    scope["s2"] = torch.tensor(values[-1])
    seen: list[Any] = []
    for statement in program:
        scope.pop("r", None)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                exec(compile(statement, "<program>", "exec"), scope)
                outcome: Any = ("ok", _value(scope.get("r")))
            except Exception as err:
                outcome = ("raised", type(err).__name__, str(err))
        warned = [(w.category.__name__, str(w.message)) for w in caught]
        seen.append((statement, outcome, warned, _value(scope["a"])))
    return seen


@given(
    program=st.lists(st.sampled_from(STATEMENTS), min_size=1, max_size=12),
    values=st.lists(
        st.floats(-4, 4, allow_nan=False, width=32).filter(lambda v: v != 0), min_size=2, max_size=6
    ).filter(lambda v: len(v) % 2 == 0),
)
@settings(deadline=None)
def test_generated_programs_run_the_same_with_and_without_the_tools(
    program: list[str], values: list[float]
) -> None:
    bare = _run_program(program, values)
    for tool in ("audit", "strict", "audit+strict"):
        with _tool(tool):
            assert _run_program(program, values) == bare, tool
    assert _run_program(program, values) == bare  # after the blocks: the same again


@given(program=st.lists(st.sampled_from(STATEMENTS), min_size=1, max_size=6))
@settings(deadline=None, max_examples=30)
def test_an_exception_leaving_the_block_is_the_programs_and_the_process_is_unchanged(
    program: list[str],
) -> None:
    values = [1.0, -2.0]
    bare = _run_program(program, values)

    class Leaving(Exception):
        pass

    for tool in ("audit", "strict"):
        with pytest.raises(Leaving), _tool(tool):
            assert _run_program(program, values) == bare
            raise Leaving
    assert _run_program(program, values) == bare


# -- scripts, under python and under `torchport run --audit` -------------------------------

_ACTOR_CRITIC = '''
"""A small actor-critic loop as pytorch/examples writes one: rewards and values as
0-dim tensors gathered in Python lists and turned into tensors."""
import torch
from torch import nn
from torch.distributions import Categorical

torch.manual_seed(0)
policy = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
critic = nn.Linear(4, 1)
opt = torch.optim.Adam([*policy.parameters(), *critic.parameters()], lr=1e-2)
for episode in range(3):
    state = torch.randn(4)
    log_probs, values, rewards = [], [], []
    for t in range(5):
        dist = Categorical(logits=policy(state))
        action = dist.sample()
        log_probs.append(dist.log_prob(action))
        values.append(critic(state).squeeze())
        rewards.append(torch.tensor(1.0) if action.item() == 1 else torch.tensor(0.0))
        state = torch.randn(4)
    returns = torch.tensor(rewards)  # 0-dim tensors in a list
    value_t = torch.stack(values)
    advantage = returns - value_t.detach()
    loss = -(torch.stack(log_probs) * advantage).sum() + (returns - value_t).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    ends = value_t.detach()
    print(episode, round(loss.item(), 4), torch.tensor([ends[0], ends[-1]]).tolist())
'''


def _stdout(argv: list[str]) -> tuple[int, str]:
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=600, check=False, cwd=str(SCRIPTS)
    )
    return done.returncode, done.stdout


@pytest.mark.slow  # whole scripts, twice each (generated programs test the rule here)
@pytest.mark.parametrize("name", ["actor_critic.py", "mnist_style.py"])
def test_scripts_print_the_same_under_python_and_torchport_run_audit(
    name: str, tmp_path: Path
) -> None:
    (tmp_path / "actor_critic.py").write_text(_ACTOR_CRITIC)
    script = str(tmp_path / name if name == "actor_critic.py" else SCRIPTS / name)
    bare = _stdout([sys.executable, script])
    assert bare[0] == 0 and bare[1], script
    run = [sys.executable, "-m", "torchport", "run", "--device", "cpu", "--audit", "-q", script]
    assert _stdout(run) == bare


@pytest.mark.parametrize(
    "name", ["actor_critic.py", "mnist_style.py", "hf_style.py", "stream_style.py"]
)
def test_scripts_print_the_same_under_each_tool_in_process(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "actor_critic.py").write_text(_ACTOR_CRITIC)
    script = str(tmp_path / name if name == "actor_critic.py" else SCRIPTS / name)
    monkeypatch.setattr(sys, "argv", [script])

    def printed() -> str:
        runpy.run_path(script, run_name="__main__")
        return capsys.readouterr().out

    bare = printed()
    assert bare
    for tool in ("audit", "strict"):
        with _tool(tool):
            assert printed() == bare, tool
    assert printed() == bare


_SEEDED_DRAWS = """
import random, sys
import numpy as np
import torch
import torchport as tp
random.seed(7); np.random.seed(7); torch.manual_seed(7)
if sys.argv[1] == "tool":
    with tp.audit(), tp.strict():
        pass
print(random.random(), np.random.rand(), torch.rand(1).item())
"""


def test_the_first_use_of_the_tools_draws_nothing_from_the_programs_generators() -> None:
    """Reaching ``tp.audit`` imports the diagnose package (and what it draws with); an
    import that drew from Python's global ``random`` (``rich`` takes 24 bits at import)
    shifted every later draw of a program that seeded before its first ``audit()``."""
    bare = _stdout([sys.executable, "-c", _SEEDED_DRAWS, "bare"])
    assert bare[0] == 0 and bare[1]
    assert _stdout([sys.executable, "-c", _SEEDED_DRAWS, "tool"]) == bare
