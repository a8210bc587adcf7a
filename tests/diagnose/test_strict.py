"""strict(): device mismatches become DeviceMismatchError naming the culprit; nothing else changes.

CPU-only: ``meta`` is the second device. Meta kernels check devices in most ops
(``addmm`` with a bias, ``layer_norm``, elementwise ops, ``cat``) but not in
``matmul`` or ``conv``, so the models here use ops that do.
"""

from __future__ import annotations

import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

import torchport as tp
from torchport.diagnose._mismatch_message import is_device_mismatch

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


# -- every backend's wording, raised from torch frames -----------------------------------


class FailsInKernel(nn.Module):
    """A layer whose op fails with a backend's wording (see _kernel_error)."""

    def __init__(self, message: str) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.message = message

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _kernel_error(self.message)
        return self.lin(x)


_BACKEND_WORDINGS = [
    # MPS, pytorch/pytorch#130790 and the MPS op checks
    "Placeholder storage has not been allocated on MPS device!",
    "Passed CPU tensor to MPS op",
    # CUDA / ROCm (HIP reports the same TensorIterator and addmm checks) / XPU
    "Expected all tensors to be on the same device, but found at least two devices, cuda:0 "
    "and cpu! (when checking argument for argument mat1 in method wrapper_CUDA_addmm)",
    "Expected all tensors to be on the same device, but got index is on cpu, different from "
    "other tensors on cuda:0 (when checking argument in method wrapper_CUDA__index_select)",
    "Expected all tensors to be on the same device, but found at least two devices, xpu:0 and cpu!",
    "Input type (XPUFloatType) and weight type (CPUFloatType) should be the same",
    "Input type (MPSFloatType) and weight type (torch.FloatTensor) should be the same",
    # autograd's engine (validate_outputs)
    "Function AddmmBackward0 returned an invalid gradient at index 1 - expected device cuda:0 "
    "but got cpu",
    # pack_padded_sequence with lengths on the GPU
    "'lengths' argument should be a 1D CPU int64 tensor, but got 1D cuda:0 Long tensor",
    # cuDNN and the TH era
    "Expected tensor for argument #1 'input' to have the same device as tensor for argument "
    "#2 'weight'; but device 0 does not equal 1 (while checking arguments for cudnn_convolution)",
    "Expected object of device type cuda but got device type cpu for argument #2 'mat2' in "
    "call to _th_bmm",
    "Expected tensor to have CPU Backend, but got tensor with CUDA Backend (while checking "
    "arguments for addmm)",
    "Tensor device index mismatch. Expected device index to be 0, but got 1",
]


@pytest.mark.parametrize("message", _BACKEND_WORDINGS)
def test_each_backends_wording_is_recognised_from_a_torch_frame(message: str) -> None:
    model = nn.Sequential(nn.Identity(), FailsInKernel(message))
    err = _raise_mismatch(lambda: model(torch.randn(2, 4)))
    assert "FailsInKernel '1' (in Sequential)" in str(err)
    # torch's error translation may rename legacy type names (CPUFloatType -> torch.FloatTensor)
    assert type(err.__cause__) is RuntimeError and str(err.__cause__)[:20] == message[:20]


@pytest.mark.parametrize(
    "message",
    [
        "'lengths' argument should be a 1D CPU int64 tensor, but got 1D cpu Int tensor",
        "Expected tensor to have CPU Backend, but got tensor with SparseCPU Backend",
    ],
)
def test_lookalike_dtype_and_layout_errors_are_not_mismatches(message: str) -> None:
    with pytest.raises(RuntimeError) as info, tp.strict():
        _kernel_error(message)
    assert not isinstance(info.value, tp.DeviceMismatchError)


def test_pack_padded_sequence_with_lengths_on_the_device_is_real() -> None:
    padded = torch.randn(3, 2, 4)
    lengths = torch.tensor([3, 2], device=META)  # on an accelerator in a real run
    err = _raise_mismatch(lambda: nn.utils.rnn.pack_padded_sequence(padded, lengths))
    assert "1D meta Long tensor" in str(err.__cause__)


