"""Suite ``overhead`` (diagnose half): what ``strict()`` and ``audit()`` cost a training step.

Two CPU training steps (forward, loss, backward, SGD update): a tiny MLP, where
per-op interception dominates, and an MLP sized to about 5 ms per step, a
typical small real model. Each is timed bare, under ``torchport.strict()``,
under ``torchport.audit()`` and under sampled audit (``audit(every=N)`` with
each step marked by ``report.step()``, N the steps per sample, so one step in N
is recorded), and inside an empty ``TorchDispatchMode``: the floor under
audit(), PyTorch's own price for any Python dispatch mode. Every sample runs N
steps inside one context, as a training loop would. Targets: strict ≤ 1.05x on the tiny step,
audit ≤ 1.15x on the 5 ms step.

Beside the steps, :func:`event_cost_rows` times single events the audit records
(``.item()``, ``.tolist()``, boolean-mask indexing, a CPU ``x.to(device)`` it lists
as a copy an accelerator would make, ``x.cpu().numpy()`` (one copy: the read is the
copy's own), ``float(t)`` of a tensor that requires grad (torch's warning is caught
and re-issued at the caller), a ``DeviceLoader`` handing over a batch of two
tensors) and one it does not (``y + 1``), each bare,
inside an empty dispatch mode and inside ``audit()``: the cost of one recorded event
is its time under audit() less its bare time. Target: under 20 µs per recorded event.
The events are compiled as a user's lines (outside torchport's package), so the
audit blames them at once, as it would in a program.
"""

from __future__ import annotations

import contextlib
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, cast

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

from torchport._device_types import CPU
from torchport.bench._model import Check, Row, SuiteResult
from torchport.bench._timing import time_interleaved, time_once, torch_threads

VARIANTS = ("strict()", "audit()", "audit(every=N)", "empty dispatch mode")
STRICT_TARGET = 1.05
AUDIT_TARGET = 1.15
EVENT_TARGET_US = 20.0


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
    cpu = torch.device(CPU)
    width = 256
    step = _make_step(width, 64)
    for width in (256, 384, 512, 576, 640, 704, 768, 1024, 1536, 2048):
        step = _make_step(width, 64)
        for i in range(2):
            step(i)
        timings = sorted(
            time_once(partial(step, 0), cpu, clock=time.process_time) for _ in range(5)
        )
        if timings[2] >= target_s:  # the median: one lucky or unlucky sample must not decide
            break
    return step, width


Step = Callable[[int], None]


def _bare(step: Step, steps: int) -> Step:
    def run(i: int) -> None:
        for k in range(steps):
            step(i + k)

    return run


def _inside(
    context: Callable[[], contextlib.AbstractContextManager[Any]],
) -> Callable[[Step, int], Step]:
    def variant(step: Step, steps: int) -> Step:
        def run(i: int) -> None:
            with context():
                for k in range(steps):
                    step(i + k)

        return run

    return variant


def _audit_sampled(step: Step, steps: int) -> Step:
    """``audit(every=steps)``: one step of each sample recorded, every step marked."""
    from torchport.diagnose import audit

    def run(i: int) -> None:
        with audit(every=steps) as report:
            for k in range(steps):
                with report.step():
                    step(i + k)

    return run


