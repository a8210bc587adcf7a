"""Differential fuzzing of ``fix``: generated programs, fixed safe and unsafe, run side by side.

For every program from :func:`fix_programs.programs`:

* ``check_source`` and ``fix_source`` (safe and ``unsafe=True``) raise nothing;
* each fixed program parses and is a fixed point of ``fix``;
* it reads no global name the original did not read unless the module binds it
  (``symtable``): a fix never introduces a name that is unbound where used;
* run on three stand-in machines, wherever the original ran, the fixed
  program runs too (never a broken fix) and records the same values on the
  same devices (never a changed output), unless a fix that was offered says
  in ``Fix.changes`` that it changes results. All three run on the CPU:

  - ``cuda-cpu``: CUDA calls redirected to the CPU (``torchport.redirect("cpu")``)
    and ``torch.accelerator`` reporting CUDA, as on a CUDA machine; compares
    values;
  - ``cuda-meta``: CUDA calls redirected to ``meta`` and ``torch.accelerator``
    reporting ``meta``; compares where every tensor lives (shapes, dtypes,
    devices), so a fix that sends data elsewhere (a ``device = "cpu"`` reused
    for ``.cuda()``) is caught;
  - ``other``: no CUDA at all while ``torch.accelerator`` reports ``meta``: a
    machine with another accelerator (a Mac's MPS). A fix that moves the device
    (the CUDA-or-CPU choice becomes the accelerator) changes where data lives
    here, and must not leave a model or tensor behind on the CPU.
  - ``cpu``: no accelerator at all (CI): the fixed device is the CPU, so a fix
    that rewrites a device kept apart from the CPU (a key of a dict beside
    ``torch.device("cpu")``, one of the kinds a test tries) merges the two.

  The look-alike libraries (numba, CuPy, JAX, TensorFlow) are recording
  stand-ins whose calls land in ``OUT`` (``fix_programs.lookalike_modules``).

The default run draws a few dozen programs (seconds). The long profile runs on
demand: ``TORCHPORT_FUZZ_EXAMPLES=10000 pytest tests/check/test_fix_fuzz.py -m slow
--timeout 0`` (``TORCHPORT_FUZZ_STATS=file.jsonl`` records each program's figures there;
without ``--timeout``, pytest-timeout's 300 s stops it mid-program, seen as a flaky
``SystemError`` from ``compile``). It draws ``programs()``, ``device_programs()`` and
``project_programs()`` (a second module of the project beside the program, the program
fixed as a file of that project: :func:`fix_in_project`).
Rules: every rule ``fix`` can run (``ALL`` but the TP5xx port rules, which move
CPU-only code to the accelerator on purpose).
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import symtable
import sys
import tempfile
import types
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import torchport
from torchport.check import Finding, _engine, check_source, fix_paths, fix_source

_spec = importlib.util.spec_from_file_location(
    "fix_programs", Path(__file__).with_name("fix_programs.py")
)
assert _spec is not None and _spec.loader is not None
fix_programs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fix_programs)

LONG = int(os.environ.get("TORCHPORT_FUZZ_EXAMPLES", "0"))
# Where the long profile writes one JSON line of figures per program (see RESULTS.md).
STATS = os.environ.get("TORCHPORT_FUZZ_STATS", "")
# Every rule `fix` may run (noisy TP9xx included), not the TP5xx port rules: those move
# CPU-only code to the accelerator on purpose and belong to `torchport port`.
PORT = ["TP5"]


# ---------------------------------------------------------------- running a program


def _stand_in_accelerator(kind: str) -> dict[str, Any]:
    """``torch.accelerator`` functions of a machine whose accelerator is ``kind``."""
    return {
        "is_available": lambda: True,
        "current_accelerator": lambda check_available=False: torch.device(kind),
        "device_count": lambda: 1,
        "current_device_index": lambda: 0,
        "set_device_index": lambda index: None,
        "synchronize": lambda device=None: None,
        "empty_cache": lambda: None,
        "memory_allocated": lambda device=None: 0,
        "memory_reserved": lambda device=None: 0,
        "max_memory_allocated": lambda device=None: 0,
        "max_memory_reserved": lambda device=None: 0,
        "reset_peak_memory_stats": lambda device=None: None,
    }


@contextmanager
def patched(owner: Any, values: dict[str, Any]) -> Iterator[None]:
    saved = {name: getattr(owner, name, None) for name in values}
    for name, value in values.items():
        setattr(owner, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                delattr(owner, name)
            else:
                setattr(owner, name, value)


@contextmanager
def accelerator_reports(kind: str) -> Iterator[None]:
    """``torch.accelerator`` says ``kind`` is the accelerator and does nothing when asked to act.

    ``meta`` stands in for an accelerator that is not CUDA: autocast and
    ``GradScaler`` for ``meta`` act as they do for the CPU (torch has neither
    for ``meta``; a real MPS or XPU has both). Loaders do not pin: pinning asks
    the real runtime for the accelerator.
    """

    class Autocast(torch.amp.autocast):
        def __init__(self, device_type: str, *args: Any, **kwargs: Any) -> None:
            super().__init__("cpu" if device_type == "meta" else device_type, *args, **kwargs)

    class GradScaler(torch.amp.GradScaler):
        def __init__(self, device: str = "cuda", *args: Any, **kwargs: Any) -> None:
            super().__init__("cpu" if device == "meta" else device, *args, **kwargs)

    loader_init = torch.utils.data.DataLoader.__init__

    def unpinned(self: Any, *args: Any, **kwargs: Any) -> None:
        kwargs["pin_memory"] = False  # pinning asks the real runtime, which has no accelerator
        loader_init(self, *args, **kwargs)

    amp = {"autocast": Autocast, "GradScaler": GradScaler}
    with (
        patched(torch.accelerator, _stand_in_accelerator(kind)),
        patched(torch.amp, amp),
        patched(torch, {"autocast": Autocast}),
        patched(torch.utils.data.DataLoader, {"__init__": unpinned}),
    ):
        yield


MACHINES = ("cuda-cpu", "cuda-meta", "other", "cpu")


@contextmanager
def machine(name: str) -> Iterator[None]:
    """The stand-in machine ``name`` (see the module docstring)."""
    if name == "cuda-cpu":
        with torchport.redirect("cpu"), accelerator_reports("cuda"):
            yield
    elif name == "cuda-meta":
        with torchport.redirect("meta"), accelerator_reports("meta"):
            yield
    elif name == "sim":
        yield  # the simulated accelerator, installed in its own process: torch's own answers
    elif name == "cpu":
        no_cuda = {"is_available": lambda: False, "device_count": lambda: 0}
        with (
            patched(torch.accelerator, {"is_available": lambda: False}),
            patched(torch.accelerator, {"current_accelerator": lambda check_available=False: None}),
            patched(torch.cuda, no_cuda),
        ):
            yield
    else:
        with accelerator_reports("meta"):
            yield


@contextmanager
def modules(installed: dict[str, types.ModuleType]) -> Iterator[None]:
    saved = {name: sys.modules.get(name) for name in installed}
    sys.modules.update(installed)
    try:
        yield
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def run_program(
    source: str, *, on: str, project: dict[str, str] | None = None
) -> list[Any] | BaseException:
    """What the program appends to ``OUT`` on the stand-in machine, or the exception it raised;
    ``project``: the other modules of its project (name: source), each run on import."""
    out: list[Any] = []
    config = types.ModuleType("fuzzcfg")
    config.__dict__.update(fix_programs.STAR_MODULE)
    compat = types.ModuleType("fuzzcompat")  # `from ..compat import torch`
    compat.torch = torch  # type: ignore[attr-defined]
    installed = {"fuzzcfg": config, "fuzzcompat": compat, **fix_programs.lookalike_modules(out)}
    own = {name: types.ModuleType(name) for name in project or {}}
    installed.update(own)
    namespace = {"__name__": "__fuzz__", "OUT": out}
    torch.manual_seed(0)
    try:
        with warnings.catch_warnings(), modules(installed), machine(on):
            warnings.simplefilter("ignore")
            for name, module in own.items():  # (in order: a later one may import an earlier)
                module.__dict__["OUT"] = out
                exec(compile((project or {})[name], f"{name}.py", "exec"), module.__dict__)
            exec(compile(source, "<fuzz>", "exec"), namespace)
    except Exception as exc:  # the program's own failure: compared, not raised
        return exc
    return out


_NO_DATA = re.compile(r"meta tensors?|out of meta|on meta device|'meta' device|meta backend")
_MISMATCH = re.compile(r"same device|expected device|device meta|devices")


def stand_in_limit(outcome: object) -> bool:
    """Whether ``outcome`` is a failure of the stand-in, not of the program.

    ``meta`` stands in for another accelerator but holds no data: reading a
    value (``.item()``, ``.numpy()``, printing) fails there and would not on
    MPS or XPU. A device mismatch is a real failure and never counts.
    """
    if not isinstance(outcome, (RuntimeError, NotImplementedError)):
        return False
    text = str(outcome)
    return bool(_NO_DATA.search(text)) and not _MISMATCH.search(text)


def same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return (
            isinstance(a, torch.Tensor)
            and isinstance(b, torch.Tensor)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and a.device.type == b.device.type
            and (a.device.type == "meta" or torch.equal(a, b))
        )
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, torch.device) or isinstance(b, torch.device):
        return str(a) == str(b)
    return bool(a == b)


# ---------------------------------------------------------------- names


def global_reads(source: str) -> set[str]:
    """Names read as globals in any scope, and the names the module binds."""
    reads: set[str] = set()

    def visit(table: symtable.SymbolTable) -> None:
        for sym in table.get_symbols():
            if sym.is_referenced() and (sym.is_global() or table.get_type() == "module"):
                reads.add(sym.get_name())
        for child in table.get_children():
            visit(child)

    visit(symtable.symtable(source, "<fuzz>", "exec"))
    return reads


def module_bindings(source: str) -> set[str]:
    table = symtable.symtable(source, "<fuzz>", "exec")
    return {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported()}


# ---------------------------------------------------------------- the property


def fix_in_project(source: str, project: dict[str, str], *, unsafe: bool) -> str:
    """``source`` fixed as ``main.py`` of a project holding the modules ``project`` (each read
    through the project view, as ``torchport fix`` reads a repository), nothing written."""
    with tempfile.TemporaryDirectory(prefix="fuzzproj") as folder:
        for name, text in project.items():
            Path(folder, f"{name}.py").write_text(text, encoding="utf-8")
        main = Path(folder, "main.py")
        main.write_text(source, encoding="utf-8")
        result = fix_paths(
            [main], stdin=source, unsafe=unsafe, select=["ALL"], ignore=PORT, speed=True, jobs=1
        )
    assert not result.errors, result.errors
    texts = [f.text for f in result.changed if f.text is not None]
    return texts[0] if texts else source


def fix_with_disclosures(
    source: str, *, unsafe: bool, project: dict[str, str] | None = None
) -> tuple[str, bool]:
    """The fixed source, and whether a fix offered in any round says it changes results;
    ``project``: fixed as a file of a project with those other modules."""
    offered: list[Finding] = []
    walk = _engine._walk

    def spy(*args: Any, **kwargs: Any) -> Any:
        outcome = walk(*args, **kwargs)  # every round's findings, as the rules made them
        offered.extend(outcome.findings)
        return outcome

    with mock.patch.object(_engine, "_walk", spy):
        if project:
            fixed = fix_in_project(source, project, unsafe=unsafe)
        else:
            fixed = fix_source(source, select=["ALL"], ignore=PORT, unsafe=unsafe)
    declared = any(
        f.fix is not None and f.fix.changes and (unsafe or f.fix.safety.value == "safe")
        for f in offered
    )
    return fixed, declared


def _tally(**counts: Any) -> None:
    """Append one program's figures to ``TORCHPORT_FUZZ_STATS`` (a JSON-lines file), if set."""
    if STATS:
        with open(STATS, "a", encoding="utf-8") as out:
            out.write(json.dumps(counts) + "\n")


