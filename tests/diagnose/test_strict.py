"""strict(): device mismatches become DeviceMismatchError naming the culprit; nothing else changes.

CPU-only: ``meta`` is the second device. Meta kernels check devices in most ops
(``addmm`` with a bias, ``layer_norm``, elementwise ops, ``cat``) but not in
``matmul`` or ``conv``, so the models here use ops that do.
"""

from __future__ import annotations

import sys
import threading

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

import torchport as tp
from torchport.diagnose._strict import is_device_mismatch

META = torch.device("meta")


class Block(nn.Module):
    def __init__(self, width: int = 4) -> None:
        super().__init__()
        self.proj = nn.Linear(width, width)
        self.norm = nn.LayerNorm(width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.proj(x))


class Encoder(nn.Module):
    def __init__(self, depth: int) -> None:
        super().__init__()
        self.layers = nn.ModuleList([Block() for _ in range(depth)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


class Model(nn.Module):
    def __init__(self, depth: int = 3) -> None:
        super().__init__()
        self.encoder = Encoder(depth)
        self.head = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(x))


class Masked(nn.Module):
    """Keeps a tensor as a plain attribute: model.to() does not move it."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.mask = torch.ones(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) * self.mask


class Pair(nn.Module):
    """No parameters: only its inputs can disagree."""

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a + b


def _raise_mismatch(run: object) -> tp.DeviceMismatchError:
    with pytest.raises(tp.DeviceMismatchError) as info, tp.strict():
        run()  # type: ignore[operator]
    return info.value


def test_model_on_cpu_input_on_meta_names_module_input_and_fix() -> None:
    model = Model()
    err = _raise_mismatch(lambda: model(torch.randn(2, 4, device=META)))
    message = str(err)
    assert "Linear 'encoder.layers.0.proj'" in message
    assert "input 0 ('input') on meta" in message
    assert "parameter 'weight' is on cpu" in message
    assert "x.to('cpu')" in message and "model.to('meta')" in message
    assert isinstance(err, RuntimeError)


@given(depth=st.integers(1, 5), data=st.data())
def test_layer_left_behind_is_named_by_its_path(depth: int, data: st.DataObject) -> None:
    bad = data.draw(st.integers(0, depth - 1))
    model = Model(depth).to(META)
    model.encoder.layers[bad].proj = nn.Linear(4, 4)  # added after model.to(): still on cpu
    err = _raise_mismatch(lambda: model(torch.randn(2, 4, device=META)))
    message = str(err)
    assert f"Linear 'encoder.layers.{bad}.proj' (in Model)" in message
    assert "left behind" in message
    assert "call model.to('meta') after adding or replacing layers" in message


def test_path_is_relative_to_the_outermost_module_called() -> None:
    encoder = Encoder(3).to(META)
    encoder.layers[1].norm = nn.LayerNorm(4)
    err = _raise_mismatch(lambda: encoder(torch.randn(2, 4, device=META)))
    assert "LayerNorm 'layers.1.norm' (in Encoder)" in str(err)


def test_unregistered_tensor_attribute_is_named_with_register_buffer_fix() -> None:
    model = Masked().to(META)  # .mask stays on cpu
    err = _raise_mismatch(lambda: model(torch.randn(2, 4, device=META)))
    message = str(err)
    assert "plain tensor attribute 'mask' on cpu" in message
    assert "self.register_buffer('mask', tensor)" in message
    assert "self.mask on cpu" in message and "x on meta" in message  # the line's operands


def test_keyword_input_on_wrong_device_is_named() -> None:
    model = nn.Linear(4, 3)
    err = _raise_mismatch(lambda: model(input=torch.randn(2, 4, device=META)))
    assert "input 'input' on meta" in str(err)
    assert "Linear got" in str(err)


def test_parameter_on_other_device_than_the_rest_of_the_layer() -> None:
    layer = nn.Linear(4, 3).to(META)
    layer.bias = nn.Parameter(torch.zeros(3))
    err = _raise_mismatch(lambda: layer(torch.randn(2, 4, device=META)))
    assert "its parameter 'bias' on cpu but the rest of its parameters on meta" in str(err)


def test_module_without_parameters_lists_inputs() -> None:
    err = _raise_mismatch(lambda: Pair()(torch.randn(3), torch.randn(3, device=META)))
    assert "Pair got input 0 ('a') on cpu, input 1 ('b') on meta" in str(err)


def test_outside_any_module_names_operands_and_line() -> None:
    a = torch.randn(3)
    b = torch.randn(3, device=META)
    with pytest.raises(tp.DeviceMismatchError) as info, tp.strict():
        line = sys._getframe().f_lineno + 1
        _ = a + b
    message = str(info.value)
    assert f"{__file__}:{line}" in message
    assert "a on cpu" in message and "b on meta" in message


def test_operands_not_named_falls_back_to_the_devices_in_the_message() -> None:
    err = _raise_mismatch(lambda: torch.cat([torch.randn(2), torch.randn(2, device=META)]))
    assert "meta and cpu" in str(err) or "cpu and meta" in str(err)


def test_error_is_chained_to_pytorchs_own() -> None:
    err = _raise_mismatch(lambda: Model()(torch.randn(2, 4, device=META)))
    cause = err.__cause__
    assert type(cause) is RuntimeError
    assert "not on the expected device" in str(cause)
    assert str(cause) in str(err)  # what PyTorch said stays readable in one line


def test_cpu_zero_dim_tensor_mixes_with_meta() -> None:
    scale = torch.tensor(2.0)
    with tp.strict():
        out = torch.randn(3, device=META) * scale
    assert out.device == META and out.shape == (3,)


def test_other_errors_pass_through_unchanged() -> None:
    original = ValueError("not about devices")
    with pytest.raises(ValueError) as info, tp.strict():
        raise original
    assert info.value is original


def test_conv_dtype_mismatch_is_not_a_device_mismatch() -> None:
    conv = nn.Conv2d(3, 4, 3)
    with pytest.raises(RuntimeError) as info, tp.strict():
        conv(torch.randn(1, 3, 8, 8, dtype=torch.float64))
    assert not isinstance(info.value, tp.DeviceMismatchError)
    assert "should be the same" in str(info.value)
    assert info.value.__cause__ is None


def _kernel_error(message: str) -> None:
    """Raise ``message`` the way a backend's kernel does: a RuntimeError out of torch's C++.

    ``aten::_assert_async.msg`` fails its TORCH_CHECK with exactly the message given, so
    the error comes out of the dispatcher through torch's own frames, as a CUDA, MPS or XPU
    kernel's check would; only the backend that would write this wording is missing here.
    """
    torch.ops.aten._assert_async.msg(torch.tensor(False), message)


class CudaStyleConv(nn.Module):
    """Raises the message conv gives on CUDA, which meta kernels never raise."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _kernel_error(
            "Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) "
            "should be the same or input should be a MKLDNN tensor and weight is a dense tensor"
        )
        return x