class _EmptyDispatchMode(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """The floor under audit(): PyTorch's own price for any Python dispatch mode."""

    def __torch_dispatch__(
        self,
        func: Any,
        types: Any,
        args: Sequence[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
    ) -> Any:
        return func(*args, **(kwargs or {}))


def _variants() -> dict[str, Callable[[Step, int], Step]]:
    from torchport.diagnose import audit, strict

    return {
        "baseline": _bare,
        "strict()": _inside(strict),
        "audit()": _inside(audit),
        "audit(every=N)": _audit_sampled,
        "empty dispatch mode": _inside(_EmptyDispatchMode),
    }


def diagnose_rows(
    *,
    quick: bool,
    on_case: Callable[[str], None] | None = None,
    variants: Sequence[str] = VARIANTS,
) -> tuple[list[Row], list[Check], list[str]]:
    """Measure both steps bare and under each context; rows carry per-step times and ratios.

    Runs on CPU only, with one intra-op thread (restored after): on a loaded
    machine, threads spinning for busy cores swing step times by several times,
    which would drown an overhead of a few percent.

    Args:
        quick: Fewer steps and repeats.
        on_case: Told each case as it starts.
        variants: Which of ``VARIANTS`` to run besides the baseline.

    Raises:
        ValueError: An unknown variant.
    """
    unknown = set(variants) - set(VARIANTS)
    if unknown:
        raise ValueError(f"unknown variants {sorted(unknown)}; expected some of {VARIANTS}")
    with torch_threads(1):
        rows, checks, notes = _diagnose_rows(quick=quick, on_case=on_case, variants=variants)
    return rows, checks, notes


def _diagnose_rows(
    *, quick: bool, on_case: Callable[[str], None] | None, variants: Sequence[str]
) -> tuple[list[Row], list[Check], list[str]]:
    """Measure both steps under each context; rows carry per-step times and ratios.

    Runs on CPU only.
    """
    cpu = torch.device(CPU)
    chosen = {k: v for k, v in _variants().items() if k == "baseline" or k in variants}
    tiny = _make_step(16, 8)
    medium, width = _calibrated_step(5e-3)
    cases: list[tuple[str, Callable[[int], None], int]] = [
        ("tiny MLP step (16-wide, batch 8)", tiny, 20),
        (f"~5 ms MLP step ({width}-wide, batch 64)", medium, 5 if quick else 10),
    ]
    rows: list[Row] = []
    checks: list[Check] = []
    for case, step, steps in cases:
        if on_case is not None:
            on_case(f"strict/audit, {case}")
        runs = {label: variant(step, steps) for label, variant in chosen.items()}
        stats = time_interleaved(
            runs, cpu, warmup=2, repeats=7 if quick else 21, clock=time.process_time
        )
        base = stats["baseline"].median
        for label, got in stats.items():
            per_step = got.scaled(1.0 / steps)
            shown = label.replace("every=N", f"every={steps}")
            rows.append(Row(case, shown, per_step, {"vs_baseline": got.median / base}))
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
        "strict/audit: each sample runs N steps inside one context; "
        "times are process CPU time per step; 1 torch thread"
    ]
    return rows, checks, notes


# The events run as lines of a program would: compiled under a file name outside
# torchport. Code in torchport's own package is the audit's machinery to it, so an
# event written here would send each recording up the benchmark's whole stack to
# find the line to blame, a walk no user program makes.
_USER_FILE = "<the user's program (torchport.bench events)>"


def _user_line(expression: str, names: dict[str, object]) -> Callable[[], object]:
    code = compile(f"lambda: {expression}", _USER_FILE, "eval")
    return cast(Callable[[], object], eval(code, {**names}))


def _events() -> dict[str, tuple[Callable[[], object], bool]]:
    """Name -> (one event, whether audit() records it)."""
    from torchport.feed import DeviceLoader

    values = torch.arange(10.0)
    names: dict[str, object] = {
        "scalar": torch.ones(()),
        "values": values,
        "mask": values > 4,
        "device": torch.device(CPU),
        "weight": torch.ones((), requires_grad=True) * 2,
        "feed": DeviceLoader([(values, values)], CPU),
    }
    # looked up at each call, as a program does (a bound method taken before the
    # audit began would bypass its Python-level watch)
    events = [
        ("x.item()", "scalar.item()", True),
        ("x.tolist() (10 floats)", "values.tolist()", True),
        ("boolean-mask indexing (data-dependent shape)", "values[mask]", True),
        ("x.to(device), a CPU no-op listed as a copy", "values.to(device)", True),
        ("x.cpu().numpy(), one copy", "values.cpu().numpy()", True),
        ("float(t), t requires grad", "float(weight)", True),
        ("DeviceLoader batch of 2 tensors", "[b for b in feed]", True),
        ("y + 1 (not recorded)", "values + 1", False),
    ]
    return {name: (_user_line(line, names), recorded) for name, line, recorded in events}


def event_cost_rows(*, quick: bool) -> tuple[list[Row], list[Check]]:
    """Time single events bare, in an empty dispatch mode and under audit(); CPU only.

    Each sample runs a few hundred events inside one context (entered once per
    sample), so the context's own cost is spread thin; rows carry µs per event and
    µs over bare, and each recorded event is checked against ``EVENT_TARGET_US``.
    """
    from torchport.diagnose import audit

    cpu = torch.device(CPU)
    calls = 200 if quick else 500
    contexts: dict[str, Callable[[], contextlib.AbstractContextManager[Any]]] = {
        "baseline": contextlib.nullcontext,
        "empty dispatch mode": _EmptyDispatchMode,
        "audit()": audit,
    }
    rows: list[Row] = []
    checks: list[Check] = []
    for case, (event, recorded) in _events().items():

        def run(
            i: int,
            context: Callable[[], contextlib.AbstractContextManager[Any]],
            event: Callable[[], object] = event,
        ) -> None:
            with context():
                for _ in range(calls):
                    event()

        runs = {name: partial(run, context=context) for name, context in contexts.items()}
        with warnings.catch_warnings():
            # float(t) of a tensor that requires grad warns (once); its cost is timed, its
            # text would only be noise in the suite's output
            warnings.simplefilter("ignore", UserWarning)
            stats = time_interleaved(
                runs, cpu, warmup=2, repeats=7 if quick else 15, clock=time.process_time
            )
        base = stats["baseline"].median / calls
        for name, got in stats.items():
            per_event = got.scaled(1.0 / calls)
            over = (per_event.median - base) * 1e6
            rows.append(Row(f"event: {case}", name, per_event, {"us_over_bare": over}))
            if name == "audit()" and recorded:
                # an absolute time: the renderer reads the unit from "µs" in the name
                checks.append(
                    Check(f"audit() µs over bare per event, {case}", over, EVENT_TARGET_US)
                )
    return rows, checks


def diagnose_overhead(
    *,
    quick: bool = False,
    on_case: Callable[[str], None] | None = None,
    variants: Sequence[str] = VARIANTS,
) -> SuiteResult:
    """The strict()/audit() measurements alone, as a suite result (used by ``benchmarks/``).

    See :func:`diagnose_rows` for the arguments. Runs on CPU only.
    """
    rows, checks, notes = diagnose_rows(quick=quick, on_case=on_case, variants=variants)
    return SuiteResult("diagnose", tuple(rows), tuple(checks), tuple(notes))


def event_costs(*, quick: bool = False) -> SuiteResult:
    """:func:`event_cost_rows` as a suite result (used by ``benchmarks/``); CPU only."""
    with torch_threads(1):
        rows, checks = event_cost_rows(quick=quick)
    notes = (
        "events: µs per event, process CPU time; each sample runs a few hundred events "
        "inside one context; 1 torch thread",
    )
    return SuiteResult("diagnose events", tuple(rows), tuple(checks), notes)
