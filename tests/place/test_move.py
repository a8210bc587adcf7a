"""to_device: tensors, batches, modules and optimizers, with ``meta`` as the second device."""

from __future__ import annotations

import collections
import dataclasses
import re
import warnings
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

import torchport as tp
from torchport import hardware
from torchport.place import UnregisteredTensorWarning

META = torch.device("meta")
GIB = 1024**3


class Pair(NamedTuple):
    first: Any
    second: Any


@dataclasses.dataclass(frozen=True)
class Sample:
    image: torch.Tensor
    label: torch.Tensor
    name: str = "s"


class OnlyDevice:
    """A ``.to`` that takes the device alone."""

    def __init__(self, t: torch.Tensor) -> None:
        self.t = t

    def to(self, device: torch.device) -> OnlyDevice:
        return OnlyDevice(self.t.to(device))


class Recorder:
    """A ``.to`` that records its keyword arguments (in a new list: the copy's own)."""

    def __init__(self) -> None:
        self.calls: list[tuple[torch.device, dict[str, Any]]] = []
        self.weight = torch.ones(2)

    def to(self, device: torch.device, **kwargs: Any) -> Recorder:
        self.calls = [*self.calls, (device, kwargs)]
        self.weight = self.weight.to(device)
        return self


def test_tensor_to_meta_and_same_device_is_no_copy() -> None:
    t = torch.arange(4.0)
    moved = tp.to_device(t, "meta")
    assert moved.device == META and moved.shape == t.shape and moved.dtype == t.dtype
    assert tp.to_device(t, "cpu") is t
    assert tp.to_device(t, torch.device("cpu"), dtype=torch.float32) is t


def test_dict_batch_to_meta_keeps_structure_and_sharing() -> None:
    x = torch.randn(2, 3)
    batch = {"x": x, "again": [x, {"deep": x}], "y": torch.arange(2), "text": "hi", "n": 3}
    out = tp.to_device(batch, "meta")
    assert out["x"].device == META and out["y"].device == META
    assert out["x"] is out["again"][0] is out["again"][1]["deep"]
    assert out["text"] == "hi" and out["n"] == 3
    assert batch["x"] is x and x.device.type == "cpu"  # input unchanged


def test_every_container_kind() -> None:
    t = torch.ones(2)
    dd: collections.defaultdict[str, Any] = collections.defaultdict(list)
    dd["t"] = t
    od = collections.OrderedDict([("b", t), ("a", torch.zeros(1))])
    batch = (dd, od, Pair(t, None), Sample(t, torch.tensor(1)), [OnlyDevice(t)])
    out = tp.to_device(batch, "meta")
    assert type(out) is tuple
    assert out[0].default_factory is list and out[0]["t"].device == META
    assert list(out[1]) == ["b", "a"] and out[1]["a"].device == META
    assert type(out[2]) is Pair and out[2].first.device == META and out[2].second is None
    assert type(out[3]) is Sample and out[3].label.device == META and out[3].name == "s"
    assert type(out[4][0]) is OnlyDevice and out[4][0].t.device == META


def test_objects_with_to_get_the_keywords_they_accept() -> None:
    rec = Recorder()
    out = tp.to_device({"r": rec, "again": rec}, "meta", dtype=torch.float16)
    # .to ran on a copy, once: the object met twice comes back as one object.
    assert out["r"] is out["again"] and out["r"] is not rec and rec.calls == []
    device, kwargs = out["r"].calls[0]
    assert len(out["r"].calls) == 1 and device == META
    # Not dtype: its tensors reach its .to cast already (floating ones only); a dtype
    # handed on would let the .to cast its integer tensors too.
    assert kwargs == {"non_blocking": False}
    (back,) = tp.to_device([rec], "meta", non_blocking=True)
    assert back.calls == [(META, {"non_blocking": True})] and rec.calls == []
    # Nothing to move: no copy, no call.
    assert tp.to_device([rec], "cpu", non_blocking=True)[0] is rec and rec.calls == []


