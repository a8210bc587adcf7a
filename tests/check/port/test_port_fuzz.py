"""Differential fuzzing of ``port`` and ``fix --unsafe`` on generated programs.

For every program from :func:`port_programs.programs`:

* ``port`` raises nothing and reports no rule failure; the ported program
  parses and is a fixed point of ``port``; a program with no torch in it is
  left byte for byte, with nothing reported;
* run on the CPU (no accelerator), wherever the original ran, the ported
  program runs too and records the same values, unless a fix that was
  applied says in ``Fix.changes`` that it changes results;
* run with ``meta`` standing in for the accelerator (``torch.accelerator``
  reports it; host reads of meta tensors answer zeros; every forward is
  watched), the ported program either runs with every parameter, buffer and
  tensor input of every forward on the accelerator, or the port said what it
  could not do (its findings left are not empty): never "0 findings left" with
  data on the CPU;
* ``fix`` (safe and ``--unsafe``) passes the checks of
  ``tests/check/test_fix_fuzz.py`` on the same programs.

The default run draws a few dozen programs. The long profile:
``TORCHPORT_PORT_FUZZ_EXAMPLES=10000 pytest tests/check/port/test_port_fuzz.py -m slow``
does all of the above and then runs every ported program that ran on the CPU to its
end on the simulated accelerator (``sim``: real values, CUDA's device rules), in one
child process (installing it changes a process for good): a program that raises
there, or runs a forward with a parameter, buffer or tensor input off ``sim``, must
be one the port reported something for.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings

from tests.check.port.siblings import load
from tests.preloaded import run_python
from torchport.check import check_source
from torchport.check.port import PORT_SELECT, port_text

HERE = Path(__file__).parent
port_programs = load("port_programs", HERE / "port_programs.py")
fix_fuzz = load("fix_fuzz_checks", HERE.parent / "test_fix_fuzz.py")
device_leaves = load("port_runner", HERE / "port_runner.py").device_leaves

LONG = int(os.environ.get("TORCHPORT_PORT_FUZZ_EXAMPLES", "0"))
META = torch.device("meta")


@contextlib.contextmanager
def fake_libraries() -> Iterator[None]:
    """The fake ``fakelib`` and ``transformers`` the programs import (see port_programs)."""
    saved = {name: sys.modules.get(name) for name in port_programs.FAKE_MODULES}
    sys.modules.update(port_programs.FAKE_MODULES)
    try:
        yield
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


# ---------------------------------------------------------------- meta as the accelerator


@contextlib.contextmanager
def meta_accelerator(record: dict[str, list[str]]) -> Iterator[None]:
    """``meta`` is the accelerator; host reads of meta tensors give zeros; forwards are watched.

    Everything is put back on exit, exactly (an inherited method is not left
    shadowed). ``record["off"]`` gets one line per parameter, buffer or tensor
    input of a forward that is not on ``meta``.
    """
    tensor = torch.Tensor
    names = ("item", "tolist", "cpu", "to", "numpy", "__format__", "__bool__", "__float__",
             "__int__", "pin_memory")  # fmt: skip
    saved = {name: getattr(tensor, name) for name in names}
    own = {name for name in names if name in vars(tensor)}  # the others are inherited
    saved_torch = {name: getattr(torch, name) for name in ("allclose", "equal")}
    module_call = torch.nn.Module.__call__

    def host(t: torch.Tensor) -> torch.Tensor:
        return torch.zeros(t.shape, dtype=t.dtype)

    def to(self: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
        if self.is_meta:
            options = {k: v for k, v in kwargs.items() if k != "copy"}
            device = torch._C._nn._parse_to(*args, **options)[0]
            if device is not None and device.type == "cpu":
                return host(self)
        return saved["to"](self, *args, **kwargs)

    def numpy(self: torch.Tensor, *args: Any, force: bool = False) -> Any:
        if self.is_meta and not force:
            raise TypeError("can't convert meta device type tensor to numpy; call .cpu() first")
        return saved["numpy"](host(self) if self.is_meta else self, *args)

    def reads(name: str) -> Any:
        orig = saved[name]
        return lambda self, *a, **k: (
            orig(host(self), *a, **k) if self.is_meta else orig(self, *a, **k)
        )

    def watch(module: torch.nn.Module, args: tuple[Any, ...]) -> None:
        where = type(module).__name__
        for name, p in [*module.named_parameters(), *module.named_buffers()]:
            if p.device != META:
                record["off"].append(f"{where}: {name} on {p.device}")
        for i, leaf in enumerate(device_leaves(args)):
            if isinstance(leaf, torch.Tensor) and leaf.device != META:
                record["off"].append(f"{where}: input {i} on {leaf.device}")

    def call(self: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
        for name, leaf in kwargs.items():
            for t in device_leaves(leaf):
                if isinstance(t, torch.Tensor) and t.device != META:
                    record["off"].append(f"{type(self).__name__}: input {name}= on {t.device}")
        return module_call(self, *args, **kwargs)

    handle = torch.nn.modules.module.register_module_forward_pre_hook(watch)
    with fix_fuzz.accelerator_reports("meta"):
        try:
            tensor.item = reads("item")  # type: ignore[method-assign]
            tensor.tolist = reads("tolist")  # type: ignore[method-assign]
            tensor.cpu = lambda self, *a, **k: (
                host(self) if self.is_meta else saved["cpu"](self, *a, **k)
            )  # type: ignore[method-assign]
            tensor.to = to  # type: ignore[method-assign]
            tensor.numpy = numpy  # type: ignore[method-assign]
            tensor.__format__ = reads("__format__")  # type: ignore[method-assign]
            tensor.__bool__ = reads("__bool__")  # type: ignore[method-assign]
            tensor.__float__ = reads("__float__")  # type: ignore[method-assign]
            tensor.__int__ = reads("__int__")  # type: ignore[method-assign]
            tensor.pin_memory = lambda self, *a, **k: self  # type: ignore[method-assign]
            for name, orig in saved_torch.items():
                setattr(
                    torch,
                    name,
                    lambda *a, _o=orig, **k: (
                        True
                        if any(isinstance(x, torch.Tensor) and x.is_meta for x in a)
                        else _o(*a, **k)
                    ),
                )
            torch.nn.Module.__call__ = call  # type: ignore[method-assign]
            yield
        finally:
            for name, orig in saved.items():
                if name in own:
                    setattr(tensor, name, orig)
                else:
                    delattr(tensor, name)  # inherited again, not shadowed
            for name, orig in saved_torch.items():
                setattr(torch, name, orig)
            torch.nn.Module.__call__ = module_call  # type: ignore[method-assign]
            handle.remove()


def run(source: str, *, meta: bool) -> tuple[list[Any] | BaseException, list[str]]:
    """What the program appends to ``OUT`` (or the exception it raised), and off-device forwards."""
    out: list[Any] = []
    record: dict[str, list[str]] = {"off": []}
    namespace = {"__name__": "__fuzz__", "OUT": out}
    torch.manual_seed(0)
    try:
        with warnings.catch_warnings(), fake_libraries():
            warnings.simplefilter("ignore")
            code = compile(source, "<fuzz>", "exec")
            if meta:
                with meta_accelerator(record):
                    exec(code, namespace)
            else:
                exec(code, namespace)
    except Exception as exc:  # the program's own failure: compared, not raised
        return exc, record["off"]
    return out, record["off"]


# ---------------------------------------------------------------- the property


def declared_changes(source: str) -> bool:
    """Whether a port fix that may apply here says it changes results."""
    return any(
        f.fix is not None and f.fix.changes for f in check_source(source, select=PORT_SELECT)
    )


def _record(**facts: object) -> None:
    """One line per program to ``TORCHPORT_PORT_FUZZ_STATS`` (a file), for the long profile."""
    path = os.environ.get("TORCHPORT_PORT_FUZZ_STATS")
    if path:
        import json

        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(facts) + "\n")


def check_port(source: str) -> tuple[str, list[str]] | None:
    """The checks above; the ported program and what the port left, when it ran on the CPU."""
    outcome = port_text(source)
    assert outcome.failures == [], outcome.failures
    ported = outcome.source
    ast.parse(ported)
    again = port_text(ported)
    assert again.source == ported, f"port is not idempotent:\n{ported}\n--- again\n{again.source}"
    if "torch" not in source:
        assert ported == source and outcome.remaining == [], "a module without torch was ported"
        _record(torch=False, changed=False)
        return None
    before, _ = run(source, meta=False)
    if isinstance(before, BaseException):
        _record(torch=True, runs=False, changed=ported != source)
        return None  # the original does not run: nothing to keep
    after, _ = run(ported, meta=False)
    if isinstance(after, BaseException):
        raise AssertionError(f"original ran, port raised {after!r}\n--- port\n{ported}")
    if not fix_fuzz.same(before, after) and not declared_changes(source):
        raise AssertionError(f"results differ: {before!r} != {after!r}\n--- port\n{ported}")
    on_meta, off = run(ported, meta=True)
    left = [str(f) for f in outcome.remaining]
    if isinstance(on_meta, BaseException) or off:
        what = repr(on_meta) if isinstance(on_meta, BaseException) else off[:3]
        assert left, f"data left off the accelerator ({what}) and port said nothing:\n{ported}"
    _record(
        torch=True,
        runs=True,
        changed=ported != source,
        left=len(left),
        all_on_device=not (isinstance(on_meta, BaseException) or off),
    )
    return ported, left


def check_program(source: str) -> tuple[str, list[str]] | None:
    found = check_port(source)
    with fake_libraries():
        fix_fuzz.check_program(source)
    return found


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(port_programs.programs())
def test_port_and_fix_keep_programs_running_and_leave_nothing_unsaid(source: str) -> None:
    check_program(source)


_SIM_CHILD = """
import importlib.util, json, random, signal, sys, warnings
import torch
from torchport.testing import simulate_accelerator

