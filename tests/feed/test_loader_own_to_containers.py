"""DeviceLoader gives for a container of objects with their own ``.to`` what ``to_device`` gives.

The invariant: a batch that is a builtin dict, list or tuple holding objects with
their own ``.to`` (and tensors, values, tuples of values, any node held again) comes
out of the loader, on the blocking path and on the CUDA path (streams and events
faked at the hardware floor, the meta device as the target), as ``to_device`` moves
it: the same refusal (its path), or the same result node by node (each node's type,
the input node it is, its tensors' device, what is held twice), the input untouched
(a batch in which nothing moves may come back as it is). The oracle: ``to_device``'s
answer for the same batch, compared by the description
``tests/place/test_whole_held_walker.py`` writes (which shares no code with
torchport), and the suite's reachability walk for the promise itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import torchport as tp
from tests.place.siblings import load
from tests.place.test_whole_held_walker import _batches, _described, _register

_reach = load("reachability")

META = torch.device("meta")
GIB = 1024**3


def _outcome(move: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return "result", move()
    except tp.UnsupportedBatchError as exc:
        return "refused", str(exc).split(" of type ")[0]  # "cannot rebuild <path>"


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=_batches(), way=st.sampled_from(["blocking", "cuda path"]))
def test_a_container_of_objects_through_the_loader_is_what_to_device_gives(
    fake_accelerator: Callable[..., Any], batch: Any, way: str
) -> None:
    _register()
    taken = _reach.snapshot(batch)
    want_kind, want = _outcome(lambda: tp.to_device(batch, META))
    assert _reach.snapshot(batch) == taken
    if way == "cuda path":
        fake_accelerator([GIB])
    loader = tp.DeviceLoader([batch], META, depth=1, pack=False)
    kind, got = _outcome(lambda: next(iter(loader._iter_async() if way == "cuda path" else loader)))
    assert _reach.snapshot(batch) == taken, "the input changed"
    if want_kind == "refused":
        assert (kind, got.split(" of type ")[0] if kind == "refused" else got) == (
            want_kind,
            want,
        )
        return
    assert kind == "result", got
    if got is not batch:  # (the loader hands back a batch with nothing to move as it is)
        assert _described(got, batch) == _described(want, batch)
    left = _reach.left_by_own_to(batch, META)
    assert all(t.is_meta or path in left for path, t in _reach.tensors(got))