def test_dtype_casts_floating_tensors_only() -> None:
    batch = {
        "f32": torch.randn(3),
        "f64": torch.randn(2, dtype=torch.float64),
        "i": torch.arange(3),
        "b": torch.tensor([True, False]),
        "c": torch.ones(2, dtype=torch.complex64),
    }
    out = tp.to_device(batch, "cpu", dtype=torch.bfloat16)
    assert out["f32"].dtype == torch.bfloat16 and out["f64"].dtype == torch.bfloat16
    assert torch.equal(out["f32"], batch["f32"].to(torch.bfloat16))
    assert out["i"] is batch["i"] and out["b"] is batch["b"] and out["c"] is batch["c"]
    on_meta = tp.to_device(batch, "meta", dtype=torch.float16)
    assert on_meta["f32"].dtype == torch.float16 and on_meta["i"].dtype == torch.int64


def test_dtype_must_be_floating() -> None:
    with pytest.raises(tp.ConfigError, match="not a floating-point dtype"):
        tp.to_device(torch.ones(1), "cpu", dtype=torch.int32)


@pytest.mark.parametrize("bad", ["gpu", "cuda:x", "", 5])
def test_bad_device_is_a_device_error(bad: Any, no_accelerator: object) -> None:
    with pytest.raises(tp.DeviceError, match="available: cpu"):
        tp.to_device({"x": torch.ones(1)}, bad)


@pytest.mark.parametrize("non_blocking", [None, True, False])
def test_cpu_values_survive_every_blocking_mode(non_blocking: bool | None) -> None:
    batch = {"x": torch.randn(5), "y": [torch.arange(3)]}
    out = tp.to_device(batch, "cpu", non_blocking=non_blocking, dtype=torch.float64)
    assert torch.equal(out["x"], batch["x"].double())
    assert out["y"][0] is batch["y"][0]


def test_skip_keys_left_as_they_are() -> None:
    meta = {"ids": torch.arange(2)}
    out = tp.to_device({"x": torch.ones(1), "meta": meta}, "meta", skip_keys=("meta",))
    assert out["x"].device == META and out["meta"] is meta


def test_unsupported_batch_names_the_path() -> None:
    # An object is copied without its constructor; this one refuses to be copied.
    class Rigid(Mapping[str, Any]):
        def __init__(self) -> None:
            self._items = {"x": torch.ones(1)}

        def __getitem__(self, key: str) -> Any:
            return self._items[key]

        def __iter__(self) -> Iterator[str]:
            return iter(self._items)

        def __len__(self) -> int:
            return len(self._items)

        def __copy__(self) -> Rigid:
            raise TypeError("Rigid objects are never copied")

    with pytest.raises(tp.UnsupportedBatchError, match=r"batch\['meta'\]\[2\].*never copied"):
        tp.to_device({"meta": [0, 1, Rigid()]}, "meta")


def test_requires_grad_follows_tensor_to() -> None:
    w = torch.ones(2, requires_grad=True)
    out = tp.to_device({"w": w}, "cpu", dtype=torch.float64)
    assert out["w"].requires_grad and out["w"].grad_fn is not None
    out["w"].sum().backward()
    assert w.grad is not None and torch.equal(w.grad, torch.ones(2))


# --- modules ----------------------------------------------------------------------------


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(2, 2)
        self.register_buffer("scale", torch.ones(2))
        self.mask = torch.ones(2)  # not registered: module.to() will not move it


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = Encoder()
        self.head = nn.Linear(2, 1)
        self.cache = [torch.zeros(1)]


def test_module_moves_in_place_and_warns_once_about_unregistered_tensors() -> None:
    net = Net()
    with pytest.warns(UnregisteredTensorWarning) as record:
        out = tp.to_device(net, "meta")
    assert out is net
    assert all(p.device == META for p in net.parameters())
    assert net.encoder.scale.device == META
    assert len(record) == 1
    message = str(record[0].message)
    assert "'encoder.mask' (cpu)" in message and "'cache' (cpu)" in message
    assert "register_buffer" in message
    assert issubclass(UnregisteredTensorWarning, UserWarning)