def check_program(source: str, project: dict[str, str] | None = None) -> None:
    ast.parse(source)
    findings = check_source(source, select=["ALL"], ignore=PORT)
    originals = {on: run_program(source, on=on, project=project) for on in MACHINES}
    old_reads, old_bound = global_reads(source), module_bindings(source)
    counts: dict[str, Any] = {
        "findings": len(findings),
        "ran": sorted(on for on, got in originals.items() if not isinstance(got, BaseException)),
    }
    for unsafe in (False, True):
        fixed, declared = fix_with_disclosures(source, unsafe=unsafe, project=project)
        mode = "unsafe" if unsafe else "safe"
        counts[f"{mode}_fixed"] = fixed != source
        counts[f"{mode}_declared"] = declared
        ast.parse(fixed)
        again = (
            fix_in_project(fixed, project, unsafe=unsafe)
            if project
            else fix_source(fixed, select=["ALL"], ignore=PORT, unsafe=unsafe)
        )
        assert again == fixed, "not a fixed point"
        new = global_reads(fixed) - old_reads - module_bindings(fixed) - set(dir(__builtins__))
        assert not new, f"fix reads unbound globals {new}:\n{fixed}"
        lost = (old_bound & global_reads(fixed)) - module_bindings(fixed)
        assert not lost, f"fix unbinds {lost}:\n{fixed}"
        if fixed == source:
            continue
        for on, before in originals.items():
            if isinstance(before, BaseException):
                continue  # the original does not run here: nothing to keep
            after = run_program(fixed, on=on, project=project)
            if on != "cuda-cpu" and stand_in_limit(after):
                counts[f"{mode}_not_comparable"] = counts.get(f"{mode}_not_comparable", 0) + 1
                continue  # the fix put data on `meta`, which has none to read: not comparable
            counts[f"{mode}_compared"] = counts.get(f"{mode}_compared", 0) + 1
            if isinstance(after, BaseException):
                raise AssertionError(
                    f"broken fix: the original ran, the fixed program (unsafe={unsafe}) raised "
                    f"{after!r} on {on}\n--- original\n{source}\n--- fixed\n{fixed}"
                )
            if not same(before, after) and not declared:
                raise AssertionError(
                    f"changed output (unsafe={unsafe}, on {on}) and no fix said so: "
                    f"{before!r} != {after!r}\n--- original\n{source}\n--- fixed\n{fixed}"
                )
            if not same(before, after):
                counts[f"{mode}_changed_declared"] = True
    _tally(**counts)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fix_programs.programs())
