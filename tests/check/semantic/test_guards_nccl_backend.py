"""A comparison of the process group's backend with NCCL is CUDA's branch (sample O).

tnt's ``if backend == dist.Backend.NCCL: dist.barrier(device_ids=[torch.cuda.current_device()])``
and ``torch.cuda.current_device() if dist.get_backend(pg) == "nccl" else "cpu"``: NCCL runs
only on CUDA, so the CUDA index in that arm is right (``semantic/_guards.py``). The
backend's spelling, the NCCL spelling, the operator and the arm are drawn; the oracle:
left exactly when one side names NCCL (the string in any case, or ``Backend.NCCL``) and
the other a backend.
"""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

# A side that may name the backend, and whether it does.
BACKENDS = {
    "backend": True,
    "dist.get_backend(pg)": True,
    "args.dist_backend": True,
    "str(dist.get_backend())": True,
    "mode": False,
    "cfg.kind": False,
}
# A side that may name NCCL, and whether it does.
NCCLS = {
    '"nccl"': True,
    '"NCCL"': True,
    "dist.Backend.NCCL": True,
    "Backend.NCCL": True,
    '"gloo"': False,
    "dist.Backend.GLOO": False,
    '"ncclx"': False,
}


@given(
    backend=st.sampled_from(sorted(BACKENDS)),
    nccl=st.sampled_from(sorted(NCCLS)),
    op=st.sampled_from(("==", "!=")),
    flipped=st.booleans(),
    in_else=st.booleans(),
    expression=st.booleans(),
)
@example(  # tnt's barrier
    backend="backend",
    nccl="dist.Backend.NCCL",
    op="==",
    flipped=False,
    in_else=False,
    expression=False,
)
@example(  # tnt's all-gather buffer
    backend="dist.get_backend(pg)",
    nccl='"nccl"',
    op="==",
    flipped=False,
    in_else=False,
    expression=True,
)
@example(backend="mode", nccl='"nccl"', op="==", flipped=False, in_else=False, expression=False)
def test_cuda_under_an_nccl_backend_test_is_left(
    backend: str, nccl: str, op: str, flipped: bool, in_else: bool, expression: bool
) -> None:
    test = f"{nccl} {op} {backend}" if flipped else f"{backend} {op} {nccl}"
    call = "torch.cuda.current_device()"
    if expression:
        arms = (call, '"cpu"') if not in_else else ('"cpu"', call)
        body = [f"    i = {arms[0]} if {test} else {arms[1]}"]
    else:
        first, second = ("i = 0", f"i = {call}") if in_else else (f"i = {call}", "i = 0")
        body = [f"    if {test}:", f"        {first}", "    else:", f"        {second}"]
    source = "\n".join(
        [
            "import torch",
            "import torch.distributed as dist",
            "from torch.distributed import Backend",
            "",
            "",
            "def barrier(pg, backend, args, mode, cfg):",
            *body,
            "    return i",
        ]
    )
    found = check_text(source + "\n", "src/dist.py", ruleset_for(["TP401"], None)).findings
    assert bool(found) != (BACKENDS[backend] and NCCLS[nccl]), source