def test_clean_module_does_not_warn_and_casts_with_dtype() -> None:
    model = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tp.to_device(model, "cpu", dtype=torch.float64)
    assert model[0].weight.dtype == torch.float64
    assert model[1].num_batches_tracked.dtype == torch.int64  # not floating: untouched


def test_unregistered_tensor_already_on_target_is_not_reported() -> None:
    net = Encoder()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tp.to_device(net, "cpu")


# --- optimizers -------------------------------------------------------------------------


@pytest.fixture
def swap_params() -> Any:
    """Keep Parameter identity across cpu->meta, as cpu->cuda keeps it, so optimizers see it."""
    before = torch.__future__.get_swap_module_params_on_conversion()
    torch.__future__.set_swap_module_params_on_conversion(True)
    yield
    torch.__future__.set_swap_module_params_on_conversion(before)


def _adam_after_step(**kwargs: Any) -> tuple[nn.Module, torch.optim.Adam]:
    model = nn.Linear(3, 2)
    opt = torch.optim.Adam(model.parameters(), lr=0.1, **kwargs)
    model(torch.randn(4, 3)).sum().backward()
    opt.step()
    return model, opt


@pytest.mark.usefixtures("swap_params")
def test_optimizer_state_follows_params_and_step_stays_on_cpu() -> None:
    model, opt = _adam_after_step()
    tp.to_device(model, "meta")
    assert tp.to_device(opt, "meta") is opt
    for param in model.parameters():
        state = opt.state[param]
        assert state["exp_avg"].device == META and state["exp_avg_sq"].device == META
        assert state["step"].device.type == "cpu"


@pytest.mark.usefixtures("swap_params")
@pytest.mark.parametrize("flag", ["capturable", "fused"])
def test_capturable_or_fused_step_moves(flag: str) -> None:
    model, opt = _adam_after_step()
    # Set after the CPU step: both flags need an accelerator to step with.
    opt.param_groups[0][flag] = True
    tp.to_device(model, "meta")
    tp.to_device(opt, "meta")
    for param in model.parameters():
        step = opt.state[param]["step"]
        assert step.device == META and step.dtype == torch.float32


def test_optimizer_state_follows_param_dtype() -> None:
    model, opt = _adam_after_step()
    model.double()
    tp.to_device(opt, "cpu")
    for param in model.parameters():
        assert opt.state[param]["exp_avg"].dtype == torch.float64
        assert opt.state[param]["step"].dtype == torch.float32


# --- synchronization wiring --------------------------------------------------------------


def test_waits_once_per_source_device_for_cpu_targets(
    fake_accelerator: Callable[..., Any],
) -> None:
    backend = fake_accelerator([GIB, GIB])
    sources = [torch.device(d) for d in ("cuda:0", "cuda:0", "cuda:1", "cpu", "meta")]
    hardware.wait_for_copies(sources, torch.device("cpu"))
    assert sorted(map(str, backend.synchronized)) == ["cuda:0", "cuda:1"]
    backend.synchronized.clear()
    hardware.wait_for_copies(sources, torch.device("mps", 0))
    assert backend.synchronized == [torch.device("mps", 0)]
    backend.synchronized.clear()
    hardware.wait_for_copies(sources, torch.device("cuda", 0))  # stream order suffices
    assert backend.synchronized == []


def test_default_mode_is_the_only_one_that_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    from torchport.hardware import _copy

    waits: list[torch.device] = []
    monkeypatch.setattr(_copy, "wait_for_copies", lambda sources, target: waits.append(target))
    batch = {"x": torch.ones(2)}
    tp.to_device(batch, "cpu", dtype=torch.float64)
    assert waits == [torch.device("cpu")]
    tp.to_device(batch, "cpu", dtype=torch.float64, non_blocking=True)
    tp.to_device(batch, "cpu", dtype=torch.float64, non_blocking=False)
    tp.to_device(batch, "meta")
    assert waits == [torch.device("cpu")]


