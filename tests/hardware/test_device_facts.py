"""The one device parser and the facts the floor reports, with the fake backend where needed."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import torchport as tp
from torchport import hardware
from torchport._device_types import DEVICE_TYPES
from torchport.errors import DeviceError

GIB = 1024**3
Fake = Callable[..., Any]


@pytest.mark.parametrize(
    "value", ["cpu", "cpu:0", " cpu ", torch.device("cpu"), torch.device("cpu", 0)]
)
def test_every_spelling_of_the_cpu_is_one_device(value: object) -> None:
    assert hardware.parse_device(value) == torch.device("cpu")
    assert hardware.parse_device(value).index is None


@pytest.mark.parametrize("value", ["meta", "meta:0", torch.device("meta", 0)])
def test_meta_is_normalised_too(value: object) -> None:
    assert hardware.parse_device(value) == torch.device("meta")


# The machines the refusals are read on: none with an accelerator (a CPU box) and one
# with a CUDA device (the GPU box of issue 36, where the listing starts with it).
_LISTINGS = {0: "available: cpu;", 1: "available: cuda:0 (NVIDIA H100, 79 GiB free), cpu;"}


@pytest.mark.parametrize("accelerators", sorted(_LISTINGS))
@pytest.mark.parametrize("argument", ["device", "prefer", "--device", "TORCHPORT_DEVICE"])
@pytest.mark.parametrize("value", ["cpu:1", "xpu:7", "gpu", "", 3, 1.5, [0], True])
def test_refusals_name_the_argument_and_list_the_devices(
    argument: str, value: object, accelerators: int, no_accelerator: object, fake_accelerator: Fake
) -> None:
    if accelerators:
        fake_accelerator([79 * GIB] * accelerators)
    with pytest.raises(tp.DeviceError) as info:
        hardware.parse_device(value, argument=argument)
    message = str(info.value)
    assert message.startswith(f"{argument}={value!r}")
    assert _LISTINGS[accelerators] in message
    if argument.isupper():
        assert f"unset {argument}" in message
    elif argument.startswith("--"):
        assert f"to {argument}" in message


def test_present_accelerators_and_their_indices(fake_accelerator: Fake) -> None:
    fake_accelerator([GIB, 2 * GIB], kind="xpu", current=1)
    assert hardware.parse_device("xpu:0") == torch.device("xpu", 0)
    assert hardware.parse_device("xpu") == torch.device("xpu", 1)  # the current one
    assert hardware.parse_device("xpu", bare_index=lambda kind: 0) == torch.device("xpu", 0)
    assert hardware.parse_device(1) == torch.device("xpu", 1)
    with pytest.raises(tp.DeviceError, match=r"device='xpu:7': index 7 is past the 2 xpu"):
        hardware.parse_device("xpu:7")
    with pytest.raises(tp.DeviceError, match=r"no 'cuda' device|no CUDA support"):
        hardware.parse_device("cuda:0")


def test_the_cache_never_outlives_its_backend(fake_accelerator: Fake) -> None:
    fake_accelerator([GIB, GIB])
    assert hardware.parse_device("cuda:1") == torch.device("cuda", 1)
    fake_accelerator([GIB])  # a new backend: one device
    with pytest.raises(tp.DeviceError, match="index 1 is past the 1 cuda device"):
        hardware.parse_device("cuda:1")


def test_the_cache_ignores_bools_and_floats_that_equal_ints(fake_accelerator: Fake) -> None:
    fake_accelerator([GIB, GIB])
    hardware.parse_device("cuda:1")
    for value in (True, 1.0):
        with pytest.raises(tp.DeviceError):
            hardware.parse_device(value)


def test_counts_names_and_memory(fake_accelerator: Fake) -> None:
    backend = fake_accelerator([10 * GIB, None])
    assert hardware.accelerator_type() == "cuda" and hardware.accelerator_present()
    assert hardware.device_count("cuda") == 2 and hardware.device_count("cpu") == 1
    assert hardware.device_name(torch.device("cuda", 0)) == "NVIDIA H100"
    cuda0 = torch.device("cuda", 0)
    assert hardware.memory_info(cuda0, allow_context=False) == (10 * GIB, 80 * GIB)
    assert hardware.memory_info(torch.device("cuda", 1), allow_context=False) == (None, None)
    assert hardware.memory_info(torch.device("meta"), allow_context=True) == (None, None)
    infos = hardware.list_devices(allow_context=False)
    assert [str(i.device) for i in infos] == ["cuda:0", "cuda:1", "cpu"]  # index order
    assert backend.memory_reads == 4  # two memory_info calls, two listed devices


def test_the_real_backend_on_this_machine() -> None:
    assert hardware.device_count("xla") == 0
    cpu = hardware.cpu_info()
    assert cpu.type == "cpu" and cpu.device == torch.device("cpu")
    free, total = hardware.memory_info(torch.device("cpu"), allow_context=False)
    if total is not None:
        assert free is not None and 0 <= free <= total
    if not torch.cuda.is_available():
        assert not hardware.pins_for(torch.device("cuda", 0))


def test_install_restores_the_previous_backend(fake_accelerator: Fake) -> None:
    real = hardware.accelerator_type()
    with hardware.install(hardware.Backend()):
        pass
    assert hardware.accelerator_type() == real
    fake_accelerator([GIB], kind="mps")
    assert hardware.accelerator_type() == "mps"


@given(st.text(max_size=12))
def test_any_string_either_parses_or_raises_a_device_error(text: str) -> None:
    try:
        device = hardware.parse_device(text)
    except tp.DeviceError as exc:
        assert str(exc).startswith(f"device={text!r}")
    else:
        assert device.type in ("cpu", "meta")  # nothing else is present here


def test_a_bare_type_with_one_device_is_cached_and_with_several_follows_current(
    fake_accelerator: Fake,
) -> None:
    backend = fake_accelerator([GIB])
    assert hardware.parse_device("cuda") == torch.device("cuda", 0)
    assert "cuda" in hardware.parsed_cache()
    backend = fake_accelerator([GIB, GIB], current=1)
    assert hardware.parse_device("cuda") == torch.device("cuda", 1)
    backend.current = 0  # torch.cuda.set_device(0) elsewhere
    assert hardware.parse_device("cuda") == torch.device("cuda", 0)
    assert "cuda" not in hardware.parsed_cache()


def test_device_errors_carry_the_argument_and_the_devices(fake_accelerator: Fake) -> None:
    fake_accelerator([GIB])
    with pytest.raises(tp.DeviceError) as info:
        hardware.parse_device("cuda:4", argument="--device")
    assert info.value.argument == "--device"
    assert [str(d.device) for d in info.value.available] == ["cuda:0", "cpu"]
    assert all(isinstance(d, tp.DeviceInfo) for d in info.value.available)


def test_memory_report_parses_through_the_floor() -> None:
    assert tp.memory_report("cpu:0").device == "cpu"
    with pytest.raises(tp.DeviceError, match=r"device='xpu:7'") as info:
        tp.memory_report("xpu:7")
    assert info.value.argument == "device"


@pytest.mark.parametrize(
    ("value", "expected"),
    [("cpu", "cpu"), (" cpu ", "cpu"), ("cpu:0", "cpu"), ("meta:0", "meta"), ("cuda:3", "cuda:3")],
)
def test_device_spec_reads_without_asking_presence(value: str, expected: str) -> None:
    assert hardware.device_spec(value) == torch.device(expected)


@pytest.mark.parametrize("value", ["", "  ", "bogus", "cuda:0:1"])
def test_device_spec_refuses_what_is_not_a_device(value: str) -> None:
    with pytest.raises(tp.DeviceError, match="TORCHPORT_DEVICE="):
        hardware.device_spec(value, argument="TORCHPORT_DEVICE")


@given(
    kind=st.sampled_from(sorted(DEVICE_TYPES)) | st.text(min_size=1, max_size=6),
    index=st.none() | st.integers(0, 9).map(str) | st.text(max_size=3),
    pad=st.sampled_from(["", " ", "\t", "\n "]),
)
def test_named_type_is_the_type_device_spec_reads(kind: str, index: str | None, pad: str) -> None:
    """Where torch parses a string, ``named_type`` names the type ``device_spec`` gives."""
    text = pad + kind + ("" if index is None else ":" + index) + pad
    try:
        with warnings.catch_warnings():
            # torch 2.6 warns once that "mkldnn" is no longer a device type: a fact about
            # torch, not what this test is about (whichever call happens to be first).
            warnings.simplefilter("ignore", UserWarning)
            parsed = hardware.device_spec(text)
    except DeviceError:
        return  # refused: named_type reads it anyway, without a promise
    assert hardware.named_type(text) == parsed.type
    assert hardware.named_type(parsed) == parsed.type


def test_named_type_reads_a_type_torch_does_not_know_yet() -> None:
    assert hardware.named_type(" sim:0 ") == "sim"
    assert hardware.named_type("SIM") == "SIM"  # torch's case: "SIM" installs nothing
    assert hardware.named_type(3) is None
