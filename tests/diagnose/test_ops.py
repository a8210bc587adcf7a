"""The op table: kinds, labels and argument conditions, checked against real aten overloads."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from torchport.diagnose import _indexing, _moves, _on_device, _ops
from torchport.diagnose._host_held import HOST_FACTORIES
from torchport.diagnose._moves import transfer_of
from torchport.diagnose._ops import OpKind, aten_entry, method_entry

aten = torch.ops.aten
META = torch.device("meta")


def _applies(entry: _ops.OpEntry, args: tuple[object, ...], kwargs: dict[str, object]) -> bool:
    """Whether the entry counts a call with these arguments (no condition: always)."""
    return entry.applies is None or entry.applies(args, kwargs)


def test_every_table_key_names_a_real_aten_op() -> None:
    for key in _ops._ATEN:
        packet, _, overload = key.partition(".")
        op = getattr(aten, packet)  # raises on a typo
        if overload:
            assert overload in op.overloads(), key


def test_every_entry_has_a_kind_and_a_label() -> None:
    for entry in _ops._ATEN.values():
        assert entry.kind is not OpKind.NEITHER
        assert entry.label.strip()
    for func, entry in _ops.METHOD_TABLE.items():
        # NEITHER only for the factories followed to the host (diagnose._host_held)
        assert (entry.kind is OpKind.NEITHER) == (func in HOST_FACTORIES), func
        assert entry.label.strip()


@pytest.mark.parametrize(
    ("op", "kind"),
    [
        (aten._local_scalar_dense.default, OpKind.SYNC),
        (aten.equal.default, OpKind.SYNC),
        (aten.nonzero.default, OpKind.SHAPE_SYNC),
        (aten.masked_select.default, OpKind.SHAPE_SYNC),
        (aten._unique2.default, OpKind.SHAPE_SYNC),
        (aten.repeat_interleave.Tensor, OpKind.SHAPE_SYNC),
        (aten._to_copy.default, OpKind.TRANSFER),
        (aten.copy_.default, OpKind.TRANSFER),
    ],
)
def test_known_ops(op: object, kind: OpKind) -> None:
    entry = aten_entry(op)
    assert entry is not None and entry.kind is kind


@pytest.mark.parametrize(
    "op",
    [
        aten.add.Tensor,
        aten.mm.default,
        aten.repeat_interleave.self_int,  # int repeats: the size is known on the host
        aten.nonzero_static.default,
        aten.index_select.default,
    ],
)
def test_ops_that_neither_copy_nor_wait(op: object) -> None:
    assert aten_entry(op) is None


def test_non_ops_are_unknown() -> None:
    assert aten_entry(object()) is None
    assert aten_entry(len) is None


def test_bool_indices_make_index_a_shape_sync() -> None:
    entry = aten_entry(aten.index.Tensor)
    assert entry is not None
    x = torch.arange(4)
    assert _applies(entry, (x, [x > 1]), {})
    assert _applies(entry, (x, [None, x.to(torch.uint8)]), {})
    assert not _applies(entry, (x, [torch.tensor([0, 2])]), {})
    assert not _applies(entry, (x, [None]), {})


def test_repeat_interleave_with_output_size_does_not_wait() -> None:
    entry = aten_entry(aten.repeat_interleave.Tensor)
    assert entry is not None
    repeats = torch.tensor([1, 2])
    assert _applies(entry, (repeats,), {})
    assert not _applies(entry, (repeats,), {"output_size": 3})


def test_to_copy_counts_only_a_device_change() -> None:
    entry = aten_entry(aten._to_copy.default)
    assert entry is not None
    x = torch.ones(3)
    assert _applies(entry, (x,), {"device": META})
    assert not _applies(entry, (x,), {"device": torch.device("cpu")})
    assert not _applies(entry, (x,), {"dtype": torch.float64})


@given(
    rows=st.integers(0, 6),
    cols=st.integers(1, 6),
    dtype=st.sampled_from([torch.float32, torch.float16, torch.int64, torch.bool]),
)
def test_transfer_sizes(rows: int, cols: int, dtype: torch.dtype) -> None:
    src = torch.zeros(rows, cols, dtype=dtype)
    out = src.to(META)
    expected = rows * cols * src.element_size()
    assert transfer_of(aten._to_copy.default, (src,), {"device": META}, out) == (
        torch.device("cpu"),
        META,
        expected,
    )
    dst = torch.empty(rows, cols, dtype=dtype, device=META)
    assert transfer_of(aten.copy_.default, (dst, src), {}, dst) == (
        torch.device("cpu"),
        META,
        expected,
    )
    copy_entry = aten_entry(aten.copy_.default)
    assert copy_entry is not None and _applies(copy_entry, (dst, src), {})
    assert not _applies(copy_entry, (src, src.clone()), {})


def test_python_level_methods() -> None:
    item = method_entry(torch.Tensor.item)
    assert item is not None and item.kind is OpKind.SYNC and ".item()" in item.label
    for method in (
        torch.Tensor.tolist,
        torch.Tensor.numpy,
        torch.Tensor.__bool__,
        torch.Tensor.__repr__,
        torch.Tensor.__format__,
    ):
        assert method_entry(method) is not None
    assert method_entry(torch.add) is None
    assert method_entry([]) is None  # unhashable: not in the table, no error


def test_tensor_creation_is_watched_when_it_names_a_device_or_makes_on_the_host() -> None:
    entry = method_entry(torch.tensor)
    assert entry is not None and entry.kind is OpKind.TRANSFER
    assert _applies(entry, ([1.0],), {"device": "meta"})
    # "cpu" may be the program's device held in a variable: the recorder asks the call
    # site; from the values alone, a string naming the CPU is taken for the host
    assert _applies(entry, ([1.0],), {"device": "cpu"})
    assert _moves.names_host(torch.tensor, ([1.0],), {"device": "cpu"})
    assert not _moves.names_host(torch.tensor, ([1.0],), {"device": torch.device("cpu")})
    # no device: made on the host in the accelerator run too, followed (._host_held)
    assert _applies(entry, ([1.0],), {})
    # a tensor's copy without a device goes where the tensor is: not the host's
    assert not _applies(entry, (torch.ones(2),), {})
    assert not _applies(entry, ([1.0],), {"device": "no-such-device"})
    out = torch.tensor([1.0, 2.0], device=META)
    assert transfer_of(torch.tensor, ([1.0, 2.0],), {"device": "meta"}, out) == (
        torch.device("cpu"),
        META,
        8,
    )


def test_op_names_are_short_and_public() -> None:
    assert _ops.op_name(aten._to_copy.default) == "aten::_to_copy"
    assert _ops.op_name(torch.Tensor.item) == "Tensor.item"
    assert _ops.op_name(torch.tensor) == "torch.tensor"
    assert _ops.op_name(torch.Tensor.__repr__) == "Tensor.__repr__"


def test_read_bytes() -> None:
    x = torch.zeros(3, 2, dtype=torch.float16)
    assert _ops.read_bytes(torch.Tensor.tolist, x) == 12
    assert _ops.read_bytes(torch.Tensor.numpy, x) == 12
    assert _ops.read_bytes(torch.Tensor.item, x[0, 0]) == 2
    assert _ops.read_bytes(aten._local_scalar_dense.default, x[0, 0]) == 2
    assert _ops.read_bytes(aten.nonzero.default, x) == 0


def test_non_blocking_flag() -> None:
    x = torch.ones(2)
    assert _moves.non_blocking(aten._to_copy.default, (x,), {"non_blocking": True})
    assert not _moves.non_blocking(aten._to_copy.default, (x,), {})
    assert _moves.non_blocking(aten.copy_.default, (x, x, True), {})
    assert not _moves.non_blocking(aten.copy_.default, (x, x), {})


# -- the accelerator's view: what an op costs with its real arguments ------------------------

DEV = torch.device("meta")  # stands in for an accelerator: not the host
HOST = torch.device("cpu")


def _index_put_args(
    indices: list[str], value: str, accumulate: bool
) -> tuple[tuple[object, ...], dict[str, object]]:
    self = torch.empty(4, 4, device=DEV)
    made = {
        "none": None,
        "device mask": torch.empty(4, dtype=torch.bool, device=DEV),
        "host mask": torch.tensor([True, False, True, False]),
        "device long": torch.empty(2, dtype=torch.long, device=DEV),
        "host long": torch.tensor([0, 1]),
    }
    values = {
        "host number": torch.tensor(0.5),  # x[m] = 0.5 wraps the number on the host
        "device number": torch.empty((), device=DEV),
        "host vector": torch.ones(2),
    }
    return (self, [made[i] for i in indices], values[value], accumulate), {}


_INDEX_KINDS = ["none", "device mask", "host mask", "device long", "host long"]


@given(
    indices=st.lists(st.sampled_from(_INDEX_KINDS), min_size=1, max_size=2),
    value=st.sampled_from(["host number", "device number", "host vector"]),
    accumulate=st.booleans(),
)
def test_index_put_on_a_device_waits_unless_it_is_a_masked_fill(
    indices: list[str], value: str, accumulate: bool
) -> None:
    args, kwargs = _index_put_args(indices, value, accumulate)
    # ATen's canDispatchToMaskedFill, restated: not accumulating, a one-element value on
    # the host, exactly one index tensor, a mask on self's device
    tensors = [i for i in indices if i != "none"]
    masked_fill = not accumulate and value == "host number" and tensors == ["device mask"]
    assert _indexing.masked_fill_dispatch(args, kwargs) is masked_fill
    waits = not masked_fill and "device mask" in indices
    found = _on_device.syncs_on_device(aten.index_put_.default, args, kwargs)
    assert (found is not None) is waits
    if found is not None:
        assert found.kind is OpKind.SYNC
    copies = _on_device.copies_on_device(aten.index_put_.default, args, kwargs)
    host_tensors = sum(i.startswith("host") for i in indices)
    host_value = value.startswith("host") and not masked_fill
    assert len(copies) == host_tensors + host_value
    assert all(src == HOST and dst == DEV for src, dst, _ in copies)


def test_reads_and_data_dependent_shapes_wait_only_for_a_device_tensor() -> None:
    on_device = torch.empty(3, device=DEV)
    on_host = torch.ones(3)
    for op, args in [
        (aten._local_scalar_dense.default, (torch.empty((), device=DEV),)),
        (aten.nonzero.default, (on_device,)),
        (aten.masked_select.default, (on_device, torch.empty(3, dtype=torch.bool, device=DEV))),
        (aten._unique2.default, (on_device,)),
        (aten.repeat_interleave.Tensor, (torch.empty(3, dtype=torch.long, device=DEV),)),
        (aten.index.Tensor, (on_device, [torch.empty(3, dtype=torch.bool, device=DEV)])),
    ]:
        assert _on_device.syncs_on_device(op, args, {}) is not None, op
        host_args = tuple(
            torch.zeros(a.shape, dtype=a.dtype) if isinstance(a, torch.Tensor) else a for a in args
        )
        if op is aten.index.Tensor:
            host_args = (on_host, [torch.tensor([True, False, True])])
        assert _on_device.syncs_on_device(op, host_args, {}) is None, op  # stays on the host
    # repeat_interleave told its output size: no wait
    repeats = torch.empty(3, dtype=torch.long, device=DEV)
    assert (
        _on_device.syncs_on_device(aten.repeat_interleave.Tensor, (repeats,), {"output_size": 6})
        is None
    )
    # a host mask indexing a device tensor: nonzero on the host, then a copy, no wait
    mask = torch.tensor([True, False, True])
    assert _on_device.syncs_on_device(aten.index.Tensor, (on_device, [mask]), {}) is None
    assert _on_device.copies_on_device(aten.index.Tensor, (on_device, [mask]), {}) == [
        (HOST, DEV, 16)
    ]
    assert _on_device.syncs_on_device(aten.add.Tensor, (on_device, on_device), {}) is None


def test_moves_copy_only_between_different_devices() -> None:
    x = torch.ones(3)
    assert _on_device.copies_on_device(aten._to_copy.default, (x,), {"device": DEV}) == [
        (HOST, DEV, 12)
    ]
    assert _on_device.copies_on_device(aten._to_copy.default, (x,), {"device": HOST}) == []
    assert _on_device.copies_on_device(aten._to_copy.default, (x,), {"dtype": torch.uint8}) == []
    assert _on_device.copies_on_device(aten.copy_.default, (torch.empty(3, device=DEV), x), {}) == [
        (HOST, DEV, 12)
    ]
    assert _on_device.copies_on_device(aten.mm.default, (x, x), {}) == []


@given(
    index=st.one_of(
        st.lists(st.integers(-3, 2), min_size=1, max_size=4),
        st.lists(st.booleans(), min_size=3, max_size=3),
        st.lists(st.lists(st.integers(0, 2), min_size=2, max_size=2), min_size=1, max_size=3),
    ),
    as_array=st.booleans(),
)
def test_a_list_or_array_index_is_a_copy_of_the_tensor_torch_builds_from_it(
    index: list[object], as_array: bool
) -> None:
    import numpy as np

    part = np.array(index) if as_array else index
    built = torch.as_tensor(np.array(index))  # what torch makes of it on the host
    # int64 indices, or a bool mask (indexing_tensor_from_data keeps bools), copied whole
    expected = built.numel() * (1 if built.dtype is torch.bool else 8)
    assert _indexing.host_index_bytes(part) == expected
    assert _indexing.host_index_bytes((slice(None), part)) == expected
    assert _indexing.host_index_bytes((slice(None), 0)) == 0


def test_one_hot_reads_the_max_only_without_num_classes() -> None:
    import torch.nn.functional as F

    import torchport as tp

    labels = torch.tensor([0, 2, 1])
    with tp.audit() as given_classes:
        F.one_hot(labels, 3)
        F.one_hot(labels, num_classes=3)
    assert given_classes.entries == []  # the CPU kernel's range checks are no wait on CUDA
    with tp.audit() as no_classes:
        F.one_hot(labels)
    (entry,) = no_classes.entries
    assert (entry.kind, entry.count, entry.would_sync) == ("sync", 1, True)


def test_list_and_array_indices_are_copies_and_a_number_by_mask_is_no_wait() -> None:
    import numpy as np

    import torchport as tp

    v = torch.arange(6.0).view(2, 3)
    with tp.audit() as report:
        v[:, [-1]]
        v[np.array([1, 0])]
        v[v > 2] = 0.0
    assert sorted((e.kind, e.bytes, e.would_sync) for e in report.entries) == [
        ("transfer", 8, True),
        ("transfer", 16, True),
    ]