# --- pack -------------------------------------------------------------------------------


def test_pack_to_cpu_with_a_cast_keeps_values() -> None:
    batch = {"t": torch.arange(6.0).reshape(2, 3).t(), "i": torch.arange(3), "d": torch.ones(2)}
    out = tp.to_device(batch, "cpu", pack=True, dtype=torch.float64)
    assert torch.equal(out["t"], batch["t"].double()) and out["t"].shape == (3, 2)
    assert torch.equal(out["d"], torch.ones(2, dtype=torch.float64))
    assert out["i"] is batch["i"]  # already there with its dtype: not packed


def test_pack_via_meta_keeps_structure() -> None:
    batch = [torch.ones(2, 2), torch.arange(5), torch.zeros(0), torch.tensor(1.5)]
    out = tp.to_device(batch, "meta", pack=True)
    assert [(t.device, t.shape, t.dtype) for t in out] == [(META, t.shape, t.dtype) for t in batch]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_round_trip_values() -> None:
    batch = {"x": torch.randn(64, 3), "p": torch.randn(8).pin_memory(), "i": torch.arange(9)}
    on_gpu = tp.to_device(batch, "cuda")
    assert on_gpu["x"].is_cuda and on_gpu["i"].is_cuda
    back = tp.to_device(on_gpu, "cpu")  # default mode: synchronized before returning
    for key in batch:
        assert torch.equal(back[key], batch[key])
        assert not back[key].is_pinned()  # pageable: no RAM locked behind the caller's back
    packed = tp.to_device(batch, "cuda", pack=True, dtype=torch.float16)
    assert torch.equal(packed["x"].cpu(), batch["x"].half())


def test_cyclic_module_attribute_does_not_break_the_move() -> None:
    model = nn.Linear(2, 2)
    registry: dict[str, Any] = {}
    registry["self"] = registry
    model.registry = registry  # type: ignore[assignment]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tp.to_device(model, "meta") is model
    assert model.weight.device == META


def test_pack_copies_each_tensor_once() -> None:
    grad = torch.ones(2, requires_grad=True)
    batch = [torch.ones(3), torch.arange(4), grad]
    plan = hardware.plan_copy(batch, META, pack=True)
    assert plan.staged == [0, 1] and plan.packed  # the two plain tensors, in one pack
    assert plan.direct == [2]  # only the tensor that may not be packed goes alone
    out = tp.to_device(batch, "meta", pack=True)
    assert [t.device for t in out] == [META] * 3
    assert out[2].requires_grad


def test_pack_none_never_packs_where_packing_is_slower() -> None:
    """Automatic packing is for CUDA targets only; to the CPU and meta it was measured slower."""
    batch = [torch.ones(16) for _ in range(64)]
    assert not hardware.plan_copy(batch, META).packed
    assert not hardware.plan_copy(batch, torch.device("cpu"), dtype=torch.float64).packed


def test_batch_already_on_target_keeps_its_tensors() -> None:
    batch = {"x": torch.ones(2), "y": [torch.arange(3)], "n": 1}
    out = tp.to_device(batch, "cpu")
    assert out["x"] is batch["x"] and out["y"][0] is batch["y"][0]
    assert out is not batch and out["y"] is not batch["y"]  # containers are new
    mixed = {"cpu": torch.ones(1), "meta": torch.ones(1, device="meta")}
    moved = tp.to_device(mixed, "meta")
    assert moved["meta"] is mixed["meta"] and moved["cpu"].device == META


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_module_back_to_cpu_is_complete() -> None:
    model = nn.Linear(256, 256).cuda()
    expected = {k: v.cpu() for k, v in model.state_dict().items()}
    tp.to_device(model, "cpu")  # asynchronous copies, one wait
    for key, value in model.state_dict().items():
        assert value.is_cpu and torch.equal(value, expected[key])


# --- devices: one parser, the same answer everywhere --------------------------------------


