"""to_device: tensors, batches, modules and optimizers, with ``meta`` as the second device."""

from __future__ import annotations

import collections
import dataclasses
import warnings
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

import pytest
import torch
from torch import nn

import torchport as tp
from torchport.place import UnregisteredTensorWarning, _move

META = torch.device("meta")


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
    """A ``.to`` that records its keyword arguments."""

    def __init__(self) -> None:
        self.calls: list[tuple[torch.device, dict[str, Any]]] = []

    def to(self, device: torch.device, **kwargs: Any) -> Recorder:
        self.calls.append((device, kwargs))
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
    tp.to_device({"r": rec, "again": rec}, "meta", dtype=torch.float16)
    assert len(rec.calls) == 1  # shared objects are moved once
    device, kwargs = rec.calls[0]
    assert device == META
    assert kwargs == {"non_blocking": False, "dtype": torch.float16}
    rec.calls.clear()
    tp.to_device([rec], "cpu", non_blocking=True)
    assert rec.calls == [(torch.device("cpu"), {"non_blocking": True})]


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
def test_bad_device_is_a_device_error(bad: Any) -> None:
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
    # A Mapping that is not a dict is rebuilt through its constructor, which here
    # takes other arguments. (Dataclasses and builtin subclasses are copied, never
    # constructed: tests/place/test_tree_containers.py.)
    class Rigid(Mapping[str, Any]):
        def __init__(self) -> None:
            self._items = {"x": torch.ones(1)}

        def __getitem__(self, key: str) -> Any:
            return self._items[key]

        def __iter__(self) -> Iterator[str]:
            return iter(self._items)

        def __len__(self) -> int:
            return len(self._items)

    with pytest.raises(tp.UnsupportedBatchError, match=r"batch\['meta'\]\[2\]"):
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


class _FakeSource:
    """Stands in for a tensor on an accelerator this machine lacks."""

    def __init__(self, device: str) -> None:
        self.device = torch.device(device)
        self.is_cpu = self.device.type == "cpu"
        self.is_meta = self.device.type == "meta"


def test_waits_once_per_source_device_for_cpu_targets(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[torch.device] = []
    monkeypatch.setattr(_move, "_synchronize", calls.append)
    sources: Any = [_FakeSource(d) for d in ("cuda:0", "cuda:0", "cuda:1", "cpu", "meta")]
    _move._wait_for_copies(sources, torch.device("cpu"))
    assert sorted(map(str, calls)) == ["cuda:0", "cuda:1"]
    calls.clear()
    _move._wait_for_copies(sources, torch.device("mps", 0))
    assert calls == [torch.device("mps", 0)]


def test_default_mode_is_the_only_one_that_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[torch.device] = []
    monkeypatch.setattr(_move, "_wait_for_copies", lambda sources, target: waits.append(target))
    monkeypatch.setattr(_move, "_accelerator_present", lambda: True)
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


def test_pack_copies_each_tensor_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from torchport.feed import _pack

    calls: list[int] = []
    real = _pack.pack_to_device

    def counting(tensors: Any, device: Any, **kwargs: Any) -> list[torch.Tensor]:
        calls.append(len(tensors))
        return real(tensors, device, **kwargs)

    monkeypatch.setattr(_pack, "pack_to_device", counting)
    copied: list[torch.Tensor] = []
    monkeypatch.setattr(
        _move,
        "_copy_each",
        lambda ts, target, nb, dtype: copied.extend(ts) or [t.to(target) for t in ts],
    )
    grad = torch.ones(2, requires_grad=True)
    batch = [torch.ones(3), torch.arange(4), grad]
    out = tp.to_device(batch, "meta", pack=True)
    assert calls == [2]  # the two plain tensors, in one pack
    assert copied == [grad]  # only the tensor that may not be packed goes alone
    assert [t.device for t in out] == [META] * 3


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
