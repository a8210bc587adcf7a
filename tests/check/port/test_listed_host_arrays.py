"""TP522 at a numpy call given a list written at the call, of host arrays only.

Found on the held-out set h31o (wangleiphy/DL4CSRC's ``3-flow/main.py``): ``x =
np.linspace(...)``, ``X, Y = np.meshgrid(x, y)``, ``xy = np.concatenate([np.atleast_2d(
X.ravel()), np.atleast_2d(Y.ravel())]).T``, and later in the same scope ``x, logp =
model.sample(...)`` on the device. The device flow is per name, so ``x`` and what is made
of it are device values; TP522 asks the read's own bindings (``_host_values``) before it
reports, but a list is never sure there (what is appended later decides), and the port
advised ``.detach().cpu()`` on numpy arrays where the ported program ran to its end.

Invariant: a list written at the read itself is made there and handed over at once, so
numpy reads its items: TP522 reports it exactly when it would report one of its items
given alone. A list bound to a name (appended to later) or one with a starred item is
asked whole, as before.

Programs are generated: a host binding of ``x`` (and the grid made of it) before the read,
a device binding of ``x`` after it; the read is ``np.concatenate``, ``np.stack``,
``np.vstack`` or ``np.array`` of a list of items drawn from host arrays and near misses (the
model's output on the device, with or without ``.cpu()``, a tuple of host items). The oracle
is the run: each program and its port print the same on the CPU, and the port on the
simulated accelerator (no CUDA redirect) stops at the read exactly when the port left a
finding there.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import same_on_the_cpu, stops_exactly_where_reported

_HOST = (
    "x",
    "x * 2.0",
    "np.ones(4, dtype=np.float32)",
    "X.ravel()[:4]",
    "np.atleast_1d(Y[0])",
    "np.asarray((x[0], x[1], x[2], x[3]))",
)
_DEVICE = "model(torch.ones(4, 2)).detach()[:, 0]"
_NEAR = (_DEVICE, _DEVICE + ".cpu()")
_READS = ("np.concatenate", "np.stack", "np.vstack", "np.array")


def _program(read: str, items: list[str]) -> str:
    return (
        "import numpy as np\nimport torch\n\n"
        "OUT = []\nmodel = torch.nn.Linear(2, 2)\n"
        "x = np.linspace(-1.0, 1.0, num=4, dtype=np.float32)\n"
        "X, Y = np.meshgrid(x, x)\n"
        f"got = {read}([{', '.join(items)}])\n"
        "OUT.append(torch.as_tensor(np.asarray(got, dtype=np.float32)))\n"
        "grid = torch.from_numpy(np.ascontiguousarray(np.stack((X[0], Y[0]), axis=1)))\n"
        "for _ in range(2):\n"
        "    x = model(grid)\n"
        "    OUT.append(x.detach())\n"
    )


def _read_line(source: str, case: object) -> set[int]:
    return {n for n, text in enumerate(source.splitlines(), 1) if text.startswith("got = ")}


_ITEMS = st.lists(st.one_of(st.sampled_from(_HOST), st.sampled_from(_NEAR)), min_size=1, max_size=4)


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases=st.lists(st.tuples(st.sampled_from(_READS), _ITEMS), min_size=1, max_size=4))
def test_a_list_written_at_the_read_is_reported_exactly_where_the_run_stops(
    cases: list[tuple[str, list[str]]],
) -> None:
    programs = [_program(read, items) for read, items in cases]
    same_on_the_cpu(programs)
    stops_exactly_where_reported(cases, programs, _read_line)


def test_the_held_out_shape() -> None:
    """h31o's ``3-flow/main.py``, reduced: no finding at the read, and the run ends."""
    programs = [
        _program("np.concatenate", ["np.atleast_1d(X.ravel())", "np.atleast_1d(Y.ravel())"])
    ]
    same_on_the_cpu(programs)
    stops_exactly_where_reported([None], programs, _read_line)
