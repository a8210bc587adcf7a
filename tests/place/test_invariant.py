"""The invariant of ``to_device``, checked by the reachability oracle on generated object graphs.

After ``to_device(graph, target)`` returns, every tensor reachable from the result
is on ``target`` (or sits under a skipped key), the input is unchanged, every value
is unchanged and tensors shared in the input are shared in the result; or the call
raised ``UnsupportedBatchError`` naming a path, which a generated graph may cause
only by containing itself. The graphs (``graphs.py``) mix every class of input
that once broke the walker, with shared tensors and cycles; the oracle
(``reachability.py``) shares no code with it.

The default run draws a few dozen graphs per test. The long profile (at least
5,000 graphs) runs on demand:
``TORCHPORT_GRAPHS=5000 .venv/bin/python -m pytest -m slow tests/place/test_invariant.py``.
"""

from __future__ import annotations

import copy
import os
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import torchport as tp
from tests.place.siblings import load
from torchport.place._tree import flatten_tensors

graphs = load("graphs")
reach = load("reachability")

META = torch.device("meta")
CPU = torch.device("cpu")
LONG = int(os.environ.get("TORCHPORT_GRAPHS", "0"))

# Tensors drawn again and again, so that graphs share them (some already on meta).
POOL = [
    torch.ones(2),
    torch.arange(6).reshape(2, 3).t(),
    torch.zeros(1, 2, 2, 2).contiguous(memory_format=torch.channels_last),
    torch.tensor(3),
    torch.ones(2, device="meta"),
]
CPU_POOL = POOL[:4]


def _close_cycle(graph: Any, data: st.DataObject) -> bool:
    """Maybe give one object of the graph an attribute pointing back at the root."""
    holders = graphs.objects_in(graph)
    if not holders or not data.draw(st.booleans(), label="cycle"):
        return False
    holder = data.draw(st.sampled_from(holders), label="holder")
    object.__setattr__(holder, "back", graph)
    return True


def _moves_none(graph: Any, target: torch.device) -> bool:
    """Whether an object in ``graph`` has a ``.to`` that moves none of its tensors (none there)."""
    for _, node, _ in reach.walk(graph):
        if isinstance(node, torch.Tensor) or not callable(getattr(type(node), "to", None)):
            continue
        own = [t for _, t in reach.tensors(node)]
        if own and not any(t.device == target for t in own):
            ids = {id(t) for t in own}
            moved = copy.copy(node).to(target)
            if all(id(t) in ids for _, t in reach.tensors(moved)):
                return True
    return False


def check_graph(graph: Any, data: st.DataObject, target: torch.device, **options: Any) -> None:
    cyclic = _close_cycle(graph, data)
    skip = options.get("skip_keys", ())
    taken = reach.snapshot(graph)
    try:
        out = tp.to_device(graph, target, **options)
    except tp.UnsupportedBatchError as exc:
        # Read first: the oracle below calls objects' own .to on shallow copies, and a .to
        # that writes into what the copy shares (PyG's apply) changes the input itself.
        assert reach.snapshot(graph) == taken, "a refused call changed its input"
        # Or an object's own .to moves none of its tensors, none of them there yet
        # (place/_moved_none.py), as the oracle finds by calling it on a copy itself.
        allowed = cyclic or ("moved none" in str(exc) and _moves_none(graph, target))
        assert allowed, f"refused a graph without a cycle: {exc}"
        assert "batch" in str(exc)  # the message names where
        return
    dtype = options.get("dtype")

    def cast(t: torch.Tensor) -> torch.dtype:
        return dtype if dtype is not None and t.is_floating_point() else t.dtype

    try:
        reach.check_move(graph, taken, out, target, skip=frozenset(skip), cast=cast)
    except AssertionError as exc:
        raise AssertionError(
            f"{exc}\ninput:  {reach.describe(graph)}\nresult: {reach.describe(out)}"
        ) from None


_options = st.fixed_dictionaries(
    {},
    optional={
        "skip_keys": st.sampled_from([("ids",), "x"]),
        "pack": st.sampled_from([None, True, False]),
    },
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs.graphs(POOL), _options, st.data())
def test_to_meta_keeps_the_invariant(graph: Any, options: dict[str, Any], data: Any) -> None:
    check_graph(graph, data, META, **options)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs.graphs(CPU_POOL), st.sampled_from([None, torch.float64]), st.data())
def test_to_cpu_keeps_values_and_casts_floats(
    graph: Any, dtype: torch.dtype | None, data: Any
) -> None:
    # Only CPU tensors here: values are compared, and meta tensors have none.
    if any(t.is_meta for _, t in reach.tensors(graph)):
        return
    check_graph(graph, data, CPU, dtype=dtype)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs.graphs(CPU_POOL))
def test_a_move_to_where_everything_is_keeps_every_tensor(graph: Any) -> None:
    if any(t.is_meta for _, t in reach.tensors(graph)):
        return
    taken = reach.snapshot(graph)
    try:
        out = tp.to_device(graph, CPU)
    except tp.UnsupportedBatchError:
        return  # nothing here is refused without a cycle; the tests above say so
    reach.check_move(graph, taken, out, CPU)
    for (_, x), (_, y) in zip(reach.tensors(graph), reach.tensors(out), strict=True):
        assert y is x


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs.graphs(POOL))
def test_flatten_then_rebuild_gives_the_graph_back(graph: Any) -> None:
    found, rebuild = flatten_tensors(graph)
    assert len({id(t) for t in found}) == len(found)
    assert {id(t) for _, t in reach.tensors(graph)} == {id(t) for t in found}
    taken = reach.snapshot(graph)
    reach.check_move(graph, taken, rebuild(found), META, check_device=False)


@pytest.mark.slow
@pytest.mark.skipif(not LONG, reason="set TORCHPORT_GRAPHS=N to run the long profile")
@settings(max_examples=max(LONG, 1), deadline=None, suppress_health_check=list(HealthCheck))
@given(graphs.graphs(POOL, max_leaves=16), _options, st.data())
def test_to_meta_keeps_the_invariant_long(graph: Any, options: dict[str, Any], data: Any) -> None:
    check_graph(graph, data, META, **options)


def test_a_set_whose_tensors_a_cast_reorders_is_paired_alike() -> None:
    # Found by hypothesis on a clean clone: the oracle sorted a set's tensors by dtype,
    # which dtype= changes for floating tensors only, so input and result paired apart.
    batch = {
        "owner": {torch.zeros(0, dtype=torch.bfloat16), torch.tensor(1.0, dtype=torch.float16)}
    }
    taken = reach.snapshot(batch)
    out = tp.to_device(batch, "cpu", dtype=torch.float64)

    def cast(t: torch.Tensor) -> torch.dtype:
        return torch.float64 if t.is_floating_point() else t.dtype

    reach.check_move(batch, taken, out, torch.device("cpu"), skip=frozenset(), cast=cast)