def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

here, jobs, done = sys.argv[1:4]
programs = load("port_programs", here + "/port_programs.py")
device_leaves = load("port_runner", here + "/port_runner.py").device_leaves
sim = simulate_accelerator()
off = []

def watch(module, args, kwargs):
    for name, t in [*module.named_parameters(), *module.named_buffers()]:
        if t.device != sim:
            off.append(f"{type(module).__name__}: {name} on {t.device}")
    for i, t in enumerate(device_leaves((args, kwargs))):
        if isinstance(t, torch.Tensor) and t.device != sim:
            off.append(f"{type(module).__name__}: input {i} on {t.device}")

module_call = torch.nn.Module.__call__

def call(self, *args, **kwargs):
    watch(self, args, kwargs)
    return module_call(self, *args, **kwargs)

torch.nn.Module.__call__ = call
sys.modules.update(programs.FAKE_MODULES)
warnings.simplefilter("ignore")

def too_long(signum, frame):
    raise TimeoutError("ran past 60 s")

signal.signal(signal.SIGALRM, too_long)
results = []
for source in json.load(open(jobs)):
    off.clear()
    random.seed(0)
    torch.manual_seed(0)
    signal.alarm(60)
    try:
        exec(compile(source, "<fuzz>", "exec"), {"__name__": "__fuzz__", "OUT": []})
        error = None
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"[:400]
    finally:
        signal.alarm(0)
    results.append({"error": error, "off": off[:3]})