def test_fix_keeps_programs_running_and_their_results(source: str) -> None:
    check_program(source)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fix_programs.device_programs())
def test_a_fix_that_moves_the_device_moves_what_uses_it(source: str) -> None:
    """The CUDA-or-CPU choice rewritten: on another accelerator, what ran still runs."""
    check_program(source)


@pytest.mark.parametrize("inside", [False, True], ids=["module", "function"])
@pytest.mark.parametrize("fragment", range(len(fix_programs.PROJECT_FRAGMENTS)))
def test_another_modules_objects_keep_their_meaning(fragment: int, inside: bool) -> None:
    """Each fragment of another module's objects alone, at module level or in a function
    (where the project view reads no import), fixed as a file of the project."""
    body = fix_programs._T.sub("torch.", fix_programs.PROJECT_FRAGMENTS[fragment])
    body = body.replace("{k}", "0") + "\n"
    if inside:
        body = f"def main():\n{fix_programs._indent(body)}main()\n"
    check_program(f"import torch\n{body}", {"fuzzproj": fix_programs.PROJECT_MODULE})


@pytest.mark.parametrize("inside", [False, True], ids=["module", "function"])
@pytest.mark.parametrize("fragment", range(len(fix_programs.DYNAMIC_FRAGMENTS)))
def test_methods_given_at_run_time_in_another_module(fragment: int, inside: bool) -> None:
    """Issue 34 (c34ag): another module of the project gives its classes a `.cuda()` after
    their definition (`type(...)`, `Net.cuda = f`, `setattr(Plain, "cuda", f)`): their
    instances here, made here or returned there, are never rewritten."""
    body = fix_programs._T.sub("torch.", fix_programs.DYNAMIC_FRAGMENTS[fragment])
    body = body.replace("{k}", "0") + "\n"
    if inside:
        body = f"def main():\n{fix_programs._indent(body)}main()\n"
    check_program(f"import torch\n{body}", {"fuzzdyn": fix_programs.DYNAMIC_MODULE})


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fix_programs.project_programs())
def test_fix_keeps_a_projects_programs_running(case: tuple[str, dict[str, str]]) -> None:
    """Objects of another module of the project (its classes with their own `.cuda()`, what
    its functions return, a class here subclassing one there), fixed as a project's file."""
    check_program(*case)