def test_cpu_zero_is_the_cpu_and_copies_nothing() -> None:
    big = {"x": torch.ones(1000, 1000), "y": [torch.arange(10)]}
    out = tp.to_device(big, "cpu:0")
    assert out["x"] is big["x"] and out["y"][0] is big["y"][0]
    t = torch.ones(3)
    assert tp.to_device(t, torch.device("cpu", 0)) is t
    assert tp.to_device((t, t), "cpu:0")[0] is t


@pytest.mark.parametrize("bad", ["cpu:1", "meta:2", "xpu:7", "cuda:3", "gpu", 5])
def test_absent_devices_are_refused_naming_the_argument(
    bad: object, no_accelerator: object
) -> None:
    with pytest.raises(tp.DeviceError, match=rf"device={bad!r}") as info:
        tp.to_device(torch.ones(1), bad)  # type: ignore[arg-type]
    assert "available: cpu" in str(info.value)


def test_bare_accelerator_type_means_the_current_device(
    fake_accelerator: Callable[..., Any],
) -> None:
    fake_accelerator([GIB, 70 * GIB], current=0)  # pick_device() would choose index 1
    assert hardware.parse_device("cuda") == torch.device("cuda", 0)
    assert tp.pick_device("cuda") == torch.device("cuda", 1)  # policy, only when asked
    with pytest.raises(tp.DeviceError, match=r"device='cuda:2': index 2 is past the 2 cuda"):
        tp.to_device(torch.ones(1), "cuda:2")


# --- the direct path for small flat batches agrees with the general one --------------------

_flat_tensor = st.sampled_from(["cpu", "meta"]).flatmap(
    lambda dev: st.builds(lambda n: torch.zeros(n, device=dev), st.integers(0, 3))
)


@given(
    st.lists(_flat_tensor, min_size=0, max_size=40),
    st.sampled_from([tuple, list, dict]),
    st.sampled_from(["cpu", "meta"]),
    st.data(),
)
def test_flat_batches_move_like_nested_ones(
    pool: list[torch.Tensor], kind: type, target: str, data: st.DataObject
) -> None:
    # Repeat some tensors, so sharing must survive the direct path too.
    picks = data.draw(st.lists(st.integers(0, max(len(pool) - 1, 0)), max_size=len(pool)))
    items = pool + [pool[i] for i in picks] if pool else []
    batch: Any = {f"k{i}": t for i, t in enumerate(items)} if kind is dict else kind(items)
    if target == "cpu" and any(t.is_meta for t in items):
        return  # meta -> cpu has no data to copy; torch refuses it
    out = tp.to_device(batch, target)
    assert type(out) is kind
    values = list(out.values()) if kind is dict else list(out)
    assert len(values) == len(items)
    for src, got in zip(items, values, strict=True):
        assert got.device.type == target and got.shape == src.shape
        if src.device.type == target:
            assert got is src
    # Each source tensor maps to exactly one result object.
    by_source: dict[int, int] = {}
    for src, got in zip(items, values, strict=True):
        assert by_source.setdefault(id(src), id(got)) == id(got)
    if kind is not tuple:
        assert out is not batch  # a new container, the input untouched


def test_place_does_not_import_feed() -> None:
    import subprocess
    import sys

    code = (
        "import sys, torch, torchport as tp\n"
        "tp.to_device([torch.ones(2) for _ in range(8)], 'meta', pack=True)\n"
        "tp.to_device(torch.nn.Linear(2, 2), 'meta')\n"
        "assert 'torchport.feed' not in sys.modules, sorted(sys.modules)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize(
    "batch", [torch.ones(1), (torch.ones(1),), [torch.ones(1)], {"a": torch.ones(1)}]
)
def test_a_bad_skip_keys_is_reported_on_the_direct_path_too(batch: Any) -> None:
    with pytest.raises(tp.ConfigError, match="skip_keys"):
        tp.to_device(batch, "meta", skip_keys=3)  # type: ignore[arg-type]