json.dump(results, open(done, "w"))
"""


def run_on_sim(ported: list[str]) -> list[dict[str, Any]]:
    """Each program run to its end on the simulated accelerator, in one child process:
    ``{"error": str | None, "off": [forwards with a tensor off the device]}`` per program."""
    with tempfile.TemporaryDirectory() as tmp:
        jobs, done = Path(tmp) / "jobs.json", Path(tmp) / "done.json"
        jobs.write_text(json.dumps(ported), encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if k != "TORCHPORT_DEVICE"}
        child = run_python(_SIM_CHILD, str(HERE), str(jobs), str(done), env=env)
        assert child.returncode == 0, child.stderr[-4000:]
        results: list[dict[str, Any]] = json.loads(done.read_text(encoding="utf-8"))
    return results


def unreported_on_sim(cases: list[tuple[str, list[str]]]) -> list[str]:
    """The ported programs that left data off ``sim`` (or stopped there) with nothing reported."""
    results = run_on_sim([ported for ported, _ in cases])
    silent = []
    for (ported, left), got in zip(cases, results, strict=True):
        _record(sim_error=got["error"], sim_off=len(got["off"]), left=len(left))
        if (got["error"] or got["off"]) and not left:
            silent.append(f"{got['error'] or got['off']}\n--- port\n{ported}")
    return silent


def test_the_sim_run_sees_data_left_on_the_cpu() -> None:
    """The sim oracle is not blind: an unported model (and its input) on the CPU, and a
    CPU batch meeting a model on the device, are both seen; a ported program is clean."""
    source = "import torch\nmodel = torch.nn.Linear(4, 2)\nOUT.append(model(torch.ones(1, 4)))\n"
    mixed = (
        "import torch\nmodel = torch.nn.Linear(4, 2).to(torch.accelerator.current_accelerator())\n"
        "OUT.append(model(torch.ones(1, 4)))\n"
    )
    unported, mismatch, ported = run_on_sim([source, mixed, port_text(source).source])
    assert unported["error"] is None and unported["off"], unported
    assert mismatch["error"] is not None or mismatch["off"], mismatch
    assert ported == {"error": None, "off": []}, ported


@pytest.mark.slow
@pytest.mark.timeout(0)  # opt-in, and as long as the examples asked for: no 300 s bound
@pytest.mark.skipif(not LONG, reason="set TORCHPORT_PORT_FUZZ_EXAMPLES=N to run the long profile")
def test_port_fuzz_long() -> None:
    cases: dict[str, tuple[str, list[str]]] = {}

    @settings(max_examples=max(LONG, 1), deadline=None, suppress_health_check=list(HealthCheck))
    @given(port_programs.programs())
    def every_program(source: str) -> None:
        found = check_program(source)
        if found is not None:
            cases[found[0]] = found

    every_program()
    silent = unreported_on_sim(list(cases.values()))
    assert not silent, f"{len(silent)} of {len(cases)} silent on sim; first:\n{silent[0]}"


def test_every_fragment_runs_as_written() -> None:
    """The fragments are programs that work on the CPU: the fuzz compares against them."""
    for fragment in port_programs.FRAGMENTS:
        body = port_programs._T.sub("torch.", fragment.replace("{k}", "0"))
        source = "import torch\n" + port_programs.MODELS[0].replace("T.", "torch.") + body
        result, _ = run(source, meta=False)
        assert not isinstance(result, BaseException), (fragment, result)
    for body in port_programs.NO_TORCH:
        result, _ = run(body, meta=False)
        assert not isinstance(result, BaseException), (body, result)


def test_the_meta_check_sees_data_left_on_the_cpu() -> None:
    """An unported program fails the meta check: the check cannot pass by watching nothing."""
    source = "import torch\nmodel = torch.nn.Linear(4, 2)\nOUT.append(model(torch.ones(1, 4)))\n"
    result, off = run(source, meta=True)
    assert not isinstance(result, BaseException)
    assert off  # the model and its input stayed on the CPU
    ported, off = run(port_text(source).source, meta=True)
    assert not isinstance(ported, BaseException) and off == []


def test_a_packed_sequence_is_on_the_accelerator_but_its_batch_sizes() -> None:
    """hunkim's 13_4_pack_pad, as a fragment: ported, the LSTM's packed input is on the
    accelerator; its ``batch_sizes`` stay on the CPU, as torch requires (not a leftover)."""
    fragment = next(f for f in port_programs.FRAGMENTS if "pack_padded_sequence" in f)
    body = port_programs._T.sub("torch.", fragment.replace("{k}", "0"))
    source = "import torch\n" + body
    ported = port_text(source)
    result, off = run(ported.source, meta=True)
    assert not isinstance(result, BaseException), (result, ported.source)
    assert off == [], (off, ported.source)
    _, off = run(source, meta=True)
    assert any("LSTM" in o for o in off)  # unported, the watch sees the CPU


@pytest.mark.parametrize("marker", ["a{k} = T.ones(1, 2)", "prev{k} = T.zeros((1, 2))"])
def test_a_device_name_bound_elsewhere_to_a_cpu_tensor_is_moved_there(marker: str) -> None:
    """The flow is flow-insensitive: every binding of a name it knows on the device is moved
    (the held-out autograd and manual-RNN scripts ran with one binding on the CPU, unsaid)."""
    fragment = next(f for f in port_programs.FRAGMENTS if marker in f)
    body = port_programs._T.sub("torch.", fragment.replace("{k}", "0"))
    source = "import torch\n" + port_programs.MODELS[0].replace("T.", "torch.") + body
    ported = port_text(source)
    before, _ = run(source, meta=False)
    after, _ = run(ported.source, meta=False)
    assert fix_fuzz.same(before, after), ported.source
    on_meta, off = run(ported.source, meta=True)
    placed = not isinstance(on_meta, BaseException) and off == []
    assert placed or ported.remaining, (on_meta, off, ported.source)
    assert placed, ported.source  # this one the port can move: it is a torch factory
