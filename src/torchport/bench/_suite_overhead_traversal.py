"""Suite ``overhead`` (traversal half): what walking a batch costs, large and small.

Strategies, all on CPU with the same per-leaf op: ``torchport.to_device``,
accelerate ``send_to_device``, lightning-utilities ``apply_to_collection``,
``torch.utils._pytree.tree_map`` and a bare ``optree.tree_map`` (the floor for
an optree-based walker). Two per-leaf ops: a no-op move (``t.to('cpu')`` returns
``t``, so the walk is all there is) and one that does work (``t.to('meta')``
allocates a new tensor), reported separately.

Two batch sizes (the targets the traversal must meet):

* a 1000-leaf nested batch: to_device ≤ 0.5x accelerate (no-op) and ≤ 0.8x
  (meta), ≤ 1.2x bare optree;
* the small batches most loops move: one tensor, a ``(x, y, mask)`` tuple and a
  dict of 10 tensors: to_device ≤ 1.0x accelerate, both ops. Each sample times
  200 calls (one call is a few microseconds);
* a HuggingFace ``BatchEncoding`` (a ``UserDict`` of ``input_ids``,
  ``attention_mask`` and ``token_type_ids``; transformers' own class when it is
  installed, else a stand-in of it, and the label says which): to_device ≤ 1.0x
  accelerate, no-op included, while leaving the input as it was.
  ``BatchEncoding.to``, which accelerate calls, moves the batch *in place*; so
  that its later calls do real work, accelerate's strategy puts the input's
  ``data`` back after each call (one attribute write, charged to it), and the
  table says which strategies changed their input.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable
from typing import Any

import torch

from torchport._device_types import CPU, META
from torchport.bench._competitors import (
    Strategy,
    accelerate_send,
    lightning_apply,
    optional_import,
    optree_map,
    pytree_map,
    torchport_to_device,
    version_of,
)
from torchport.bench._model import Check, Row, SuiteResult
from torchport.bench._random_inputs import many_leaf_batch, misplaced
from torchport.bench._timing import Stats, rotating, time_interleaved

LEAVES = 1000

# case label -> target device of the per-leaf `t.to(target)`
OPS: dict[str, str] = {"no-op move t.to('cpu')": CPU, "work t.to('meta')": META}

NOTE = (
    f"traversal: {LEAVES}-leaf nested batch of 16-byte CPU tensors, and small batches "
    "(a tensor, an (x, y, mask) tuple, a dict of 10); process CPU time"
)
# to_device / accelerate, per op, for the 1000-leaf batch
TO_DEVICE_VS_ACCELERATE = {CPU: 0.5, META: 0.8}
TO_DEVICE_VS_OPTREE = 1.2
SMALL_VS_ACCELERATE = 1.0
SMALL_INNER = 200


def _small_batches() -> dict[str, list[object]]:
    """Two fresh instances of each small batch (the timing rotates between them)."""

    def one() -> object:
        return torch.randn(32, 8)

    def three() -> object:
        return (torch.randn(32, 8), torch.randint(0, 10, (32,)), torch.ones(32, dtype=torch.bool))

    def ten() -> object:
        return {f"f{i}": torch.randn(32) for i in range(10)}

    return {
        "1 tensor": [one(), one()],
        "3 tensors (x, y, mask)": [three(), three()],
        "10 tensors in a dict": [ten(), ten()],
    }


def _strategies(target: str) -> list[Strategy]:
    def op(t: torch.Tensor) -> torch.Tensor:
        return t.to(target)

    return [
        torchport_to_device(target),
        accelerate_send(target),
        lightning_apply(op),
        pytree_map(op),
        optree_map(op),
    ]


def traversal_rows(
    *, quick: bool, on_case: Callable[[str], None] | None = None
) -> tuple[list[Row], list[Check]]:
    """Measure every strategy on both per-leaf ops; rows carry µs/leaf and ratios.

    Runs on CPU only (the meta device never synchronizes).
    """
    batches = [many_leaf_batch(LEAVES) for _ in range(2)]
    repeats = 9 if quick else 101
    rows: list[Row] = []
    checks: list[Check] = []
    for case, target in OPS.items():
        if on_case is not None:
            on_case(f"traversal, {case}")
        strategies = _strategies(target)
        runnable = {s.label: rotating(s.run, batches) for s in strategies if s.run is not None}
        stats = time_interleaved(
            runnable, torch.device(CPU), warmup=3, repeats=repeats, clock=time.process_time
        )
        # a strategy whose output is wrong gets no time, and no ratio is taken against it
        wrong = {
            s.label: why
            for s in strategies
            if s.run is not None and (why := misplaced(s.run(batches[0]), target, LEAVES))
        }
        verified = {label: got for label, got in stats.items() if label not in wrong}
        accelerate = verified.get(strategies[1].label)
        optree = verified.get(strategies[4].label)
        for strategy in strategies:
            got = verified.get(strategy.label)
            if got is None:
                status = wrong.get(strategy.label) or strategy.missing or "unavailable"
                rows.append(Row(case, strategy.label, status=status))
                continue
            metrics = {"us_per_leaf": got.median / LEAVES * 1e6}
            if accelerate is not None:
                metrics["vs_accelerate"] = got.median / accelerate.median
            if optree is not None:
                metrics["vs_optree"] = got.median / optree.median
            rows.append(Row(case, strategy.label, got, metrics))
        mine = verified.get(strategies[0].label)
        if mine is not None and accelerate is not None:
            checks.append(
                Check(
                    f"to_device / accelerate, {case}",
                    mine.median / accelerate.median,
                    TO_DEVICE_VS_ACCELERATE[target],
                )
            )
        if mine is not None and optree is not None:
            checks.append(
                Check(
                    f"to_device / bare optree, {case}",
                    mine.median / optree.median,
                    TO_DEVICE_VS_OPTREE,
                )
            )
    return rows, checks


def small_batch_rows(
    *, quick: bool, on_case: Callable[[str], None] | None = None
) -> tuple[list[Row], list[Check]]:
    """to_device against accelerate and lightning on 1, 3 and 10 tensors, per call.

    Runs on CPU only (the meta device never synchronizes).
    """
    repeats = 7 if quick else 41
    rows: list[Row] = []
    checks: list[Check] = []
    for size, batches in _small_batches().items():
        for op_name, target in OPS.items():
            case = f"{size}, {op_name}"
            if on_case is not None:
                on_case(f"small batches, {case}")
            strategies = _strategies(target)[:3]  # to_device, accelerate, lightning
            found, mine, accelerate = _per_call(case, strategies, batches, repeats)
            rows += found
            if mine is not None and accelerate is not None:
                checks.append(
                    Check(
                        f"to_device / accelerate, {case}",
                        mine.median / accelerate.median,
                        SMALL_VS_ACCELERATE,
                    )
                )
    return rows, checks


def _per_call(
    case: str,
    strategies: list[Strategy],
    batches: list[Any],
    repeats: int,
    extra: dict[str, dict[str, float]] | None = None,
) -> tuple[list[Row], Stats | None, Stats | None]:
    """One row per strategy (µs per call, ratio to accelerate's), interleaved on the CPU clock.

    Returns the rows and the statistics of the first two strategies (torchport's and
    accelerate's), ``None`` where one did not run. ``strategies[1]`` is accelerate's.
    """
    runnable = {s.label: rotating(s.run, batches) for s in strategies if s.run is not None}
    stats = time_interleaved(
        runnable,
        torch.device(CPU),
        warmup=2,
        repeats=repeats,
        inner=SMALL_INNER,
        clock=time.process_time,
    )
    accelerate = stats.get(strategies[1].label)
    rows: list[Row] = []
    for strategy in strategies:
        got = stats.get(strategy.label)
        if got is None:
            rows.append(Row(case, strategy.label, status=strategy.missing or "n/a"))
            continue
        metrics = {"us_per_call": got.median * 1e6}
        if extra is not None:
            metrics.update(extra.get(strategy.label, {}))
        if accelerate is not None:
            metrics["vs_accelerate"] = got.median / accelerate.median
        rows.append(Row(case, strategy.label, got, metrics))
    return rows, stats.get(strategies[0].label), accelerate


ENCODING_VS_ACCELERATE = 1.0


class StandInBatchEncoding(collections.UserDict[str, Any]):
    """transformers' ``BatchEncoding`` in outline, for machines without transformers.

    A ``UserDict`` whose ``data`` holds the tensors, with the attributes the real
    one sets (``_encodings``, ``_n_sequences``), attribute access forwarded to
    ``data``, the pickling state the real one defines, and its in-place ``.to``.
    """

    def __init__(self, data: dict[str, Any]) -> None:
        super().__init__(data)
        self._encodings: list[Any] | None = None
        self._n_sequences: int | None = None

    def __getattr__(self, item: str) -> Any:
        try:
            return self.data[item]
        except KeyError:
            raise AttributeError(item) from None

    def __getstate__(self) -> dict[str, Any]:
        return {"data": self.data, "encodings": self._encodings}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.data = state.get("data", {})
        self._encodings = state.get("encodings")

    def to(self, device: Any, *, non_blocking: bool = False) -> StandInBatchEncoding:
        self.data = {
            k: v.to(device=device, non_blocking=non_blocking) if hasattr(v, "to") else v
            for k, v in self.data.items()
        }
        return self


def _encoding_type() -> tuple[type, str]:
    """transformers' ``BatchEncoding`` if it imports, else the stand-in; and a label."""
    module = optional_import("transformers")
    if module is not None:
        return module.BatchEncoding, f"transformers {version_of(module)} BatchEncoding"
    return StandInBatchEncoding, "stand-in BatchEncoding (transformers not installed)"


def _encodings(cls: type, n: int) -> list[Any]:
    g = torch.Generator().manual_seed(0)
    return [
        cls(
            {
                "input_ids": torch.randint(0, 30_000, (8, 128), generator=g),
                "attention_mask": torch.ones(8, 128, dtype=torch.long),
                "token_type_ids": torch.zeros(8, 128, dtype=torch.long),
            }
        )
        for _ in range(n)
    ]


def _restoring(strategy: Strategy, batches: list[Any]) -> Strategy:
    """The strategy, with each input's ``data`` put back after each call (undoing a ``.to``)."""
    run = strategy.run
    if run is None:
        return strategy
    saved = {id(b): b.data for b in batches}

    def restored(batch: Any) -> Any:
        out = run(batch)
        batch.data = saved[id(batch)]
        return out

    return Strategy(strategy.label, restored, strategy.missing)


def _changes_input(run: Callable[[Any], Any], cls: type) -> bool:
    """Whether ``run`` changes the ``BatchEncoding`` it is given (rebinds or moves its data)."""
    (fresh,) = _encodings(cls, 1)
    data = fresh.data
    held = dict(data)
    run(fresh)
    return fresh.data is not data or any(data[k] is not v for k, v in held.items())


def batch_encoding_rows(
    *, quick: bool, on_case: Callable[[str], None] | None = None
) -> tuple[list[Row], list[Check]]:
    """to_device against accelerate and lightning on a ``BatchEncoding``, per call."""
    cls, label = _encoding_type()
    batches = _encodings(cls, 2)
    repeats = 7 if quick else 41
    rows: list[Row] = []
    checks: list[Check] = []
    for op_name, target in OPS.items():
        case = f"{label}, {op_name}"
        if on_case is not None:
            on_case(f"batch encoding, {case}")
        plain = _strategies(target)[:3]  # to_device, accelerate, lightning
        changes = {s.label: float(s.run is not None and _changes_input(s.run, cls)) for s in plain}
        strategies = [plain[0], _restoring(plain[1], batches), plain[2]]
        extra = {label: {"changes_input": changed} for label, changed in changes.items()}
        found, mine, accelerate = _per_call(case, strategies, batches, repeats, extra)
        rows += found
        if changes[strategies[0].label]:
            checks.append(Check(f"to_device leaves the input as it was, {case}", 1.0, 0.0))
        if mine is not None and accelerate is not None:
            checks.append(
                Check(
                    f"to_device / accelerate, {case}",
                    mine.median / accelerate.median,
                    ENCODING_VS_ACCELERATE,
                )
            )
    return rows, checks


def batch_encoding_overhead(
    *, quick: bool = False, on_case: Callable[[str], None] | None = None
) -> SuiteResult:
    """The ``BatchEncoding`` measurements alone (used by ``benchmarks/bench_batch_encoding.py``)."""
    rows, checks = batch_encoding_rows(quick=quick, on_case=on_case)
    return SuiteResult(
        "batch-encoding",
        tuple(rows),
        tuple(checks),
        notes=(
            "BatchEncoding of 3 tensors (8 x 128 int64); process CPU time; accelerate's input "
            "data is put back after each of its calls; changes_input 1 = the strategy "
            "modified its input",
        ),
    )


def traversal_overhead(
    *, quick: bool = False, on_case: Callable[[str], None] | None = None
) -> SuiteResult:
    """The traversal measurements alone, as a suite result (used by ``benchmarks/``)."""
    rows, checks = traversal_rows(quick=quick, on_case=on_case)
    small_rows, small_checks = small_batch_rows(quick=quick, on_case=on_case)
    encoding_rows, encoding_checks = batch_encoding_rows(quick=quick, on_case=on_case)
    rows += small_rows + encoding_rows
    checks += small_checks + encoding_checks
    return SuiteResult(
        "traversal",
        tuple(rows),
        tuple(checks),
        notes=(NOTE,),
    )
