"""Run an original program on the CPU and its port on the simulated accelerator, in a child.

The simulated accelerator is installed once per process and then stays: a test that
installed it in the pytest process would put every later in-process run of a ported
program on it. Here the child runs the original first (on the CPU), installs the
simulated accelerator (no CUDA redirect: ``torch.cuda.is_available()`` stays False, as on
MPS or XPU), then runs the port; each program appends tensors to ``OUT``. A table of
cases runs in one child (:func:`originals_on_cpu_ports_on_sim`).
"""

from __future__ import annotations

import importlib.util
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.preloaded import run_python
from torchport.check.port import port_text

# What every child shares: a program run with its seed, its tensors appended to ``OUT``.
_RUN = """
import json, sys
import torch

def run(source):
    out = []
    torch.manual_seed(0)
    exec(compile(source, "<program>", "exec"), {"OUT": out, "__name__": "__main__"})
    return out
"""
_EXEC = '{"OUT": out, "__name__": "__main__"}'
_EXEC_PRINTED = (
    '{"OUT": out, "__name__": "__main__", "print": lambda *a, **k: out.extend('
    "t for t in a if isinstance(t, torch.Tensor))}"
)
assert _EXEC in _RUN
# Each original on the CPU, then the simulated accelerator.
_ORIGINALS = (
    _RUN
    + """
pairs = json.loads(open(sys.argv[1]).read())
cpus = [run(original) for original, _ in pairs]
from torchport.testing import simulate_accelerator
simulate_accelerator()
results = []
"""
)
_CHILD = (
    _ORIGINALS
    + """
for cpu, (_, ported) in zip(cpus, pairs):
    sim = run(ported)
    same = len(cpu) == len(sim) and all(torch.equal(a, b.cpu()) for a, b in zip(cpu, sim))
    results.append({"same": same, "devices": [str(t.device) for t in sim]})
print(json.dumps(results))
"""
)
# Each of ``ports`` where it may stop: its error (``{"error": "Type: message"}``) in its place,
# and values compared as close (a simulated GRU's kernels sum in another order than the CPU's).
_EACH_PORT_OR_ITS_STOP = """
for cpu, ported in zip(cpus, ports):
    try:
        sim = run(ported)
    except Exception as exc:
        results.append({"error": f"{type(exc).__name__}: {exc}"})
        continue
    same = len(cpu) == len(sim) and all(
        torch.allclose(a, b.cpu(), rtol=1e-5, atol=1e-6) for a, b in zip(cpu, sim)
    )
    results.append({"same": same, "devices": [str(t.device) for t in sim]})
print(json.dumps(results))
"""
_STOPPING = _ORIGINALS + "ports = [ported for _, ported in pairs]\n" + _EACH_PORT_OR_ITS_STOP


def original_on_cpu_port_on_sim(original: str, ported: str) -> dict[str, Any]:
    """``{"same": values equal, "devices": each ported output's device}``; a program that
    raises fails the assertion with the child's traceback."""
    (result,) = originals_on_cpu_ports_on_sim([(original, ported)])
    return result


