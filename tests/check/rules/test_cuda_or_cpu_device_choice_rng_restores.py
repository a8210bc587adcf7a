"""TP109 on generated CUDA-test branches that restore a saved CUDA RNG state (sample AG).

Held-out sample AG's ``restore_rng`` (``if "cuda" in state and torch.cuda.is_available():
torch.cuda.set_rng_state_all(state["cuda"])``) was judged noise: the ``"cuda"`` index reads
the checkpoint's saved generator state, and the branch picks no device. Oracle (by hand, per
statement): a statement places data or picks a device on CUDA (a move, a ``"cuda"`` value, a
device fetched by the key ``"cuda"``, ``set_device``, an RNG restore told ``device="cuda"``, a
module's own function that happens to be named ``set_rng_state_all``), or only restores
torch's CUDA generators from a saved state, however the state is spelled and however the
restore is imported. The branch is a CUDA-or-CPU choice exactly when one statement places.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_source

HEADER = (
    "import torch\nimport torch.cuda as tc\nfrom torch.cuda import set_rng_state_all as restore\n"
    "from torch.cuda import set_rng_state\nimport own\n\n"
)
STATES = [
    "state['cuda']",
    "ckpt['rng']['cuda']",
    "state.get('cuda')",
    "state['cuda'][0]",
    "rng_states['cuda_rng']",
]
RESTORES = [
    "torch.cuda.set_rng_state_all({s})",
    "torch.cuda.set_rng_state({s})",
    "tc.set_rng_state_all({s})",
    "restore({s})",
    "set_rng_state({s})",
    "torch.cuda.set_rng_state_all(new_states={s})",
    "torch.cuda.set_rng_state(new_state={s}, device=0)",
]
PLACES = [
    "model = model.cuda()",
    "x = x.to(devices['cuda'])",
    "dev = state['cuda']",
    "device = 'cuda'",
    "torch.cuda.set_device(state['cuda'])",
    "torch.cuda.set_rng_state(state['cpu'], device='cuda')",
    "own.set_rng_state_all(state['cuda'])",
]
TESTS = [
    "torch.cuda.is_available()",
    "'cuda' in state and torch.cuda.is_available()",
    "ok",
]


def _indented(statements: list[str]) -> str:
    return "".join(f"        {s}\n" for s in statements)


def _source(test: str, body: list[str]) -> str:
    return (
        HEADER
        + "def load(model, x, state, ckpt, rng_states, devices):\n"
        + "    ok = torch.cuda.is_available()\n"
        + f"    if {test}:\n"
        + _indented(body)
        + "    return model\n"
    )


_LINE = HEADER.count("\n") + 3  # the `if`


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(TESTS),
    st.lists(
        st.one_of(
            st.builds(str.format, st.sampled_from(RESTORES), s=st.sampled_from(STATES)),
            st.sampled_from(PLACES),
        ),
        min_size=1,
        max_size=3,
    ),
)
def test_a_branch_restoring_rng_states_is_a_choice_only_where_it_places(
    test: str, body: list[str]
) -> None:
    source = _source(test, body)
    reported = _LINE in {f.line for f in check_source(source, select=["TP109"])}
    assert reported == any(s in PLACES for s in body), source


def test_every_restore_and_state_alone_and_every_place_alone() -> None:
    """Each spelling once, by a loop (the generated test samples them)."""
    for test in TESTS:
        for restore in RESTORES:
            for state in STATES:
                source = _source(test, [restore.format(s=state)])
                assert _LINE not in {f.line for f in check_source(source, select=["TP109"])}, source
        for place in PLACES:
            source = _source(test, [place])
            assert _LINE in {f.line for f in check_source(source, select=["TP109"])}, source
