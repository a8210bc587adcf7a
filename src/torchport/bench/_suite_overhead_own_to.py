"""Suite ``overhead`` (objects with their own ``.to``, and the bare loop): what to_device adds.

Two questions, on CPU, process CPU time, each strategy on the same batches in one
interleaved run:

* the small batches most loops move (an ``(x, y, mask)`` tuple, a dict of 10
  tensors), a 1000-leaf nested batch and a HuggingFace-style ``BatchEncoding``:
  ``torchport.to_device`` against the bare ``.to`` loop a user would write
  (a comprehension over the container, recursive for nesting), accelerate
  ``send_to_device`` and Lightning's ``move_data_to_device`` (when installed).
  Target: to_device ≤ 1.05x the bare loop;
* PyTorch Geometric ``Batch`` and ``TensorDict`` batches (each library's own class
  when installed, else the row says so): ``to_device`` and ``DeviceLoader`` (one
  batch per pass) against the object's own ``.to`` on a shallow copy
  (``copy.copy(obj).to(device)``, what to_device promises to give). Target: ≤ 1.5x
  that ``.to``; and the same object inside a dict with a tensor against its own
  ``.to`` plus that tensor's ``.to``, also ≤ 1.5x.

Each has two per-leaf ops: to ``meta`` ("another device": a new tensor per leaf)
and to ``cpu`` where everything already is (a no-op move: the walk is all).
"""

from __future__ import annotations

import collections
import copy
import time
from collections.abc import Callable
from typing import Any

import torch

from torchport._device_types import CPU
from torchport.bench._competitors import (
    Strategy,
    accelerate_send,
    lightning_move,
    optional_import,
    torchport_to_device,
    version_of,
)
from torchport.bench._model import Check, Row, SuiteResult
from torchport.bench._random_inputs import many_leaf_batch
from torchport.bench._suite_overhead_traversal import OPS, StandInBatchEncoding
from torchport.bench._timing import rotating, time_interleaved

VS_BARE = 1.05
VS_OWN_TO = 1.5
INNER = 200


def bare_loop(target: str) -> Strategy:
    """The loop a user writes: ``.to`` on each tensor, containers rebuilt by comprehension."""

    def move(x: Any) -> Any:
        if isinstance(x, torch.Tensor):
            return x.to(target)
        if isinstance(x, dict):
            return {k: move(v) for k, v in x.items()}
        if isinstance(x, list):
            return [move(v) for v in x]
        if isinstance(x, tuple):
            return tuple(move(v) for v in x)
        if isinstance(x, collections.UserDict):
            new = copy.copy(x)
            new.data = {k: move(v) for k, v in x.data.items()}
            return new
        return x

    return Strategy("bare .to loop", move)


def own_to(target: str) -> Strategy:
    """The object's own ``.to`` on a shallow copy: what to_device promises to give."""
    return Strategy("own .to on copy.copy", lambda obj: copy.copy(obj).to(target))


def own_to_in_dict(target: str) -> Strategy:
    """The object's own ``.to`` on a shallow copy, inside ``{"obj": obj, "y": tensor}``."""
    return Strategy(
        "own .to on copy.copy",
        lambda batch: {"obj": copy.copy(batch["obj"]).to(target), "y": batch["y"].to(target)},
    )


def device_loader(target: str) -> Strategy:
    """``DeviceLoader`` handing over one batch at a time (a pass per batch, as a loop does)."""
    from torchport.feed import DeviceLoader

    holder: list[Any] = [None]
    loader = DeviceLoader(holder, target)

    def move(obj: Any) -> Any:
        holder[0] = obj
        for moved in loader:
            return moved
        return None

    return Strategy(f"DeviceLoader(..., {target!r})", move)


def _plain_batches() -> dict[str, list[Any]]:
    def three() -> object:
        return (torch.randn(32, 8), torch.randint(0, 10, (32,)), torch.ones(32, dtype=torch.bool))

    def ten() -> object:
        return {f"f{i}": torch.randn(32) for i in range(10)}

    def encoding() -> object:
        return StandInBatchEncoding(
            {
                "input_ids": torch.randint(0, 30_000, (8, 128)),
                "attention_mask": torch.ones(8, 128, dtype=torch.long),
            }
        )

    return {
        "3 tensors (x, y, mask)": [three(), three()],
        "10 tensors in a dict": [ten(), ten()],
        "1000 leaves, nested": [many_leaf_batch(1000), many_leaf_batch(1000)],
        "BatchEncoding (stand-in, 2 tensors)": [encoding(), encoding()],
    }