def test_an_audit_predicts_the_copies_to_device_skips_on_the_host() -> None:
    # On a CPU run the tensors stay; on an accelerator each is a copy: the audit hears them.
    model = nn.Sequential(nn.Linear(4, 8), nn.Linear(8, 4))
    model[1].weight = model[0].weight  # tied: copied once  # type: ignore[assignment]
    batch = {"x": torch.ones(2, 4), "meta": {"ids": torch.arange(3)}, "name": "b"}
    with tp.audit() as report:
        tp.to_device(batch, "cpu")
        tp.to_device(model, "cpu")
        tp.to_device(torch.ones(5), "cpu")
    counts = sorted(e.count for e in report.entries if e.kind == "transfer")
    assert counts == [1, 2, 3]  # a tensor, a batch of two, a model of 3 distinct tensors
    assert report.would_copy_bytes == 5 * 4 + (2 * 4 * 4 + 3 * 8) + (32 + 8 + 4) * 4


# --- tensors torch cannot copy: named by their path ---------------------------------------------

_UNCOPYABLE = {
    "quantized": lambda: torch.quantize_per_tensor(torch.ones(3), 0.1, 0, torch.quint8),
    "nested": lambda: torch.nested.nested_tensor([torch.ones(2), torch.ones(3)]),
}


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors:UserWarning")
@pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor:UserWarning")
@given(
    kind=st.sampled_from(sorted(_UNCOPYABLE)),
    shape=st.sampled_from(["bare", "dict", "deep", "list", "ordered"]),
)
def test_a_tensor_torch_cannot_copy_is_refused_by_its_path(kind: str, shape: str) -> None:
    bad = _UNCOPYABLE[kind]()
    # An OrderedDict reordered by move_to_end (its order is no longer its dict's: the
    # path was once read from one order zipped with the items in the other, naming the
    # other key).
    ordered = collections.OrderedDict([("z", torch.ones(1)), ("b", bad)])
    ordered.move_to_end("z")
    batch, where = {
        "bare": (bad, "batch"),
        "ordered": (ordered, "batch['b']"),
        "dict": ({"ok": torch.ones(1), "bad": bad}, "batch['bad']"),
        "deep": ({"a": {"b": [torch.ones(1), bad]}, "n": 3}, "batch['a']['b'][1]"),
        "list": ([torch.ones(2), bad, "tag"], "batch[1]"),
    }[shape]
    with pytest.raises(tp.UnsupportedBatchError) as info:
        tp.to_device(batch, "meta")
    assert where in str(info.value) and kind in str(info.value)
    with pytest.raises(tp.UnsupportedBatchError, match=re.escape(where)):
        next(iter(tp.DeviceLoader([batch], device="meta")))


class _OwnTo:
    """An object with its own ``.to`` holding tensors in attributes and a dict."""

    def __init__(self, **state: Any) -> None:
        self.__dict__.update(state)

    def to(self, device: Any) -> _OwnTo:
        return _OwnTo(**{k: _to(v, device) for k, v in vars(self).items()})


