"""Differential fuzzing of ``fix``: generated programs, fixed safe and unsafe, run side by side.

For every program from :func:`fix_programs.programs`:

* ``check_source`` and ``fix_source`` (safe and ``unsafe=True``) raise nothing;
* each fixed program parses and is a fixed point of ``fix``;
* it reads no global name the original did not read unless the module binds it
  (``symtable``): a fix never introduces a name that is unbound where used;
* run with a stand-in accelerator, wherever the original ran, the fixed
  program runs too and records the same values on the same devices, unless a
  fix that was offered says in ``Fix.changes`` that it changes results. Two
  stand-ins, both CPU-only: CUDA calls redirected to the CPU
  (``torchport.redirect("cpu")``, where ``torch.accelerator`` reports no
  accelerator), which compares values; and CUDA calls redirected to ``meta``
  with ``torch.accelerator`` patched to report ``meta`` as the accelerator,
  which compares where every tensor lives (shapes, dtypes and devices), so a
  fix that sends data elsewhere (a ``device = "cpu"`` reused for ``.cuda()``)
  is caught.

The default run draws a few dozen programs (seconds). The long profile runs on
demand: ``TORCHPORT_FUZZ_EXAMPLES=3000 pytest tests/check/test_fix_fuzz.py -m slow``.
Rules: every rule ``fix`` can run (``ALL`` but the TP5xx port rules, which move
CPU-only code to the accelerator on purpose).
"""

from __future__ import annotations

import ast
import importlib.util
import os
import symtable
import sys
import types
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings

import torchport
from torchport.check import check_source, fix_source

_spec = importlib.util.spec_from_file_location(
    "fix_programs", Path(__file__).with_name("fix_programs.py")
)
assert _spec is not None and _spec.loader is not None
fix_programs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fix_programs)

LONG = int(os.environ.get("TORCHPORT_FUZZ_EXAMPLES", "0"))
# Every rule `fix` may run (noisy TP9xx included), not the TP5xx port rules: those move
# CPU-only code to the accelerator on purpose and belong to `torchport port`.
PORT = ["TP5"]


# ---------------------------------------------------------------- running a program


_CPU_ACCELERATOR: dict[str, Any] = {
    "is_available": lambda: True,
    "current_accelerator": lambda check_available=False: torch.device("meta"),
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
def accelerator_reports_meta() -> Iterator[None]:
    """``torch.accelerator`` says ``meta`` is the accelerator and does nothing when asked to act.

    Loaders do not pin: pinning asks the real runtime for the accelerator.
    """
    acc = torch.accelerator
    saved = {name: getattr(acc, name, None) for name in _CPU_ACCELERATOR}
    for name, value in _CPU_ACCELERATOR.items():
        setattr(acc, name, value)
    loader_init = torch.utils.data.DataLoader.__init__

    def unpinned(self: Any, *args: Any, **kwargs: Any) -> None:
        kwargs["pin_memory"] = False  # pinning asks the real runtime, which has no accelerator
        loader_init(self, *args, **kwargs)

    torch.utils.data.DataLoader.__init__ = unpinned  # type: ignore[method-assign]
    try:
        yield
    finally:
        torch.utils.data.DataLoader.__init__ = loader_init  # type: ignore[method-assign]
        for name, value in saved.items():
            if value is None:
                delattr(acc, name)
            else:
                setattr(acc, name, value)


def run_program(source: str, *, meta: bool) -> list[Any] | BaseException:
    """What the program appends to ``OUT`` under the stand-in, or the exception it raised."""
    module = types.ModuleType("fuzzcfg")
    module.__dict__.update(fix_programs.STAR_MODULE)
    sys.modules["fuzzcfg"] = module
    out: list[Any] = []
    namespace = {"__name__": "__fuzz__", "OUT": out}
    torch.manual_seed(0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if meta:
                with torchport.redirect("meta"), accelerator_reports_meta():
                    exec(compile(source, "<fuzz>", "exec"), namespace)
            else:
                with torchport.redirect("cpu"):
                    exec(compile(source, "<fuzz>", "exec"), namespace)
    except Exception as exc:  # the program's own failure: compared, not raised
        return exc
    finally:
        sys.modules.pop("fuzzcfg", None)
    return out


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


def declared_changes(source: str, *, unsafe: bool) -> bool:
    """Whether a fix that may apply here says it changes results."""
    return any(
        f.fix is not None and f.fix.changes and (unsafe or f.fix.safety.value == "safe")
        for f in check_source(source, select=["ALL"], ignore=PORT)
    )


def check_program(source: str) -> None:
    ast.parse(source)
    check_source(source, select=["ALL"], ignore=PORT)
    originals = {meta: run_program(source, meta=meta) for meta in (False, True)}
    old_reads, old_bound = global_reads(source), module_bindings(source)
    for unsafe in (False, True):
        fixed = fix_source(source, select=["ALL"], ignore=PORT, unsafe=unsafe)
        ast.parse(fixed)
        assert fix_source(fixed, select=["ALL"], ignore=PORT, unsafe=unsafe) == fixed, (
            "not a fixed point"
        )
        new = global_reads(fixed) - old_reads - module_bindings(fixed) - set(dir(__builtins__))
        assert not new, f"fix reads unbound globals {new}:\n{fixed}"
        lost = (old_bound & global_reads(fixed)) - module_bindings(fixed)
        assert not lost, f"fix unbinds {lost}:\n{fixed}"
        if fixed == source:
            continue
        for meta, before in originals.items():
            if isinstance(before, BaseException):
                continue  # the original does not run here: nothing to keep
            after = run_program(fixed, meta=meta)
            if isinstance(after, BaseException):
                raise AssertionError(
                    f"original ran, fixed (unsafe={unsafe}, meta={meta}) raised "
                    f"{after!r}\n--- original\n{source}\n--- fixed\n{fixed}"
                )
            if not same(before, after) and not declared_changes(source, unsafe=unsafe):
                raise AssertionError(
                    f"results differ (unsafe={unsafe}, meta={meta}) and no fix "
                    f"said so: {before!r} != {after!r}\n--- original\n{source}\n--- fixed\n{fixed}"
                )


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fix_programs.programs())
def test_fix_keeps_programs_running_and_their_results(source: str) -> None:
    check_program(source)


@pytest.mark.slow
@pytest.mark.skipif(not LONG, reason="set TORCHPORT_FUZZ_EXAMPLES=N to run the long profile")
@settings(max_examples=max(LONG, 1), deadline=None, suppress_health_check=list(HealthCheck))
@given(fix_programs.programs())
def test_fix_fuzz_long(source: str) -> None:
    check_program(source)


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