def test_autograd_expected_device_is_real() -> None:
    class WrongDeviceGrad(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
            return x * 2

        @staticmethod
        def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
            return torch.empty_like(grad, device=META)

    x = torch.ones(3, requires_grad=True)
    err = _raise_mismatch(lambda: WrongDeviceGrad.apply(x).sum().backward())
    assert "expected device cpu but got meta" in str(err.__cause__)


def test_storage_on_another_device_is_real() -> None:
    storage = torch.empty(2, device=META).untyped_storage()
    err = _raise_mismatch(lambda: torch.ones(2).set_(storage))
    assert "to a storage on different device" in str(err.__cause__)


# -- the culprit is judged against the whole model ----------------------------------------


class Scaled(nn.Module):
    """A correctly placed plain attribute beside a registered buffer."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.scale = torch.ones(4)  # plain, on the model's device: fine
        self.register_buffer("offset", torch.zeros(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) * self.scale + self.offset


def _fix_target(message: str) -> str:
    import re

    found = re.search(r"To fix: call model\.to\('([^']+)'\)", message)
    assert found is not None, message
    return found.group(1)


def _runs_after_the_first_fix(model: nn.Module, x: torch.Tensor, message: str) -> None:
    target = _fix_target(message)
    # meta tensors hold no data to copy; to_empty() stands in for the move to the CPU
    model.to_empty(device=target) if target == "cpu" else model.to(target)
    out = model(x.to(target))
    assert out.device == torch.device(target)


def test_a_stray_buffer_is_blamed_not_a_correct_plain_attribute() -> None:
    model = nn.Sequential(Scaled(), nn.Linear(4, 2))
    model[0].offset = torch.zeros(4, device=META)  # a buffer replaced after model.to()
    x = torch.randn(2, 4)
    err = _raise_mismatch(lambda: model(x))
    message = str(err)
    assert "Scaled '0' (in Sequential) has its buffer 'offset' on meta" in message
    assert "split across devices" in message
    assert "register_buffer" not in message
    _runs_after_the_first_fix(model, x, message)


def test_a_parameter_recreated_after_to_gets_the_whole_model_fix() -> None:
    model = Model()
    # re-created after model.to(): on the accelerator (meta) while the rest stays behind
    model.encoder.layers[1].norm.weight = nn.Parameter(torch.ones(4, device=META))
    x = torch.randn(2, 4)
    err = _raise_mismatch(lambda: model(x))
    message = str(err)
    assert (
        "LayerNorm 'encoder.layers.1.norm' (in Model) has its parameter 'weight' on meta" in message
    )
    assert _fix_target(message) == "cpu"
    _runs_after_the_first_fix(model, x, message)


class Tagger(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(10, 8)
        self.rnn = nn.GRU(8, 8, batch_first=True)
        self.head = nn.Linear(8, 3)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        out, _ = self.rnn(self.embed(tokens))
        return self.head(out)


def test_a_replaced_layer_holding_most_tensors_leaves_the_model_split() -> None:
    model = Tagger().to(META)
    model.rnn = nn.GRU(8, 64, batch_first=True)  # most of the model, left on the CPU
    model.head = nn.Linear(64, 3).to(META)
    tokens = torch.randint(0, 10, (2, 5), device=META)
    err = _raise_mismatch(lambda: model(tokens))
    message = str(err)
    # the data is on meta and part of the model is: the whole model goes there, not the input
    assert _fix_target(message) == "meta"
    assert "left behind" in message or "split across devices" in message
    assert "x.to('cpu')" not in message
    _runs_after_the_first_fix(model, tokens, message)


def test_a_compiled_models_path_has_no_orig_mod() -> None:
    model = Model()
    model.encoder.layers[2].proj.to(META)
    compiled = torch.compile(model, backend="eager")
    with torch.compiler.set_stance("force_eager"):  # run the modules as Python calls
        err = _raise_mismatch(lambda: compiled(torch.randn(2, 4)))
    message = str(err)
    assert "_orig_mod" not in message
    assert "Linear 'encoder.layers.2.proj' (in Model)" in message


# -- smaller cases ------------------------------------------------------------------------


def test_the_programs_own_same_device_error_is_not_rewritten() -> None:
    original = ValueError("inputs must be on the same device")
    with pytest.raises(ValueError) as info, tp.strict():
        raise original
    assert info.value is original


def test_the_programs_error_wrapping_torchs_mismatch_is_rewritten() -> None:
    def wrapped() -> None:
        try:
            torch.randn(2) + torch.randn(2, device=META)
        except RuntimeError as err:
            raise RuntimeError(f"step failed: {err}") from err

    err = _raise_mismatch(wrapped)
    assert "step failed" in str(err.__cause__)


class CountsReads:
    def __init__(self) -> None:
        self.reads = 0
        self.a = torch.randn(2)

    @property
    def b(self) -> torch.Tensor:
        self.reads += 1
        return torch.randn(2, device=META)


def test_properties_on_the_failing_line_are_not_run_again() -> None:
    holder = CountsReads()
    err = _raise_mismatch(lambda: holder.a + holder.b)
    assert holder.reads == 1  # once by the program, never by strict
    assert "holder.a on cpu" in str(err)


def test_a_decorated_generator_is_covered_while_it_runs() -> None:
    @tp.strict
    def batches() -> Any:
        yield torch.randn(2)
        yield torch.randn(2) + torch.randn(2, device=META)

    steps = batches()
    next(steps)
    with pytest.raises(tp.DeviceMismatchError):
        next(steps)


def test_a_decorated_coroutine_is_covered_while_it_runs() -> None:
    import asyncio

    @tp.strict()
    async def step() -> torch.Tensor:
        await asyncio.sleep(0)
        return torch.randn(2) + torch.randn(2, device=META)

    with pytest.raises(tp.DeviceMismatchError):
        asyncio.run(step())


def test_an_async_generator_is_refused() -> None:
    async def stream() -> Any:
        yield torch.randn(2)

    with pytest.raises(tp.ConfigError, match="async generator"):
        tp.strict(stream)


def test_a_data_parallel_models_path_is_the_models_own(monkeypatch: pytest.MonkeyPatch) -> None:
    model = Model()
    model.encoder.layers[1].proj.to(META)
    # made as on a machine without GPUs, where it calls the model directly (on one with a
    # GPU it would move the model to cuda:0 at once, the meta layer included)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    wrapped = nn.DataParallel(model)
    monkeypatch.undo()
    err = _raise_mismatch(lambda: wrapped(torch.randn(2, 4)))
    message = str(err)
    assert "Linear 'encoder.layers.1.proj' (in Model)" in message
    assert "module.encoder" not in message


# -- culprits outside the model, and what PyTorch said ----------------------------------


def _scaled(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    y = torch.relu(x)
    return y * w


def test_a_mismatch_in_compiled_code_keeps_the_devices_and_the_traced_line() -> None:
    compiled = torch.compile(_scaled, backend="eager", fullgraph=True)
    err = _raise_mismatch(lambda: compiled(torch.ones(3), torch.ones(3, device=META)))
    message = str(err)
    traced = _scaled.__code__.co_firstlineno + 2
    assert f"inside code torch.compile traced, at {__file__}:{traced} in _scaled" in message
    assert "`return y * w`" in message
    assert "the op mixed tensors on cpu and meta" in message
    said = message.split("(PyTorch said: ")[1]
    assert "cpu" in said and "meta" in said  # the devices PyTorch named are kept


class _Stray(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(3, 3)
        self.shift = nn.Parameter(torch.zeros(3, device=META))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x) + self.shift


def test_a_compiled_module_names_the_stray_parameter_and_the_traced_line() -> None:
    compiled = torch.compile(_Stray(), backend="eager")
    message = str(_raise_mismatch(lambda: compiled(torch.ones(2, 3))))
    assert "inside code torch.compile traced" in message
    assert "`return self.proj(x) + self.shift`" in message
    assert "'shift' on meta" in message


@given(inputs=st.integers(1, 3), data=st.data())
def test_an_autograd_functions_backward_on_the_wrong_device_names_the_function(
    inputs: int, data: st.DataObject
) -> None:
    wrong = data.draw(st.integers(0, inputs - 1))

    class ScaleAndShift(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, *xs: torch.Tensor) -> torch.Tensor:
            return sum(x * 2 for x in xs)  # type: ignore[return-value]

        @staticmethod
        def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, ...]:
            return tuple(
                torch.zeros_like(grad, device=META) if i == wrong else grad * 2
                for i in range(inputs)
            )

    xs = [torch.ones(3, requires_grad=True) for _ in range(inputs)]
    out = ScaleAndShift.apply(*xs)
    err = _raise_mismatch(lambda: out.sum().backward())
    message = str(err)
    backward_line = ScaleAndShift.backward.__code__.co_firstlineno
    assert f"autograd.Function {ScaleAndShift.__qualname__} ({__file__}:{backward_line})" in (
        message
    )
    assert f"gradient for input {wrong} on meta, but that input is on cpu" in message
    assert "ScaleAndShift.backward" in message.split("To fix:")[1]


_OPTIMIZERS: list[tuple[str, Any, str]] = [
    ("Adam", lambda ps: torch.optim.Adam(ps, foreach=False), "exp_avg"),
    ("AdamW", lambda ps: torch.optim.AdamW(ps, foreach=True), "exp_avg_sq"),
    ("Adagrad", lambda ps: torch.optim.Adagrad(ps), "sum"),
    ("RMSprop", lambda ps: torch.optim.RMSprop(ps), "square_avg"),
]


@pytest.mark.parametrize(("kind", "make", "key"), _OPTIMIZERS, ids=[o[0] for o in _OPTIMIZERS])
def test_optimizer_state_elsewhere_names_optimizer_parameter_and_key(
    kind: str, make: Any, key: str
) -> None:
    net = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    optimizer = make(net.parameters())

    def step() -> None:
        net(torch.ones(3, 4)).sum().backward()
        optimizer.step()

    step()  # the state exists now; a resumed run left part of it elsewhere
    state = optimizer.state[net[2].weight]
    state[key] = state[key].to(META)
    message = str(_raise_mismatch(step))
    assert f"the {kind} optimizer holds state {key!r} of parameter '2.weight'" in message
    assert "on meta, but the parameter is on cpu" in message
    assert "torchport.to_device(optimizer, 'cpu')" in message


def test_optimizer_state_of_an_unnamed_parameter_is_named_by_its_place() -> None:
    weights = [torch.ones(2, requires_grad=True), torch.ones(3, requires_grad=True)]
    optimizer = torch.optim.Adam([{"params": weights[:1]}, {"params": weights[1:]}])
    for w in weights:
        w.grad = torch.ones_like(w)
    optimizer.step()
    optimizer.state[weights[1]]["exp_avg"] = torch.zeros(3, device=META)
    message = str(_raise_mismatch(optimizer.step))
    assert "state 'exp_avg' of parameter param_groups[1]['params'][0] (shape (3,))" in message


class _Trainer:
    def __init__(self, criterion: nn.Module) -> None:
        self.criterion = criterion

    def loss(self, out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return self.criterion(out, target)


@pytest.mark.parametrize(
    "make",
    [
        lambda: nn.NLLLoss(weight=torch.ones(5)),
        lambda: nn.CrossEntropyLoss(weight=torch.ones(5), label_smoothing=0.1),
        lambda: nn.MultiMarginLoss(weight=torch.ones(5)),
    ],
)
def test_a_loss_with_a_weight_on_another_device_is_moved_not_its_inputs(make: Any) -> None:
    model = nn.Linear(3, 5).to(META)
    trainer = _Trainer(make())
    out = torch.log_softmax(model(torch.ones(2, 3, device=META)), dim=1)
    target = torch.zeros(2, dtype=torch.long, device=META)
    message = str(_raise_mismatch(lambda: trainer.loss(out, target)))
    fix = message.split("To fix:")[1]
    assert "self.criterion.to('meta')" in fix
    assert "x.to('cpu')" not in fix and "buffer 'weight' on cpu" in message


def test_a_weighted_loss_called_by_a_local_name() -> None:
    loss_fn = nn.BCEWithLogitsLoss(pos_weight=torch.ones(4))
    logits = torch.zeros(2, 4, device=META)
    message = str(_raise_mismatch(lambda: loss_fn(logits, torch.ones(2, 4, device=META))))
    assert "loss_fn.to('meta')" in message and "buffer 'pos_weight' on cpu" in message


def test_distributed_data_parallel_of_a_split_model_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import torch.distributed as dist

    # init_process_group replaces sys.excepthook for good ("[rank0]: " on every line)
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        model = Model()
        model.head.to(META)
        message = str(_raise_mismatch(lambda: nn.parallel.DistributedDataParallel(model)))
    finally:
        dist.destroy_process_group()
    assert "Linear 'head'" in message or "'head.weight' on meta" in message
    assert "same type of devices" in message  # what PyTorch said is kept


@pytest.mark.parametrize(
    "message",
    [
        "module must have its parameters and buffers on device cuda:0 (device_ids[0]) but "
        "found one of them on device: cpu",
        "DistributedDataParallel's input module must be on the same type of devices, but "
        "input module parameters locate in {'cpu', 'cuda'}.",
        "Unhandled FakeTensor Device Propagation for aten.mm.default, found two different "
        "devices cpu, cuda:0",
    ],
)
def test_parallel_wrapper_and_fake_tensor_wordings_are_recognised(message: str) -> None:
    model = nn.Sequential(nn.Identity(), FailsInKernel(message))
    err = _raise_mismatch(lambda: model(torch.randn(2, 4)))
    assert "FailsInKernel '1' (in Sequential)" in str(err)
    assert f"(PyTorch said: {message})" in str(err)


def test_the_sentence_naming_the_devices_is_kept_when_it_is_not_the_first_line() -> None:
    dynamo_like = (
        "Tensor device mismatch\n"
        "  Explanation: Expected all tensors to be on the same device, but found at least two "
        "devices, cpu and meta!\n"
        "  Hint: Move inputs, parameters, and buffers to the same device."
    )
    err = _raise_mismatch(lambda: _kernel_error(dynamo_like))
    assert str(err).endswith(
        "(PyTorch said: Tensor device mismatch: Expected all tensors to be on the same device, "
        "but found at least two devices, cpu and meta!)"
    )
    assert "the op mixed tensors on cpu and meta" in str(err)


@pytest.mark.gpu
@pytest.mark.skipif(torch.cuda.device_count() < 1, reason="needs CUDA")
def test_data_parallel_with_a_parameter_left_on_the_cpu() -> None:
    model = Model().cuda()
    wrapped = nn.DataParallel(model)  # on one GPU this moves `model` to cuda:0 itself
    model.head.bias = nn.Parameter(torch.zeros(2))  # replaced after wrapping: on the CPU
    message = str(_raise_mismatch(lambda: wrapped(torch.randn(2, 4, device="cuda"))))
    assert "'head.bias'" in message or "bias" in message
    assert "module must have its parameters and buffers on device" in message


class Doubler(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x * 2

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return torch.full((3,), 2.0, device=META)


def test_a_function_applied_inline_is_found_by_its_name() -> None:
    x = torch.ones(3, requires_grad=True)
    message = str(_raise_mismatch(lambda: Doubler.apply(x).sum().backward()))
    line = Doubler.backward.__code__.co_firstlineno
    assert f"autograd.Function Doubler ({__file__}:{line})" in message


def _scale_to_meta(grad: torch.Tensor) -> torch.Tensor:
    return torch.zeros_like(grad, device=META)


@given(
    on_parameter=st.booleans(),
    named=st.booleans(),
    width=st.integers(1, 4),
)
def test_a_gradient_hook_returning_another_device_is_named(
    on_parameter: bool, named: bool, width: int
) -> None:
    layer = nn.Linear(width, 1)
    hook = _scale_to_meta if named else (lambda grad: grad.to(META))
    x = torch.randn(2, width, requires_grad=True)
    with pytest.raises(tp.DeviceMismatchError) as caught, tp.strict():
        target = layer.weight if on_parameter else x
        target.register_hook(hook)
        layer(x).sum().backward()
    message = str(caught.value)
    name = "_scale_to_meta" if named else "<lambda>"
    assert f"gradient hook '{name}'" in message
    assert "returned its gradient on meta, but the tensor and its gradient are on cpu" in message
    assert "has changed the type of value" in message  # PyTorch's sentence is kept


# -- the fix that applies where "move everything to one device" is wrong ---------------------

_FACTORY_CALLS = {
    "arange": "torch.arange(4.0)",
    "zeros": "torch.zeros(4)",
    "ones": "torch.ones(4)",
    "full": "torch.full((4,), 2.0)",
    "rand": "torch.rand(4)",
    "linspace": "torch.linspace(0, 1, 4)",
}


def _factory_model(call: str, in_child: bool) -> nn.Module:
    """A model whose forward makes a tensor with ``call`` (no device=) and uses it either
    in a child module or in an op of its own: written out, as a user would."""
    source = f"""
import torch
from torch import nn

class Child(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, extra):
        return self.lin(x) + extra

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.child = Child()

    def forward(self, x):
        made = {call}
        if {in_child!r}:
            return self.child(x, made)
        return self.child.lin(x) * made
"""
    scope: dict[str, Any] = {}
    path = Path(tempfile.mkdtemp()) / "factory_model.py"
    path.write_text(source)
    exec(compile(source, str(path), "exec"), scope)
    return scope["Net"]()


@given(name=st.sampled_from(sorted(_FACTORY_CALLS)), in_child=st.booleans())
@settings(max_examples=12, deadline=None)
def test_a_factory_in_forward_is_told_to_create_on_the_inputs_device(
    name: str, in_child: bool
) -> None:
    model = _factory_model(_FACTORY_CALLS[name], in_child).to("meta")
    with pytest.raises(tp.DeviceMismatchError) as caught, tp.strict():
        model(torch.ones(2, 4, device="meta"))
    message = str(caught.value)
    assert f"by torch.{name}() without device=" in message
    assert "create that tensor on the input's device (device=x.device)" in message
    assert "model.to('cpu')" not in message


def test_a_batch_made_on_the_host_by_the_script_keeps_the_move_advice() -> None:
    model = nn.Linear(4, 4).to("meta")
    batch = torch.zeros(2, 4)  # the script's, not the model's: move it
    with pytest.raises(tp.DeviceMismatchError) as caught, tp.strict():
        model(batch)
    assert "without device=" not in str(caught.value)


def test_pack_padded_sequence_lengths_are_told_to_stay_on_the_cpu() -> None:
    from torch.nn.utils.rnn import pack_padded_sequence

    padded = torch.ones(3, 2, 4, device="meta")
    lengths = torch.tensor([3, 2], device="meta")  # everything on one device, and still wrong
    with pytest.raises(tp.DeviceMismatchError) as caught, tp.strict():
        pack_padded_sequence(padded, lengths)
    message = str(caught.value)
    assert "lengths.cpu()" in message
    assert "move every tensor" not in message and "mixed tensors" not in message


@pytest.mark.parametrize(
    ("said", "fix"),
    [
        (
            "indices should be either on cpu or on the same device as the indexed tensor (cuda:0)",
            "index.to(x.device)",
        ),
        ("Expected a 'cuda' device type for generator but found 'cpu'", "torch.Generator(device="),
    ],
)
def test_index_and_generator_sides_get_their_own_fix(said: str, fix: str) -> None:
    from torchport.diagnose._remedies import side_rule

    assert is_device_mismatch(RuntimeError(said))
    found = side_rule(said)
    assert found is not None and fix in found[1]


def _combine(batch: dict[str, torch.Tensor], scale: float) -> torch.Tensor:
    return batch["x"] * scale + batch["y"]


def test_an_expression_in_a_helper_is_named_as_the_caller_wrote_it() -> None:
    data = {"x": torch.ones(4), "y": torch.ones(4, device="meta")}
    with pytest.raises(tp.DeviceMismatchError) as caught, tp.strict():
        _combine(data, 2.0)
    message = str(caught.value)
    assert "batch['y'] on meta (the caller's data['y'])" in message
    assert "batch['x'] on cpu (the caller's data['x'])" in message


@settings(max_examples=25, deadline=None)
@given(
    numbers=st.lists(st.sampled_from(["2.0", "3", "0.5"]), max_size=3),
    at=st.integers(min_value=0, max_value=3),
    cpu=st.sampled_from(["c", "batch['x']", "pair[1]"]),
)
def test_a_line_calling_the_helper_twice_names_the_call_that_raised(
    numbers: list[str], at: int, cpu: str
) -> None:
    # patrickloeber/pytorchTutorial's `print(forward(5).item(), forward(X).sum().item())`: the
    # message named the first call's argument, 5, for the CPU tensor the second was given.
    args = [*numbers[:at], cpu, *numbers[at:]]
    calls = ", ".join(f"_scaled({a})" for a in args)
    source = (
        "import torch\n\nW = torch.ones(2, device='meta')\n\n\n"
        "def _scaled(a):\n    return W * a\n\n\n"
        "c = torch.ones(2)\nbatch = {'x': c}\npair = (1.0, c)\n"
        f"out = ({calls})\n"
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "caller.py"
        path.write_text(source)
        code = compile(source, str(path), "exec")
        with pytest.raises(tp.DeviceMismatchError) as caught, tp.strict():
            exec(code, {"__name__": "caller"})
    message = str(caught.value)
    assert f"a on cpu (the caller's {cpu})" in message, message
