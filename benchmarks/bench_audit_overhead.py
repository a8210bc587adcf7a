"""What does ``torchport.audit()`` cost a training step, whole and sampled?

Strategies compared, in one run on CPU (one intra-op thread): a training step
(forward, MSE loss, backward, SGD update) run bare (the default: audit is
opt-in), inside ``torchport.audit()`` (every op watched), and inside
``torchport.audit(every=N)`` with each step marked by ``report.step()`` (one
step in N recorded, N = steps per sample), and, as the floor under audit(),
inside an empty ``TorchDispatchMode`` (PyTorch's own price for any Python
dispatch mode). Two steps: a tiny MLP and an MLP calibrated to about 5 ms per
step. Target: audit ≤ 1.15x on the 5 ms step.

Then single events, bare / empty dispatch mode / audit(): ``.item()``,
``.tolist()``, boolean-mask indexing, a CPU ``x.to(device)`` (listed as a copy an
accelerator would make) and ``y + 1`` (not recorded). Target: each recorded event
costs under 20 µs over bare.

The measurement code is ``torchport.bench.diagnose_overhead`` (also run by
``torchport bench overhead``) and ``torchport.bench._suite_overhead_diagnose.event_costs``; this
script only prints them.

A small transformer step (two encoder layers, d_model 64, 4 heads, 8 sequences of
32 tokens, cross-entropy, backward, AdamW), timed here side by side: bare, inside an
empty ``TorchDispatchMode``, the same empty mode keeping Dynamo out per code object
(as the audit's mode does, instead of torch's per-op ``torch._dynamo.disable``
wrapper), an empty ``TorchFunctionMode`` and an empty dispatch mode together (the
audit watches through both), and inside ``audit()``. Target: audit() ≤ 1.15x the
empty dispatch mode on the same step. Rounds interleave the variants, so a busy
machine slows all of them alike; times are process CPU time (what this process ran,
not what the machine's other load took), medians reported.

Run: ``.venv/bin/python benchmarks/bench_audit_overhead.py [--quick] [--json]``
(``--transformer`` prints only the transformer table).
"""

from __future__ import annotations

import contextlib
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import nn
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

import torchport as tp
from torchport.bench import diagnose_overhead, script_main
from torchport.bench._suite_overhead_diagnose import event_costs


class _EmptyDispatch(TorchDispatchMode):
    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        return func(*args, **(kwargs or {}))


class _EmptyDispatchSkipped(TorchDispatchMode):
    """An empty mode without torch's per-op Dynamo wrapper (skipped per code object)."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        return func(*args, **(kwargs or {}))


def _skip_dynamo(code: Any) -> None:
    from torch._dynamo.eval_frame import set_code_exec_strategy
    from torch._dynamo.types import FrameAction, FrameExecStrategy

    set_code_exec_strategy(code, FrameExecStrategy(FrameAction.SKIP, FrameAction.SKIP))


class _EmptyFunction(TorchFunctionMode):
    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        return func(*args, **(kwargs or {}))


def _transformer_step() -> Callable[[], None]:
    torch.manual_seed(0)
    vocab, d_model, seq, batch = 256, 64, 32, 8
    embed = nn.Embedding(vocab, d_model)
    layer = nn.TransformerEncoderLayer(d_model, 4, 128, dropout=0.0, batch_first=True)
    encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    head = nn.Linear(d_model, vocab)
    params = [*embed.parameters(), *encoder.parameters(), *head.parameters()]
    opt = torch.optim.AdamW(params, lr=1e-3)
    tokens = torch.randint(0, vocab, (batch, seq))
    targets = torch.randint(0, vocab, (batch, seq))

    def step() -> None:
        logits = head(encoder(embed(tokens)))
        loss = nn.functional.cross_entropy(logits.view(-1, vocab), targets.view(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()

    return step


@contextlib.contextmanager
def _both_empty() -> Iterator[None]:
    with _EmptyFunction(), _EmptyDispatch():
        yield


def transformer_table(*, quick: bool) -> list[tuple[str, float, float]]:
    """(variant, median ms per step, ratio to bare), one intra-op thread."""
    torch.set_num_threads(1)
    step = _transformer_step()
    variants: dict[str, Callable[[], contextlib.AbstractContextManager[Any]]] = {
        "bare": contextlib.nullcontext,
        "empty dispatch mode": _EmptyDispatch,
        "empty dispatch mode, Dynamo skipped per code": _EmptyDispatchSkipped,
        "empty function + dispatch modes": _both_empty,
        "audit()": tp.audit,
    }
    steps, rounds = (3, 5) if quick else (5, 15)
    _skip_dynamo(_EmptyDispatchSkipped.__torch_dispatch__.__code__)
    for make in variants.values():  # warm up each path
        with make():
            step()
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(rounds):
        for name, make in variants.items():
            with make():
                start = time.process_time()
                for _ in range(steps):
                    step()
                times[name].append((time.process_time() - start) / steps)
    base = statistics.median(times["bare"])
    return [
        (name, statistics.median(t) * 1e3, statistics.median(t) / base) for name, t in times.items()
    ]


def print_transformer_table(*, quick: bool) -> float:
    """Print the side-by-side table; returns audit() / empty dispatch mode."""
    rows = transformer_table(quick=quick)
    by = {name: ms for name, ms, _ in rows}
    print("small transformer step (CPU, 1 thread), median process-CPU ms per step")
    print(f"{'variant':46} {'ms/step':>9} {'x bare':>8}")
    for name, ms, ratio in rows:
        print(f"{name:46} {ms:9.2f} {ratio:8.2f}")
    ratio = by["audit()"] / by["empty dispatch mode"]
    verdict = "within" if ratio <= 1.15 else "OVER"
    print(f"audit() / empty dispatch mode: {ratio:.2f}x ({verdict} the 1.15x target)")
    return ratio


if __name__ == "__main__":
    if "--transformer" in sys.argv:
        print_transformer_table(quick="--quick" in sys.argv)
        raise SystemExit(0)
    if "--json" not in sys.argv:
        print_transformer_table(quick="--quick" in sys.argv)
    raise SystemExit(
        script_main(
            __doc__ or "",
            lambda quick: [
                diagnose_overhead(
                    quick=quick, variants=("audit()", "audit(every=N)", "empty dispatch mode")
                ),
                event_costs(quick=quick),
            ],
        )
    )
