"""Suite ``overhead`` (diagnose half): what ``strict()`` and ``audit()`` cost a training step.

Two CPU training steps (forward, loss, backward, SGD update): a tiny MLP, where
per-op interception dominates, and an MLP sized to about 5 ms per step, a
typical small real model. Each is timed bare, under ``torchport.strict()``,
under ``torchport.audit()`` and, when this build's ``audit`` takes a sampling
argument, under sampled audit. Every sample runs several steps inside one
context, as a training loop would. Targets: strict ≤ 1.05x on the tiny step,
audit ≤ 1.15x on the 5 ms step.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable
from functools import partial
from typing import Any

import torch
from torch import nn

from torchport.bench._model import Check, Row, SuiteResult
from torchport.bench._timing import time_interleaved, time_once

STRICT_TARGET = 1.05
AUDIT_TARGET = 1.15
SAMPLED_RATE = 0.1
# parameter names a sampling audit may use, in order of preference
_SAMPLING_PARAMS = ("sample", "sample_rate", "sampling", "rate")

ContextFactory = Callable[[], contextlib.AbstractContextManager[Any]]


def _make_step(width: int, batch: int) -> Callable[[int], None]:
    """A training step on one of two alternating input batches (fresh data each call)."""
    generator = torch.Generator().manual_seed(0)
    model = nn.Sequential(
        nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 8)
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    inputs = [torch.randn(batch, width, generator=generator) for _ in range(2)]
    targets = [torch.randn(batch, 8, generator=generator) for _ in range(2)]

    def step(i: int) -> None:
        optimizer.zero_grad(set_to_none=True)
        loss = nn.functional.mse_loss(model(inputs[i % 2]), targets[i % 2])
        loss.backward()  # type: ignore[no-untyped-call]
        optimizer.step()

    return step


def _calibrated_step(target_s: float) -> tuple[Callable[[int], None], int]:
    """The smallest listed width whose step takes at least ``target_s`` here, and that width."""
    cpu = torch.device("cpu")
    width = 256
    step = _make_step(width, 64)
    for width in (256, 384, 512, 768, 1024, 1536, 2048):
        step = _make_step(width, 64)
        for i in range(2):
            step(i)
        if min(time_once(partial(step, 0), cpu) for _ in range(3)) >= target_s:
            break
    return step, width


def _contexts() -> tuple[dict[str, ContextFactory], dict[str, str]]:
    """Label -> context factory for each variant this build offers, and label -> why missing."""
    available: dict[str, ContextFactory] = {"baseline": contextlib.nullcontext}
    missing: dict[str, str] = {}
    try:
        from torchport.diagnose import strict

        available["strict()"] = strict
    except ImportError:
        missing["strict()"] = "unavailable: this build has no torchport.strict"
    try:
        from torchport.diagnose import audit
    except ImportError:
        missing["audit()"] = "unavailable: this build has no torchport.audit"
        return available, missing
    available["audit()"] = audit
    params = inspect.signature(audit).parameters
    name = next((p for p in _SAMPLING_PARAMS if p in params), None)
    sampled = f"audit({name}={SAMPLED_RATE})" if name else "audit(sampled)"
    if name is None:
        missing[sampled] = "unavailable: this build's audit() takes no sampling argument"
    else:
        kwargs = {name: SAMPLED_RATE}
        available[sampled] = lambda: audit(**kwargs)
    return available, missing


def _run_steps(
    step: Callable[[int], None], context: ContextFactory, steps: int
) -> Callable[[int], None]:
    def run(i: int) -> None:
        with context():
            for k in range(steps):
                step(i + k)

    return run


def diagnose_rows(
    *, quick: bool, on_case: Callable[[str], None] | None = None
) -> tuple[list[Row], list[Check], list[str]]:
    """Measure both steps under each context; rows carry per-step times and ratios.

    Runs on CPU only.
    """
    cpu = torch.device("cpu")
    contexts, missing = _contexts()
    tiny = _make_step(16, 8)
    medium, width = _calibrated_step(4e-3)
    cases: list[tuple[str, Callable[[int], None], int]] = [
        ("tiny MLP step (16-wide, batch 8)", tiny, 20),
        (f"~5 ms MLP step ({width}-wide, batch 64)", medium, 2 if quick else 4),
    ]
    rows: list[Row] = []
    checks: list[Check] = []
    for case, step, steps in cases:
        if on_case is not None:
            on_case(f"strict/audit, {case}")
        runs = {label: _run_steps(step, factory, steps) for label, factory in contexts.items()}
        stats = time_interleaved(runs, cpu, warmup=2, repeats=7 if quick else 21)
        base = stats["baseline"].median
        for label, got in stats.items():
            per_step = got.scaled(1.0 / steps)
            rows.append(Row(case, label, per_step, {"vs_baseline": got.median / base}))
        rows.extend(Row(case, label, status=reason) for label, reason in missing.items())
        if case.startswith("tiny") and "strict()" in stats:
            checks.append(
                Check(
                    f"strict() / baseline, {case}", stats["strict()"].median / base, STRICT_TARGET
                )
            )
        if not case.startswith("tiny") and "audit()" in stats:
            checks.append(
                Check(f"audit() / baseline, {case}", stats["audit()"].median / base, AUDIT_TARGET)
            )
    notes = [
        "each sample runs several steps inside one context; times are per step; "
        f"{torch.get_num_threads()} torch threads"
    ]
    return rows, checks, notes


def diagnose_overhead(
    *, quick: bool = False, on_case: Callable[[str], None] | None = None
) -> SuiteResult:
    """The strict()/audit() measurements alone, as a suite result (used by ``benchmarks/``)."""
    rows, checks, notes = diagnose_rows(quick=quick, on_case=on_case)
    return SuiteResult("diagnose", tuple(rows), tuple(checks), tuple(notes))
