"""A 0-dim CPU tensor refused by CUDA's kernel is refused in CUDA's words, in CUDA's order.

For ``addcmul``, ``addcdiv`` and ``lerp`` every placement of each tensor argument on the
device or as a 0-dim CPU tensor is tried. The oracle restates PyTorch's source, apart
from the simulator's tables: TensorIterator's ``compute_types`` takes one CPU scalar
and refuses a second ("Trying to pass too many CPU scalars to non-CPU kernel!"); then
``addcmul_cuda_kernel`` refuses one as ``self`` or ``tensor1`` with its own message, and
``lerp``'s reads only ``weight``. ``addcdiv`` builds its iterator without
``allow_cpu_scalars`` ("TODO: add support for cpu_scalar in addcdiv", ``PointwiseOps.cpp``):
any 0-dim CPU tensor is another device's tensor there. With no
tensor on the device the op runs on the CPU. ``masked_fill__cuda`` checks the mask's
device first, in its words.
"""

from __future__ import annotations

import itertools

import pytest

from tests.sim.isolated import run_isolated

pytestmark = pytest.mark.needs_simulator

_ARGS = {"addcmul": ("self", "tensor1", "tensor2"), "addcdiv": ("self", "tensor1", "tensor2")}
_ARGS["lerp"] = ("self", "end", "weight")
_TOO_MANY = "Trying to pass too many CPU scalars to non-CPU kernel!"
_MIXED = (
    "Expected all tensors to be on the same device, but found at least two devices, sim:0 and cpu!"
)


def _cuda_says(op: str, host: tuple[str, ...]) -> str | None:
    """What CUDA raises for ``op`` with the arguments in ``host`` as 0-dim CPU tensors."""
    names = _ARGS[op]
    if len(host) == len(names):
        return None  # all on the host: the CPU runs it
    if op == "addcdiv" and host:
        return _MIXED
    if len(host) > 1:
        return _TOO_MANY
    if not host:
        return None
    (name,) = host
    if op == "addcmul" and name != "tensor2":
        swap = (
            " However, CPU Scalar support for tensor2 is supported, please swap your "
            "tensor1 and tensor2 terms."
        )
        return (
            f"CPU Scalar support for {name} argument is not supported when calling addcmul "
            f"on CUDA tensors.{swap if name == 'tensor1' else ''}"
        )
    if (op, name) in (("addcmul", "tensor2"), ("lerp", "weight")):
        return None
    return "refused"  # another device's tensor, in TensorIterator's or the kernel's words


_CHILD = """
device = simulate_accelerator()
out = {}
for op, names in ARGS.items():
    for count in range(len(names) + 1):
        for host in itertools.combinations(names, count):
            args = [torch.tensor(2.0) if n in host else torch.ones(3, device=device) for n in names]
            try:
                getattr(torch, op)(*args)
                said = None
            except RuntimeError as error:
                said = str(error)
            out[op + " " + "+".join(host)] = said
mask_on_host = None
try:
    torch.ones(3, device=device).masked_fill(torch.tensor(True), 1.0)
except RuntimeError as error:
    mask_on_host = str(error)
print(json.dumps({"said": out, "mask": mask_on_host}))
"""


def test_kernel_rules_raise_in_cudas_words_and_order() -> None:
    got = run_isolated("import itertools\n", _CHILD.replace("ARGS", repr(_ARGS)))
    for op, names in _ARGS.items():
        for count in range(len(names) + 1):
            for host in itertools.combinations(names, count):
                said = got["said"][f"{op} {'+'.join(host)}"]
                expected = _cuda_says(op, host)
                if expected == "refused":
                    assert said is not None, (op, host)
                    assert said != _TOO_MANY and "addcmul" not in said, (op, host, said)
                elif expected == _MIXED:
                    assert said is not None and said.startswith(_MIXED), (op, host, said)
                else:
                    assert said == expected, (op, host)
    assert got["mask"] == (
        "expected self and mask to be on the same device, but got mask on cpu and self on sim:0"
    )