def test_conv_type_message_is_translated_with_the_module_named() -> None:
    model = nn.Sequential(nn.Identity(), CudaStyleConv())
    err = _raise_mismatch(lambda: model(torch.randn(1, 3, 8, 8)))
    assert "CudaStyleConv '1' (in Sequential)" in str(err)
    assert "Input type (torch.cuda.FloatTensor)" in str(err.__cause__)


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (
            "Expected all tensors to be on the same device, but found at least two devices, "
            "cuda:0 and cpu! (when checking argument for argument mat1 in method "
            "wrapper_CUDA_addmm)",
            True,
        ),
        ("Tensor on device cpu is not on the expected device meta!", True),
        (
            "Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the "
            "same",
            True,
        ),
        ("Input type (CUDAFloatType) and weight type (CPUFloatType) should be the same", True),
        ("Input type (MPSFloatType) and bias type (CPUFloatType) should be the same", True),
        ("Input type (double) and bias type (float) should be the same", False),
        ("indices should be either on cpu or on the same device as the indexed tensor (cpu)", True),
        ("Expected b and A to be on the same device, but found b on cpu and A on cuda:0", True),
        ("Expected a 'cuda' device type for generator but found 'cpu'", True),
        ("mat1 and mat2 shapes cannot be multiplied (2x4 and 5x3)", False),
        ("CUDA out of memory. Tried to allocate 2.00 GiB", False),
    ],
)
def test_which_messages_are_device_mismatches(message: str, expected: bool) -> None:
    assert is_device_mismatch(RuntimeError(message)) is expected


def test_index_error_from_index_ops_counts() -> None:
    assert is_device_mismatch(IndexError("indices should be either on cpu or on the same device"))
    assert not is_device_mismatch(KeyError("same device"))


