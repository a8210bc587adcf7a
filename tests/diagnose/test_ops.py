"""The op table: kinds, labels and argument conditions, checked against real aten overloads."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from torchport.diagnose import _ops
from torchport.diagnose._ops import OpKind, aten_entry, method_entry, transfer_of

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
    for entry in [*_ops._ATEN.values(), *_ops.METHOD_TABLE.values()]:
        assert entry.kind is not OpKind.NEITHER
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


def test_tensor_creation_is_watched_whenever_it_names_a_device() -> None:
    entry = method_entry(torch.tensor)
    assert entry is not None and entry.kind is OpKind.TRANSFER
    assert _applies(entry, ([1.0],), {"device": "meta"})
    # "cpu" may be the program's device held in a variable: the recorder asks the call
    # site; from the values alone, a string naming the CPU is taken for the host
    assert _applies(entry, ([1.0],), {"device": "cpu"})
    assert _ops.names_host(torch.tensor, ([1.0],), {"device": "cpu"})
    assert not _ops.names_host(torch.tensor, ([1.0],), {"device": torch.device("cpu")})
    assert not _applies(entry, ([1.0],), {})
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
    assert _ops.non_blocking(aten._to_copy.default, (x,), {"non_blocking": True})
    assert not _ops.non_blocking(aten._to_copy.default, (x,), {})
    assert _ops.non_blocking(aten.copy_.default, (x, x, True), {})
    assert not _ops.non_blocking(aten.copy_.default, (x, x), {})
