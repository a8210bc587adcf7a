"""The simulated accelerator refuses what CUDA refuses, and takes what CUDA takes: checked on a GPU.

The simulator's device rules were written from PyTorch's documented CUDA rules, on
machines without a GPU. Where they are more lenient than CUDA, a program verified on
``sim`` (``port --verify``, ``torchport run --device sim``) can still fail on a GPU;
where they are stricter, a working program is refused. On a lent GPU (issue 36's
``benchmarks/gpu_proof.sh`` runs ``-m gpu``) each case runs once on CUDA and once on
``sim`` in one child process, and whether it raised must agree case by case.

The cases are the operand mixes the rules decide on: a CPU tensor with 0 dimensions
beside device tensors (CUDA takes one in a binary op), several of them, one in a
ternary op (``addcmul``, ``lerp``, ``where``), in ``clamp``'s bounds, in ``out=``,
host and device indices, and plain mixed devices.
"""

from __future__ import annotations

import pytest
import torch

from tests.sim.isolated import run_isolated

# Each case: an expression over `d` (the device), `t` (``torch.ones(3)`` on it) and `s`
# (a 0-dim CPU tensor).
CASES = {
    "binary, one CPU scalar": "t + s",
    "binary, CPU scalar first": "s * t",
    "binary, CPU 1-dim": "t + torch.ones(3)",
    "in place, CPU scalar": "t.clone().add_(s)",
    "in place into a CPU scalar": "s.clone().add_(torch.ones((), device=d))",
    "addcmul, one CPU scalar": "torch.addcmul(t, t, s)",
    "addcmul, two CPU scalars": "torch.addcmul(t, s, s)",
    "lerp, CPU weight": "torch.lerp(t, torch.zeros(3, device=d), s)",
    "where, CPU scalar other": "torch.where(t > 0, t, s)",
    "clamp, CPU scalar bound": "torch.clamp(t, min=s)",
    "out=, CPU scalar out": "torch.add(torch.ones((), device=d), 1, out=s.clone())",
    "matmul, CPU": "torch.ones(2, 3, device=d) @ torch.ones(3, 2)",
    "index, CPU indices": "t[torch.tensor([0, 2])]",
    "index, device indices into CPU": "torch.ones(3)[torch.tensor([0], device=d)]",
    "cat, CPU part": "torch.cat([t, torch.ones(2)])",
    "stack, CPU scalar part": "torch.stack([torch.ones((), device=d), s])",
}

_CHILD = """
CASES = {cases!r}
sim = simulate_accelerator()
s = torch.tensor(2.0)

def raised(expression, d):
    try:
        eval(expression, {{"torch": torch, "d": d, "s": s, "t": torch.ones(3, device=d)}})
    except Exception as caught:  # which kind does not matter here: whether it raised does
        return type(caught).__name__
    return None

print(json.dumps({{name: [raised(e, torch.device("cuda")), raised(e, sim)]
                  for name, e in CASES.items()}}))
"""


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_the_simulator_refuses_exactly_what_cuda_refuses() -> None:
    found = run_isolated(_CHILD.format(cases=CASES))
    differ = {
        name: f"cuda {c}, sim {s}" for name, (c, s) in found.items() if (c is None) != (s is None)
    }
    assert not differ, differ
