"""What does running on the simulated accelerator cost, against the same work on the CPU?

Strategies compared, side by side in one process (one intra-op thread, so the
ratio is the simulator's own per-op cost, not a thread count): the same code on
``cpu`` (the baseline) and on ``sim:0`` (``torchport.testing.simulate_accelerator``).

* per op: ``x + y`` and ``x @ y`` on small tensors (64x64), where the wrapper's
  Python dispatch weighs most;
* a small CNN training step (two conv layers, batch 32, 32x32 images, Adam);
* a small transformer training step (2 encoder layers, d_model 64, seq 32, batch 16, AdamW).

Target (issue 29): each training step on ``sim`` ≤ 3x the same step on the CPU.
Each figure is the median of ``--repeat`` samples of ``--steps`` steps, the two devices
timed round-robin within each repeat.

Run: ``.venv/bin/python benchmarks/bench_simulator.py [--steps 20] [--repeat 5] [--json]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable

import torch
from torch import nn

from torchport.testing import simulate_accelerator


def _medians(
    steps_of: dict[str, Callable[[], object]], steps: int, repeat: int
) -> dict[str, float]:
    """Median seconds per step of each strategy, timed round-robin so drift lands on all."""
    for step in steps_of.values():
        for _ in range(3):
            step()
    samples: dict[str, list[float]] = {name: [] for name in steps_of}
    for _ in range(repeat):
        for name, step in steps_of.items():
            start = time.perf_counter()
            for _ in range(steps):
                step()
            samples[name].append((time.perf_counter() - start) / steps)
    return {name: statistics.median(values) for name, values in samples.items()}


def _op_step(device: torch.device, op: str) -> Callable[[], object]:
    x = torch.randn(64, 64, device=device)
    y = torch.randn(64, 64, device=device)
    return (lambda: x + y) if op == "add" else (lambda: x @ y)


def _cnn_step(device: torch.device) -> Callable[[], object]:
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3), nn.ReLU(), nn.Conv2d(16, 32, 3), nn.ReLU(),
        nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(32 * 16, 10),
    ).to(device)  # fmt: skip
    opt = torch.optim.Adam(model.parameters())
    x = torch.randn(32, 3, 32, 32, device=device)
    y = torch.randint(0, 10, (32,), device=device)

    def step() -> object:
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step


def _transformer_step(device: torch.device) -> Callable[[], object]:
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True)
    model = nn.Sequential(nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)).to(device)
    head = nn.Linear(64, 100).to(device)
    opt = torch.optim.AdamW([*model.parameters(), *head.parameters()])
    x = torch.randn(16, 32, 64, device=device)
    y = torch.randint(0, 100, (16 * 32,), device=device)

    def step() -> object:
        opt.zero_grad()
        logits = head(model(x)).reshape(-1, 100)
        loss = nn.functional.cross_entropy(logits, y)
        loss.backward()
        opt.step()
        return loss

    return step


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    sim = simulate_accelerator()
    cpu = torch.device("cpu")
    cases: dict[str, Callable[[torch.device], Callable[[], object]]] = {
        "op: x + y (64x64)": lambda d: _op_step(d, "add"),
        "op: x @ y (64x64)": lambda d: _op_step(d, "matmul"),
        "CNN training step": _cnn_step,
        "transformer training step": _transformer_step,
    }
    rows = []
    for name, make in cases.items():
        steps = args.steps * (50 if name.startswith("op") else 1)
        medians = _medians({"cpu": make(cpu), "sim": make(sim)}, steps, args.repeat)
        on_cpu, on_sim = medians["cpu"], medians["sim"]
        rows.append({"case": name, "cpu_s": on_cpu, "sim_s": on_sim, "ratio": on_sim / on_cpu})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'case':<28} {'cpu':>12} {'sim':>12} {'sim/cpu':>8}")
    for row in rows:
        print(
            f"{row['case']:<28} {row['cpu_s'] * 1e6:>10.1f}us {row['sim_s'] * 1e6:>10.1f}us "
            f"{row['ratio']:>7.2f}x"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
