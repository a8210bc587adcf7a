"""A composite op that reaches the simulated tensor whole runs by its parts, as on CUDA.

An op with a ``CompositeImplicitAutograd`` kernel reaches a backend as its parts,
decomposed by the autograd key; an inference tensor has no such key and brought the op
whole to the simulator, which ran it on the values inside: ``F.one_hot(i)``,
``narrow(1, tensor, n)`` and ``torch.where(mask)`` skipped the host wait their parts make
on CUDA, ``torch.where(cpu_cond, x, 0.0)`` refused the 0-dim host condition CUDA takes as
a scalar, and ``tensor_split`` took device indices CUDA refuses. The oracle is the same
program on a normal tensor under ``torch.no_grad()``, where torch decomposes the op
(and its values on the CPU).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.sim.isolated import run_isolated

pytestmark = pytest.mark.needs_simulator

# Each takes ``t`` (2-by-3 floats), ``i`` (int64 [0, 1, 1]), ``r`` (int64 repeats),
# ``z`` (0-dim int64 0), all on the device, and ``c`` (a 0-dim bool on the host).
OPS = [
    "F.one_hot(i)",
    "F.one_hot(i, 4)",
    "t.narrow(1, z, 2)",
    "t.narrow(1, 1, 2)",
    "torch.where(c, t, 0.0)",
    "torch.where(c, 1.0, t)",
    "torch.where(t > 0)",
    "torch.where(t > 0, t, 0.0)",
    "t.tensor_split(i, 1)",
    "t.tensor_split(2, 1)",
    "t.repeat_interleave(2)",
    "t.repeat_interleave(r.view(2, 3).flatten())",
    "t.take_along_dim(i[:2].view(2, 1), 1)",
    "t.reshape(3, 2)",
    "t.T.reshape(-1)",
    "t.flatten()",
    "t.expand_as(t)",
    "t.type(torch.float64)",
    "t.type_as(i)",
    "t.square()",
    "F.pad(t, (1, 1))",
    "F.softmax(t, -1)",
    "F.interpolate(t[None, None], scale_factor=2)",
    "torch.einsum('ij,kj->ik', t, t)",
    "t.matmul(t.T)",
    "torch.cdist(t, t)",
    "t.isclose(t).all().item()",
    "t.argmax().item()",
    "t.unflatten(1, (1, 3))",
    "torch.meshgrid(t[0], t[1], indexing='ij')",
    "t.diff()",
    "t.kron(t)",
    "t.clip(z, 1)",
    "F.cosine_similarity(t, t)",
    "t.sum_to_size(1, 3)",
]

_CHILD = """
import torch.nn.functional as F
from torchport import _crossings
sim = simulate_accelerator()
out = []
for chain in CASES:
    got = []
    for dev, mode in ((sim, torch.inference_mode), (sim, torch.no_grad), ("cpu", torch.no_grad)):
        crossings = []
        with mode():
            t = torch.linspace(-1.0, 1.0, 6).view(2, 3).to(dev)
            i = torch.tensor([0, 1, 1]).to(dev)
            r = torch.tensor([1, 2, 3, 0, 0, 1]).to(dev)
            z = torch.tensor(0).to(dev)
            c = torch.tensor(True)
            scope = {"torch": torch, "F": F, "t": t, "i": i, "r": r, "z": z, "c": c}
            try:
                with _crossings.listening(crossings.append):
                    for op in chain:
                        value = eval(op, scope)
                        scope["t"] = value if isinstance(value, torch.Tensor) else t
                values = value if isinstance(value, (list, tuple)) else [value]
                shown = [
                    [str(v.device.type), v.cpu().tolist()] if isinstance(v, torch.Tensor) else v
                    for v in values
                ]
            except Exception as error:
                shown = [type(error).__name__, str(error).replace(str(dev), "DEV")]
        kinds = sorted(c.kind.value for c in crossings if c.kind.value == "sync")
        got.append([shown, kinds])
    out.append(got)
print(json.dumps(out))
"""


@settings(max_examples=2, deadline=None)
@given(
    st.lists(
        st.lists(st.integers(0, len(OPS) - 1), min_size=1, max_size=3),
        min_size=40,
        max_size=40,
    )
)
def test_a_composite_op_of_an_inference_tensor_runs_as_of_a_normal_one(
    cases: list[list[int]],
) -> None:
    chains = [[OPS[i] for i in case] for case in cases]
    got = run_isolated(_CHILD.replace("CASES", repr(chains)))
    for chain, (inference, normal, cpu) in zip(chains, got, strict=True):
        assert inference == normal, chain  # values, device, errors and host waits
        if normal[0][0] not in ("RuntimeError", "TypeError"):
            assert [v[1] if isinstance(v, list) else v for v in normal[0]] == [
                v[1] if isinstance(v, list) else v for v in cpu[0]
            ], chain


def test_each_op_above_is_composite() -> None:
    # The class under test: ops with a CompositeImplicitAutograd kernel (a guard that the
    # list keeps testing what it names).
    import torch

    names = ["one_hot", "narrow", "where", "tensor_split", "repeat_interleave", "reshape"]
    for name in names:
        packet = getattr(torch.ops.aten, name)
        assert any(
            torch._C._dispatch_has_kernel_for_dispatch_key(
                getattr(packet, overload).name(), "CompositeImplicitAutograd"
            )
            for overload in packet.overloads()
        ), name
