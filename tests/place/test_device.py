"""pick_device and available_devices: the choice order, errors, and no side effects.

Accelerators are simulated by ``fake_accelerator`` (tests/conftest.py), which installs a
fake backend at the hardware floor, the only code that asks torch about hardware.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from typing import Any

import pytest
import torch

import torchport as tp
from torchport import hardware

GIB = 1024**3

Install = Callable[..., Any]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TORCHPORT_DEVICE", raising=False)
    monkeypatch.delenv("LOCAL_RANK", raising=False)


# --- order -----------------------------------------------------------------------------


def test_no_accelerator_gives_cpu(no_accelerator: object) -> None:
    # The backend reports no accelerator (on any machine) and the environment is clean.
    assert tp.pick_device() == torch.device("cpu")


def test_accelerator_with_most_free_memory(fake_accelerator: Install) -> None:
    fake_accelerator([10 * GIB, 70 * GIB, 30 * GIB])
    assert tp.pick_device() == torch.device("cuda", 1)


def test_unreadable_free_memory_falls_back_to_index_zero(fake_accelerator: Install) -> None:
    fake_accelerator([10 * GIB, None, 30 * GIB])
    assert tp.pick_device() == torch.device("cuda", 0)


def test_single_accelerator_skips_memory_probe(fake_accelerator: Install) -> None:
    backend = fake_accelerator([GIB], kind="xpu")
    assert tp.pick_device() == torch.device("xpu", 0)
    assert backend.memory_reads == 0  # one device needs no memory probe


def test_local_rank_picks_the_index(
    fake_accelerator: Install, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_accelerator([70 * GIB, 10 * GIB, 10 * GIB, 10 * GIB])
    monkeypatch.setenv("LOCAL_RANK", "2")
    assert tp.pick_device() == torch.device("cuda", 2)
    # A bare type takes its index the same way.
    assert tp.pick_device("cuda") == torch.device("cuda", 2)


def test_local_rank_past_device_count_is_an_error_not_a_wrap(
    fake_accelerator: Install, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_accelerator([GIB, GIB])
    monkeypatch.setenv("LOCAL_RANK", "3")
    with pytest.raises(tp.DeviceError) as info:
        tp.pick_device()
    message = str(info.value)
    assert "LOCAL_RANK=3" in message
    assert "2 cuda devices" in message
    assert "cuda:0 (NVIDIA H100" in message


def test_local_rank_not_an_integer(
    fake_accelerator: Install, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_accelerator([GIB, GIB])
    monkeypatch.setenv("LOCAL_RANK", "one")
    with pytest.raises(tp.DeviceError, match="LOCAL_RANK='one' is not an integer"):
        tp.pick_device()


def test_env_beats_accelerator(fake_accelerator: Install, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_accelerator([GIB, 2 * GIB])
    monkeypatch.setenv("TORCHPORT_DEVICE", "cpu")
    assert tp.pick_device() == torch.device("cpu")
    monkeypatch.setenv("TORCHPORT_DEVICE", "cuda:0")
    assert tp.pick_device() == torch.device("cuda", 0)


@pytest.mark.parametrize("value", ["auto", "AUTO", "", "  "])
def test_env_auto_or_empty_means_automatic(
    fake_accelerator: Install, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    fake_accelerator([GIB, 2 * GIB])
    monkeypatch.setenv("TORCHPORT_DEVICE", value)
    assert tp.pick_device() == torch.device("cuda", 1)


def test_prefer_beats_env(fake_accelerator: Install, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_accelerator([GIB, 2 * GIB])
    monkeypatch.setenv("TORCHPORT_DEVICE", "cuda:1")
    assert tp.pick_device("cpu") == torch.device("cpu")
    assert tp.pick_device(torch.device("cuda", 0)) == torch.device("cuda", 0)
    assert tp.pick_device(0) == torch.device("cuda", 0)


def test_prefer_index_needs_an_accelerator(no_accelerator: object) -> None:
    with pytest.raises(tp.DeviceError, match="prefer=0 is an accelerator index, but there is none"):
        tp.pick_device(0)


def test_meta_only_when_asked() -> None:
    assert tp.pick_device("meta") == torch.device("meta")
    assert tp.pick_device() != torch.device("meta")


# --- errors ----------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["cuda:x", "gpu", "", "   ", "CUDA", "cuda:-1"])
def test_malformed_strings(bad: str, no_accelerator: object) -> None:
    with pytest.raises(tp.DeviceError) as info:
        tp.pick_device(bad)
    message = str(info.value)
    assert repr(bad) in message
    assert "available: cpu" in message
    assert "pass one of those" in message
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("bad", [True, 1.5, -1, ["cuda"]])
def test_wrong_kinds_of_value(fake_accelerator: Install, bad: object) -> None:
    fake_accelerator([GIB])
    with pytest.raises(tp.DeviceError, match="available: cuda:0"):
        tp.pick_device(bad)  # type: ignore[arg-type]


def test_index_past_count_lists_devices(fake_accelerator: Install) -> None:
    fake_accelerator([int(79.1 * GIB), 5 * GIB])
    with pytest.raises(tp.DeviceError) as info:
        tp.pick_device("cuda:5")
    message = str(info.value)
    assert "index 5 is past the 2 cuda devices" in message
    assert "cuda:0 (NVIDIA H100, 79.1 GiB free), cuda:1 (NVIDIA H100, 5 GiB free), cpu" in message


def test_type_this_build_lacks(fake_accelerator: Install) -> None:
    fake_accelerator([GIB])
    with pytest.raises(tp.DeviceError, match="no 'mps' device"):
        tp.pick_device("mps")


def test_cuda_on_a_cpu_only_build_says_so() -> None:
    if torch.version.cuda is not None or torch.version.hip is not None:
        pytest.skip("this torch has CUDA support")
    with pytest.raises(tp.DeviceError, match="has no CUDA support"):
        tp.pick_device("cuda")


def test_bad_env_value_is_named_with_advice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCHPORT_DEVICE", "gpu:0")
    with pytest.raises(tp.DeviceError) as info:
        tp.pick_device()
    message = str(info.value)
    assert "TORCHPORT_DEVICE='gpu:0'" in message
    assert "unset TORCHPORT_DEVICE" in message


def test_real_probes_on_this_build() -> None:
    # Whatever the build, asking about absent backends must answer 0, not raise.
    backend = hardware.Backend()
    assert backend.count("xla") == 0
    assert backend.count("hpu") == 0
    if not torch.cuda.is_available():
        assert backend.count("cuda") == 0


# --- available_devices and DeviceInfo ---------------------------------------------------


def test_available_devices_best_first(fake_accelerator: Install) -> None:
    fake_accelerator([10 * GIB, 70 * GIB, None])
    infos = tp.available_devices()
    assert [str(i.device) for i in infos] == ["cuda:1", "cuda:0", "cuda:2", "cpu"]
    assert infos[0].free_memory == 70 * GIB
    assert infos[0].total_memory == 80 * GIB
    assert (infos[0].type, infos[0].index, infos[0].name) == ("cuda", 1, "NVIDIA H100")
    assert str(infos[0]) == "cuda:1 (NVIDIA H100, 70 GiB free)"
    assert str(infos[2]) == "cuda:2 (NVIDIA H100)"
    assert str(infos[-1]) == "cpu"


def test_available_devices_on_this_machine() -> None:
    infos = tp.available_devices()
    cpu = infos[-1]
    assert cpu.type == "cpu" and cpu.index is None and cpu.device == torch.device("cpu")
    if cpu.total_memory is not None:
        assert cpu.free_memory is not None and 0 <= cpu.free_memory <= cpu.total_memory


def test_device_info_is_frozen() -> None:
    info = tp.available_devices()[-1]
    with pytest.raises(dataclasses.FrozenInstanceError):
        info.name = "other"  # type: ignore[misc]
    assert type(info).__module__ == "torchport"


# --- no side effects --------------------------------------------------------------------


def test_no_environment_or_global_state_changes(
    fake_accelerator: Install, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_accelerator([GIB, 3 * GIB])
    monkeypatch.setenv("LOCAL_RANK", "1")
    before = dict(os.environ)
    default = torch.get_default_device()
    tp.pick_device()
    tp.pick_device("cuda")
    tp.available_devices()
    with pytest.raises(tp.DeviceError):
        tp.pick_device("cuda:7")
    assert dict(os.environ) == before
    assert torch.get_default_device() == default


# --- the reason -------------------------------------------------------------------------


def test_each_rule_says_it_decided(
    no_accelerator: object, fake_accelerator: Install, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert tp.place.pick_device_with_reason()[1].startswith("torch reports no accelerator")
    fake_accelerator([10 * GIB, 70 * GIB])
    device, reason = tp.place.pick_device_with_reason()
    assert device == torch.device("cuda", 1) == tp.pick_device()
    assert "most free memory" in reason and "70 GiB" in reason
    assert "prefer='cuda:0'" in tp.place.pick_device_with_reason("cuda:0")[1]
    monkeypatch.setenv("LOCAL_RANK", "0")
    assert "LOCAL_RANK='0'" in tp.place.pick_device_with_reason()[1]
    monkeypatch.setenv("TORCHPORT_DEVICE", "cpu")
    assert tp.place.pick_device_with_reason() == (
        torch.device("cpu"),
        "TORCHPORT_DEVICE='cpu' is set",
    )


def test_cpu_zero_is_the_cpu_and_other_cpu_indices_are_refused() -> None:
    assert tp.pick_device("cpu:0") == torch.device("cpu")
    with pytest.raises(tp.DeviceError, match=r"prefer='cpu:1': cpu has one device"):
        tp.pick_device("cpu:1")


@pytest.mark.parametrize("value", ["auto", "AUTO", " auto "])
def test_auto_is_the_automatic_choice(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TORCHPORT_DEVICE", raising=False)
    assert tp.pick_device(value) == tp.pick_device()
    monkeypatch.setenv("TORCHPORT_DEVICE", value)
    assert tp.pick_device() == tp.pick_device(None)