@pytest.mark.slow
@pytest.mark.skipif(not LONG, reason="set TORCHPORT_FUZZ_EXAMPLES=N to run the long profile")
@settings(max_examples=max(LONG, 1), deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.one_of(
        fix_programs.programs().map(lambda s: (s, {})),
        fix_programs.device_programs().map(lambda s: (s, {})),
        fix_programs.project_programs(),
    )
)
def test_fix_fuzz_long(case: tuple[str, dict[str, str]]) -> None:
    check_program(*case)


@pytest.mark.parametrize("fragment", range(len(fix_programs.NOT_TORCH)))
def test_calls_that_are_not_torchs_keep_their_meaning(fragment: int) -> None:
    """Each look-alike call, negative test and device-as-data fragment, fixed and run alone."""
    body = fix_programs._T.sub("torch.", fix_programs.NOT_TORCH[fragment].replace("{k}", "0"))
    check_program(f"import torch\n{body}\n")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(fix_programs.NOT_TORCH), min_size=1, max_size=3), st.data())
def test_not_torchs_calls_mixed_with_torchs(chosen: list[str], data: st.DataObject) -> None:
    """Look-alikes beside a real `.cuda()` that the fix must still rewrite."""
    body = "\n".join(f.replace("{k}", str(k)) for k, f in enumerate(chosen))
    body = fix_programs._T.sub("torch.", body)
    torchs = data.draw(st.sampled_from(["x = torch.ones(1).cuda()\nOUT.append(x)\n", ""]))
    check_program(f"import torch\n{torchs}{body}\n")


def test_generator_reaches_the_fixes() -> None:
    """The fragments are not dead: together they draw fixes from the main fixing rules."""
    codes = set()
    for fragment in fix_programs.FRAGMENTS:
        body = fix_programs._T.sub("torch.", fragment.replace("{k}", "0"))
        source = f"import torch\n{body}\n"
        codes |= {
            f.code for f in check_source(source, select=["ALL"], ignore=PORT) if f.fix is not None
        }
    assert {"TP101", "TP106", "TP107", "TP402"} <= codes