def test_decorator_forms_keep_results_and_names() -> None:
    @tp.strict
    def bare(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    @tp.strict()
    def called(x: torch.Tensor) -> torch.Tensor:
        return x + 1

    x = torch.arange(3.0)
    assert torch.equal(bare(x), x * 2) and torch.equal(called(x), x + 1)
    assert bare.__name__ == "bare" and called.__name__ == "called"

    @tp.strict
    def broken() -> torch.Tensor:
        return torch.randn(2) + torch.randn(2, device=META)

    with pytest.raises(tp.DeviceMismatchError, match="in broken"):
        broken()


@pytest.mark.parametrize(
    "bad", [42, "model", Model, Model()], ids=["int", "str", "class", "module"]
)
def test_decorating_what_is_not_a_function_is_a_config_error(bad: object) -> None:
    with pytest.raises(tp.ConfigError, match="pass a function or method to decorate"):
        tp.strict(bad)  # type: ignore[call-overload]


def test_nested_strict_translates_once() -> None:
    with pytest.raises(tp.DeviceMismatchError) as info, tp.strict(), tp.strict():
        Model()(torch.randn(2, 4, device=META))
    assert type(info.value.__cause__) is RuntimeError
    assert str(info.value).count("device mismatch:") == 1


def test_nothing_is_installed_and_results_are_unchanged() -> None:
    from torch.nn.modules import module as module_mod

    hooks = (
        len(module_mod._global_forward_pre_hooks),
        len(module_mod._global_forward_hooks),
    )
    model = Model()
    x = torch.randn(5, 4)
    expected = model(x)
    with tp.strict():
        inside = model(x)
        assert torch._C._len_torch_function_stack() == 0
    assert torch.equal(inside, expected)
    with pytest.raises(tp.DeviceMismatchError), tp.strict():
        model(x.to(META))
    after = (len(module_mod._global_forward_pre_hooks), len(module_mod._global_forward_hooks))
    assert after == hooks


def test_strict_works_in_threads() -> None:
    errors: list[BaseException] = []

    def work() -> None:
        try:
            with tp.strict():
                Model()(torch.randn(2, 4, device=META))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(errors) == 3
    assert all(isinstance(e, tp.DeviceMismatchError) for e in errors)


def test_out_of_memory_gets_a_note_and_stays_the_same_error() -> None:
    oom = torch.OutOfMemoryError(
        "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
        "79.11 GiB of which 1.00 GiB is free."
    )
    with pytest.raises(torch.OutOfMemoryError) as info, tp.strict():
        raise oom
    assert info.value is oom
    notes = getattr(oom, "__notes__", [])
    assert len(notes) == 1 and notes[0].startswith("torchport:")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_model_with_cpu_input() -> None:
    model = Model().cuda()
    err = _raise_mismatch(lambda: model(torch.randn(2, 4)))
    assert "Linear 'encoder.layers.0.proj'" in str(err)
    assert "on cpu" in str(err) and "cuda:0" in str(err)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_conv_type_message() -> None:
    conv = nn.Conv2d(3, 4, 3).cuda()
    err = _raise_mismatch(lambda: conv(torch.randn(1, 3, 8, 8)))
    assert "Conv2d" in str(err)


class MakesTensors(nn.Module):
    """Creates a tensor inside forward without a device: a mismatch no attribute explains."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        offset = torch.ones(4)
        return self.lin(x) + offset


def test_tensor_created_inside_forward_is_named_on_its_line() -> None:
    model = MakesTensors().to(META)
    err = _raise_mismatch(lambda: model(torch.randn(2, 4, device=META)))
    message = str(err)
    assert "inside MakesTensors" in message
    assert "offset on cpu" in message
    assert "device=x.device" in message


class TakesBatch(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return self.lin(batch["x"]) + batch["y"]


def test_tensor_inside_a_batch_dict_is_named_by_its_key() -> None:
    model = TakesBatch().to(META)
    batch = {"x": torch.randn(2, 4, device=META), "y": torch.randn(2, 4)}
    err = _raise_mismatch(lambda: model(batch))
    assert "input 0 ('batch')['y'] on cpu" in str(err)
    assert "batch['y'] on cpu, batch['x'] on meta" in str(err)  # the line's operands