def originals_on_cpu_ports_on_sim(pairs: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """:func:`original_on_cpu_port_on_sim` for many (original, ported) pairs in one child:
    every original on the CPU first, then every port on the simulated accelerator (one
    child start for a whole table of cases, not one per case)."""
    results: list[dict[str, Any]] = in_a_child(_CHILD, pairs)
    assert len(results) == len(pairs), results
    return results


def ports_on_sim_or_stops(pairs: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """:func:`originals_on_cpu_ports_on_sim` where a port may stop: each result is
    ``{"same", "devices"}`` (values close), or ``{"error"}`` where the port raised."""
    results: list[dict[str, Any]] = in_a_child(_STOPPING, pairs)
    assert len(results) == len(pairs), results
    return results


# Apart: the originals on the CPU in one child, their outputs saved; the ports in another,
# the simulated accelerator installed first. A process that ran a backward pass before the
# simulated accelerator was installed cannot run one on it: the autograd engine sizes its
# per-device queues once, on its first backward ("device_ready_queues_ ... INTERNAL ASSERT
# FAILED"), so a program trained by hand stops on `sim` after its original ran in the same
# child, whatever the port did. (`torchport port --verify` runs a fresh process: no such stop.)
_SAVE_ORIGINALS = (
    _RUN
    + """
job = json.loads(open(sys.argv[1]).read())
outs = [run(original) for original in job["originals"]]
torch.save(outs, job["saved"])
print(json.dumps(len(outs)))
"""
)
_PORTS_AFTER = (
    _RUN
    + """
from torchport.testing import simulate_accelerator
simulate_accelerator()
job = json.loads(open(sys.argv[1]).read())
cpus, ports, results = torch.load(job["saved"]), job["ports"], []
"""
    + _EACH_PORT_OR_ITS_STOP
)


def ports_on_sim_apart(pairs: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """:func:`ports_on_sim_or_stops` with the originals and the ports in two children, the
    simulated accelerator installed before any port runs (programs that train: see above)."""
    with tempfile.TemporaryDirectory() as tmp:
        saved = str(Path(tmp) / "cpu.pt")
        in_a_child(_SAVE_ORIGINALS, {"originals": [o for o, _ in pairs], "saved": saved})
        results: list[dict[str, Any]] = in_a_child(
            _PORTS_AFTER, {"ports": [p for _, p in pairs], "saved": saved}
        )
    assert len(results) == len(pairs), results
    return results


def placed_or_said(sources: Sequence[str], *, apart: bool = False, printed: bool = False) -> None:
    """Port each program (no failure, idempotent) and run the ports on the simulated
    accelerator (:func:`ports_on_sim_apart` where ``apart``: programs that train): each
    port leaves a finding, or computes the original's values with every output on ``sim:0``.
    ``printed``: the tensors each program hands ``print`` are outputs too (the program's
    ``print`` appends them to ``OUT`` in the run; the port reads the builtin)."""
    ports = [port_text(s) for s in sources]
    for port in ports:
        assert not port.failures, port.failures
        assert port_text(port.source).source == port.source, f"not idempotent:\n{port.source}"
    pairs = [(s, p.source) for s, p in zip(sources, ports, strict=True)]
    if printed:
        results: list[dict[str, Any]] = in_a_child(_STOPPING.replace(_EXEC, _EXEC_PRINTED), pairs)
    else:
        results = (ports_on_sim_apart if apart else ports_on_sim_or_stops)(pairs)
    silent = [
        (source, port.source, result)
        for source, port, result in zip(sources, ports, results, strict=True)
        if not port.remaining
        and not (result.get("same") and set(result.get("devices", [])) == {"sim:0"})
    ]
    assert not silent, silent[0]


# A child's runner of one generated project: its ``train.py`` as ``__main__`` with ``OUT`` (the
# list it appends its results to) and the project's folder first on ``sys.path``, seeded;
# every module imported from the folder is dropped afterwards, so that the next project's
# ``model.py`` is its own. ``{"out": [...]}``, or ``{"error": "Type: message"}``.
RUN_PROJECT = """
import runpy, sys, warnings
import torch

def run_project(root):
    out = []
    sys.path.insert(0, root)
    before = set(sys.modules)
    torch.manual_seed(0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            runpy.run_path(root + "/train.py", {"OUT": out}, "__main__")
        return {"out": out}
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"[:300]}
    finally:
        sys.path.remove(root)
        for name in set(sys.modules) - before:
            if (getattr(sys.modules[name], "__file__", None) or "").startswith(root):
                del sys.modules[name]
"""


def in_a_child(child_source: str, job: Any) -> Any:
    """Run ``child_source`` in a child (``TORCHPORT_DEVICE`` unset; forked off a server that
    has imported torch, :mod:`tests.preloaded`) with ``job`` as a JSON file named by
    ``sys.argv[1]``; return the JSON of its last printed line. A child that fails fails the
    assertion with its traceback."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "job.json"
        path.write_text(json.dumps(job), encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if k != "TORCHPORT_DEVICE"}
        child = run_python(child_source, str(path), env=env)
    wants_torch = "No module named 'torch'" in child.stderr
    if child.returncode != 0 and wants_torch and importlib.util.find_spec("torch") is None:
        # at once, not as a failure the conftest turns into a skip after hypothesis has
        # shrunk and explained it (minutes of ports under its tracer); where torch is
        # installed here, a child missing it is a failure
        pytest.skip("runs code that needs torch")
    assert child.returncode == 0, child.stderr[-3000:]
    return json.loads(child.stdout.splitlines()[-1])


_STOPS = """
import json, runpy, sys, traceback
import torch
from torchport.testing import simulate_accelerator

simulate_accelerator()
stops = []
for path in json.loads(open(sys.argv[1]).read()):
    try:
        runpy.run_path(path, run_name="__main__")
        stops.append(None)
    except Exception as exc:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == path]
        stops.append([type(exc).__name__, str(exc), frames[-1].lineno if frames else None])
print(json.dumps(stops))
"""


def stops_on_sim(paths: list[str]) -> list[tuple[str, str, int | None] | None]:
    """Each program file run on the simulated accelerator in one child: None where it ran to
    its end, else (the exception's type name, its message, the last line of that file in
    the traceback)."""
    found = in_a_child(_STOPS, paths)
    return [None if stop is None else (stop[0], stop[1], stop[2]) for stop in found]


def stops_exactly_where_reported(
    cases: Sequence[Any], programs: Sequence[str], region: Callable[[str, Any], set[int]]
) -> None:
    """Port each program, run every port on the simulated accelerator in one child, and
    assert each stops only inside ``region(ported source, case)`` (its lines), and there
    exactly when the port left a finding there."""
    with tempfile.TemporaryDirectory() as tmp:
        paths, reported, lines = [], [], []
        for index, source in enumerate(programs):
            path = Path(tmp) / f"p{index}.py"
            outcome = port_text(source, str(path))
            assert not outcome.failures, outcome.failures
            path.write_text(outcome.source)
            where = region(outcome.source, cases[index])
            reported.append(any(f.line in where for f in outcome.remaining))
            lines.append(where)
            paths.append(str(path))
        stops = stops_on_sim(paths)
    for case, stop, found, where in zip(cases, stops, reported, lines, strict=True):
        stopped = stop is not None and stop[2] in where
        assert stop is None or stopped, (case, stop)  # nowhere else
        assert found == stopped, (case, stop, found)


def same_on_the_cpu(programs: Sequence[str]) -> None:
    """Each program and its port, run in this process on the CPU (no simulated accelerator
    here), append the same tensors to their ``OUT``."""
    import torch  # the pytest process's, on the CPU

    for source in programs:
        outs = []
        for text in (source, port_text(source, "p.py").source):
            names: dict[str, object] = {"__name__": "__main__"}
            torch.manual_seed(0)
            exec(compile(text, "<program>", "exec"), names)
            outs.append(names["OUT"])
        before, after = outs
        assert isinstance(before, list) and isinstance(after, list), source
        assert len(before) == len(after), source
        assert all(torch.equal(a, b) for a, b in zip(before, after, strict=True)), source


# Projects: each a folder whose `train.py` appends its tensors to `OUT`, run from the folder (its
# modules found as Python finds them); the originals on the CPU, then the ports on `sim`.
_PROJECTS = (
    """
import json, runpy, sys
import torch

def run(folder):
    sys.path.insert(0, folder)
    root = folder.rsplit("/", 1)[0] + "/"  # (every project's folder is in it)
    for name in [m for m in sys.modules if getattr(sys.modules[m], "__file__", None)
                 and str(sys.modules[m].__file__).startswith(root)]:
        del sys.modules[name]
    out = []
    torch.manual_seed(0)
    try:
        runpy.run_path(folder + "/train.py", init_globals={"OUT": out}, run_name="__main__")
    finally:
        sys.path.remove(folder)
    return out

pairs = json.loads(open(sys.argv[1]).read())
cpus = [run(original) for original, _ in pairs]
from torchport.testing import simulate_accelerator
simulate_accelerator()
ports, results = [ported for _, ported in pairs], []
"""
    + _EACH_PORT_OR_ITS_STOP
)


def projects_placed_or_said(projects: Sequence[dict[str, str]]) -> None:
    """Port each project (its files by relative path; ``train.py`` appends to ``OUT``) as one
    folder (no failure, idempotent) and run the originals on the CPU and the ports on the
    simulated accelerator in one child: each port leaves a finding, or computes the original's
    values with every output on ``sim:0``."""
    from torchport.check import port_paths

    with tempfile.TemporaryDirectory() as tmp:
        pairs, remaining, texts = [], [], []
        for index, files in enumerate(projects):
            folders = [Path(tmp) / f"o{index}", Path(tmp) / f"p{index}"]
            for folder in folders:
                for rel, text in files.items():
                    (folder / rel).parent.mkdir(parents=True, exist_ok=True)
                    (folder / rel).write_text(text, encoding="utf-8")
            result = port_paths([folders[1]], jobs=1)
            assert not result.errors, result.errors
            again = port_paths([folders[1]], jobs=1, diff=True)
            assert not again.changed, f"not idempotent: {again.changed}"
            remaining.append(list(result.remaining))
            texts.append((folders[1] / "train.py").read_text(encoding="utf-8"))
            pairs.append((str(folders[0].resolve()), str(folders[1].resolve())))
        results: list[dict[str, Any]] = in_a_child(_PROJECTS, pairs)
    assert len(results) == len(projects), results
    silent = [
        (files, text, result)
        for files, text, left, result in zip(projects, texts, remaining, results, strict=True)
        if not left and not (result.get("same") and set(result.get("devices", [])) == {"sim:0"})
    ]
    assert not silent, silent[0]