def _object_batches() -> dict[str, list[Any] | str]:
    found: dict[str, list[Any] | str] = {}
    pyg = optional_import("torch_geometric.data")
    if pyg is None:
        found["PyG Batch"] = "not installed: torch_geometric"
    else:
        top = optional_import("torch_geometric")
        label = f"PyG {version_of(top) if top else ''} Batch of 8 graphs"

        def graphs() -> Any:
            return pyg.Batch.from_data_list(
                [
                    pyg.Data(
                        x=torch.randn(10, 8),
                        edge_index=torch.randint(0, 10, (2, 30)),
                        y=torch.tensor([i]),
                    )
                    for i in range(8)
                ]
            )

        found[label] = [graphs(), graphs()]
    td = optional_import("tensordict")
    if td is None:
        found["TensorDict"] = "not installed: tensordict"
    else:
        label = f"tensordict {version_of(td)} TensorDict of 6 (2 nested)"

        def tensordict() -> Any:
            return td.TensorDict(
                {
                    "obs": torch.randn(32, 8),
                    "action": torch.randint(0, 4, (32,)),
                    "reward": torch.randn(32),
                    "done": torch.zeros(32, dtype=torch.bool),
                    "next": {"obs": torch.randn(32, 8), "reward": torch.randn(32)},
                },
                batch_size=[32],
            )

        found[label] = [tensordict(), tensordict()]
    return found


def _rows(
    case: str, strategies: list[Strategy], batches: list[Any], repeats: int, base: str
) -> tuple[list[Row], float | None]:
    """Rows (µs per call, ratio to ``base``) and to_device's ratio to it."""
    runnable = {s.label: rotating(s.run, batches) for s in strategies if s.run is not None}
    stats = time_interleaved(
        runnable,
        torch.device(CPU),
        warmup=2,
        repeats=repeats,
        inner=INNER,
        clock=time.process_time,
    )
    reference = stats.get(base)
    rows: list[Row] = []
    for strategy in strategies:
        got = stats.get(strategy.label)
        if got is None:
            rows.append(Row(case, strategy.label, status=strategy.missing or "n/a"))
            continue
        metrics = {"us_per_call": got.median * 1e6}
        if reference is not None:
            metrics[f"vs_{base}"] = got.median / reference.median
        rows.append(Row(case, strategy.label, got, metrics))
    mine = stats.get(strategies[0].label)
    ratio = None if mine is None or reference is None else mine.median / reference.median
    return rows, ratio


def own_to_overhead(
    *, quick: bool = False, on_case: Callable[[str], None] | None = None
) -> SuiteResult:
    """to_device against the bare loop on plain batches and against an object's own ``.to``."""
    repeats = 7 if quick else 31
    rows: list[Row] = []
    checks: list[Check] = []
    for size, batches in _plain_batches().items():
        for op_name, target in OPS.items():
            case = f"{size}, {op_name}"
            if on_case is not None:
                on_case(case)
            strategies = [
                torchport_to_device(target),
                bare_loop(target),
                accelerate_send(target),
                lightning_move(torch.device(target)),
            ]
            found, ratio = _rows(case, strategies, batches, repeats, "bare .to loop")
            rows += found
            if ratio is not None:
                checks.append(Check(f"to_device / bare .to loop, {case}", ratio, VS_BARE))
    for kind, objects in _object_batches().items():
        for op_name, target in OPS.items():
            case = f"{kind}, {op_name}"
            if isinstance(objects, str):
                rows.append(Row(case, "torchport.to_device", status=objects))
                continue
            if on_case is not None:
                on_case(case)
            strategies = [torchport_to_device(target), own_to(target), device_loader(target)]
            found, ratio = _rows(case, strategies, objects, repeats, "own .to on copy.copy")
            rows += found
            if ratio is not None:
                checks.append(Check(f"to_device / own .to, {case}", ratio, VS_OWN_TO))
            loaded = next((r for r in found if r.strategy.startswith("DeviceLoader")), None)
            if loaded is not None and loaded.metrics:
                name = f"DeviceLoader / own .to, {case}"
                checks.append(Check(name, loaded.metrics["vs_own .to on copy.copy"], VS_OWN_TO))
            # The same object inside a dict with a tensor: to_device against the object's
            # own .to on a shallow copy plus the tensor's .to, the dict made anew.
            held = f"{kind} in a dict with a tensor, {op_name}"
            if on_case is not None:
                on_case(held)
            dicts = [{"obj": obj, "y": torch.ones(3)} for obj in objects]
            strategies = [torchport_to_device(target), own_to_in_dict(target)]
            found, ratio = _rows(held, strategies, dicts, repeats, "own .to on copy.copy")
            rows += found
            if ratio is not None:
                checks.append(Check(f"to_device / own .to, {held}", ratio, VS_OWN_TO))
    return SuiteResult(
        "own-to",
        tuple(rows),
        tuple(checks),
        notes=(
            "CPU only; process CPU time; medians of interleaved samples of 200 calls; "
            "ratios within ~10% are ties on a shared machine",
        ),
    )