def _to(value: Any, device: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(device)
    return {k: _to(v, device) for k, v in value.items()} if isinstance(value, dict) else value


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors:UserWarning")
@pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor:UserWarning")
@given(
    kind=st.sampled_from(sorted(_UNCOPYABLE)),
    inner=st.sampled_from(["attr", "dict"]),
    outer=st.sampled_from(["bare", "dict", "list"]),
    before=st.integers(0, 2),
)
def test_a_tensor_torch_cannot_copy_inside_an_own_to_object_is_named_by_its_path(
    kind: str, inner: str, outer: str, before: int
) -> None:
    # The walker finds an own-.to object's tensors by walking its state, without
    # paths: the error reads on through its attributes and items to name the tensor.
    bad = _UNCOPYABLE[kind]()
    good = {f"g{i}": torch.ones(i + 1) for i in range(before)}
    obj = _OwnTo(**good, bad=bad) if inner == "attr" else _OwnTo(**good, d={"k": bad})
    tail = ".bad" if inner == "attr" else ".d['k']"
    batch, where = {
        "bare": (obj, "batch"),
        "dict": ({"n": 1, "o": obj}, "batch['o']"),
        "list": ([torch.ones(1), obj], "batch[1]"),
    }[outer]
    for move in (
        lambda b: tp.to_device(b, "meta"),
        lambda b: next(iter(tp.DeviceLoader([b], "meta"))),
    ):
        with pytest.raises(tp.UnsupportedBatchError) as info:
            move(batch)
        message = str(info.value)
        assert message.startswith(f"{where}{tail} is a {kind} tensor"), message


class _Refusing(torch.Tensor):
    """A tensor whose copies raise ``error``: a subclass or a backend refusing the copy itself
    (MPS raises ``TypeError`` for float64; a subclass may raise ``RuntimeError``)."""

    error: type[Exception] = RuntimeError

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if func is torch.Tensor.to:
            raise cls.error("refuses the copy")
        return super().__torch_function__(func, types, args, kwargs or {})


class _RefusingType(_Refusing):
    error = TypeError


class _OutOfMemory(_Refusing):
    error = torch.OutOfMemoryError


_REFUSING = {RuntimeError: _Refusing, TypeError: _RefusingType}


@given(
    error=st.sampled_from([RuntimeError, TypeError]),
    shape=st.sampled_from(["bare", "dict", "deep", "own_to", "own_to_dict", "module"]),
    way=st.sampled_from(["to_device", "loader"]),
)
def test_a_tensor_whose_copy_raises_is_refused_by_its_path_and_reason(
    error: type[Exception], shape: str, way: str
) -> None:
    # Every failure to copy a leaf, not only torch's NotImplementedError: named by its
    # path (read by the test from where it put the tensor) with torch's reason.
    cls = _REFUSING[error]
    bad = torch.ones(2).as_subclass(cls)
    module = torch.nn.Linear(1, 1)
    module.register_buffer("bad", bad)
    batch, where = {
        "bare": (bad, "batch"),
        "dict": ({"ok": torch.ones(1), "bad": bad}, "batch['bad']"),
        "deep": ({"a": ({"b": [torch.ones(1), bad]},), "n": 3}, "batch['a'][0]['b'][1]"),
        "own_to": ([torch.ones(1), _OwnTo(g=torch.ones(1), bad=bad)], "batch[1].bad"),
        "own_to_dict": ({"o": _OwnTo(d={"k": bad})}, "batch['o'].d['k']"),
        "module": (module, "Linear 'bad'"),
    }[shape]
    if shape == "module" and way == "loader":
        return  # modules are moved by to_device only
    with pytest.raises(tp.UnsupportedBatchError) as info:
        if way == "loader":
            next(iter(tp.DeviceLoader([batch], device="meta")))
        else:
            tp.to_device(batch, "meta")
    message = str(info.value)
    assert message.startswith(f"{where} is a {cls.__qualname__} (torch.Tensor subclass)"), message
    assert f"({error.__name__}: refuses the copy)" in message
    assert module.weight.device.type == "cpu"  # nothing moved


def test_running_out_of_memory_is_not_the_leafs_fault_and_stays_torchs_error() -> None:
    bad = torch.ones(2).as_subclass(_OutOfMemory)
    module = torch.nn.Linear(1, 1)
    module.register_buffer("bad", bad)
    for move in (
        lambda: tp.to_device({"a": [torch.ones(1), bad]}, "meta"),
        lambda: next(iter(tp.DeviceLoader([{"a": bad}], device="meta"))),
        lambda: tp.to_device(module, "meta"),
    ):
        with pytest.raises(torch.OutOfMemoryError):
            move()


def test_a_meta_tensor_cannot_come_back_and_says_where_it_is() -> None:
    with pytest.raises(tp.UnsupportedBatchError, match=r"batch\['w'\] is a meta"):
        tp.to_device({"w": torch.ones(2, device="meta"), "b": torch.ones(1)}, "cpu")
