"""Every public CUDA-only call under ``redirect("cpu")`` answers or raises RedirectError.

The list of calls is generated from torch itself (``torch.cuda`` and its
submodules, ``torch.cuda.amp``, ``torch.backends.cuda``/``cudnn``), so a call a
new torch adds is tested the day torch adds it. Arguments come from one table
keyed by parameter name; a parameter the table lacks fails the test, naming it.
What no call may do is fail the way CUDA-less torch fails (AssertionError "Torch
not compiled with CUDA enabled", AttributeError on a missing ``torch._C._cuda_*``,
RuntimeError from lazy init): that breaks a script that works on a GPU.
"""

from __future__ import annotations

import inspect
import sys
import types
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch

import torchport as tp
from torchport.run import RedirectError

_SUBMODULES = (
    "gds",
    "graphs",
    "green_contexts",
    "jiterator",
    "memory",
    "nvtx",
    "profiler",
    "random",
    "sparse",
    "streams",
    "tunable",
)


def _modules() -> Iterator[tuple[str, types.ModuleType]]:
    yield "torch.cuda", torch.cuda
    yield "torch.cuda.amp", torch.cuda.amp
    yield "torch.backends.cuda", torch.backends.cuda
    yield "torch.backends.cudnn", sys.modules["torch.backends.cudnn"]
    for name in _SUBMODULES:
        module = getattr(torch.cuda, name, None)
        if isinstance(module, types.ModuleType):
            yield f"torch.cuda.{name}", module


def _public_calls() -> list[tuple[str, str]]:
    """(module, name) of every public function and class a CUDA namespace defines."""
    found: list[tuple[str, str]] = []
    for module_name, module in _modules():
        # torch.backends.cudnn is a flag-property wrapper; its functions live on .m
        for name, value in sorted(vars(getattr(module, "m", module)).items()):
            if name.startswith("_") or not callable(value):
                continue
            home = getattr(value, "__module__", "") or ""
            if not home.startswith(("torch.cuda", "torch.backends.cud")):
                continue  # a helper imported from elsewhere (typing, functools, ...)
            if isinstance(value, type) and issubclass(value, BaseException):
                continue  # exception types are caught, not called
            found.append((module_name, name))
    return found


def _sample(parameter: str) -> Any:
    """A plausible argument for a parameter of that name, built inside the redirect."""
    table: dict[str, Callable[[], Any]] = {
        "allocator": lambda: None,
        "buffer_size": lambda: 1,
        "alloc_fn_name": lambda: "alloc",
        "callables": lambda: (torch.nn.Linear(2, 2),),
        "cuda_graph": lambda: None,
        "flags": lambda: 0,
        "free_fn_name": lambda: "free",
        "obj": lambda: torch.ones(1, device="cuda"),
        "output_file": lambda: "profile.out",  # torch 2.6's profiler.init
        "fn": lambda: lambda *args, **kwargs: None,  # torch 2.15's graph hooks
        "path": lambda: "graph.dot",
        "count": lambda: 1,
        "_resource": lambda: None,
        "_device_id": lambda: 0,
        "output_mode": lambda: "key_value",
        "path_to_so_file": lambda: "allocator.so",
        "stream_ptr": lambda: 0,
        "data_ptr": lambda: 0,
        "debug_mode": lambda: 0,
        "device": lambda: 0,
        "device_index": lambda: 0,
        "duration": lambda: 1,
        "enable": lambda: False,
        "enabled": lambda: True,
        "filename": lambda: "tunableop_results.csv",
        "file_name": lambda: "weights.bin",
        "filename_pattern": lambda: "tunableop_results*.csv",
        "fraction": lambda: 0.5,
        "iterations": lambda: 1,
        "mem_ptr": lambda: 0,
        "msg": lambda: "step",
        "new_state": torch.get_rng_state,
        "new_states": lambda: [torch.get_rng_state()],
        "num_gpus": lambda: 1,
        "params": lambda: torch.backends.cuda.SDPAParams(
            *(torch.ones(1, 1, 2, 2),) * 3, None, 0.0, False, False
        ),
        "peer_device": lambda: 0,
        "pool": lambda: None,
        "range_id": lambda: 0,
        "res": lambda: 0,
        "s": lambda: torch.UntypedStorage(4),
        "sample_args": lambda: ((torch.ones(1, 2),),),
        "seed": lambda: 0,
        "val": lambda: False,  # torch 2.6's tunable.write_file_on_exit
        "size": lambda: 16,
        "tensor": lambda: torch.ones(2, device="cuda"),
        "stream": torch.cuda.current_stream,
    }
    if parameter not in table:
        pytest.fail(f"no sample argument for a parameter named {parameter!r}: add one to _sample")
    return table[parameter]()


# Not calls a script makes: helpers torch builds other objects with.
_NOT_CALLS = {
    ("torch.backends.cuda", "cuFFTPlanCacheAttrContextProp"),  # a descriptor factory
    ("torch.backends.cuda", "SDPAParams"),  # a C++ argument record, not a CUDA call
    ("torch.backends.cuda", "cuFFTPlanCacheManager"),  # the class of cufft_plan_cache
    ("torch.backends.cudnn", "CudnnModule"),  # the class of torch.backends.cudnn itself
}


def _call(function: Any) -> Any:
    try:
        signature = inspect.signature(getattr(function, "__torchport_original__", function))
    except (TypeError, ValueError):
        return function()
    required = [
        p.name
        for p in signature.parameters.values()
        if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    result = function(*(_sample(name) for name in required))
    if hasattr(result, "__enter__") and hasattr(result, "__exit__"):
        with result:  # contexts (stream(), nvtx.range(), sdp_kernel(), ...) are entered
            pass
    return result


def test_the_surface_is_found() -> None:
    calls = set(_public_calls())
    # a generator that found nothing would pass vacuously
    assert len(calls) > 150
    for expected in (
        ("torch.cuda", "get_device_properties"),
        ("torch.cuda.nvtx", "range_push"),
        ("torch.cuda.amp", "GradScaler"),
        ("torch.backends.cudnn", "is_available"),
        ("torch.backends.cuda", "flash_sdp_enabled"),
    ):
        assert expected in calls


@pytest.mark.parametrize("target", ["cpu", "meta"])
@pytest.mark.parametrize(("module_name", "name"), sorted(set(_public_calls()) - _NOT_CALLS))
def test_every_cuda_call_answers_or_raises_redirect_error(
    module_name: str, name: str, target: str
) -> None:
    with tp.redirect(target), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecations of the calls themselves
        function = getattr(sys.modules[module_name], name)
        try:
            _call(function)
        except RedirectError as error:
            assert name in str(error) and target in str(error)


def test_properties_come_from_the_target() -> None:
    from torchport.hardware import memory_info

    with tp.redirect("cpu"):
        assert torch.cuda.is_available()
        props = torch.cuda.get_device_properties(0)
        assert "cpu" in props.name
        assert props.total_memory == memory_info(torch.device("cpu"), allow_context=False)[1]
        assert (props.major, props.minor) == torch.cuda.get_device_capability() == (0, 0)
        assert props.multi_processor_count >= 1


def test_streams_and_events_are_in_order_no_ops_on_the_cpu() -> None:
    real_stream = torch.cuda.Stream
    with tp.redirect("cpu"):
        side = torch.cuda.Stream()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        with torch.cuda.stream(side):
            x = torch.arange(4.0, device="cuda") * 2
        torch.cuda.current_stream().wait_stream(side)
        x.record_stream(torch.cuda.current_stream())
        end.record()
        end.synchronize()
        assert start.elapsed_time(end) >= 0 and side.query()
        assert isinstance(side, torch.cuda.Stream) and isinstance(start, torch.cuda.Event)
        assert x.tolist() == [0.0, 2.0, 4.0, 6.0]
    assert torch.cuda.Stream is real_stream  # and nothing of it stays behind:
    if torch.cuda.is_available():  # a GPU machine makes its own streams again
        assert torch.cuda.Stream().device.type == "cuda"
    else:
        with pytest.raises((AssertionError, RuntimeError, AttributeError)):
            torch.cuda.Stream()


def test_a_bare_generator_does_not_announce_the_redirect() -> None:
    from torchport.run._notice import on_first_use

    heard: list[str] = []
    with tp.redirect("cpu"), on_first_use(lambda: heard.append("acted")):
        torch.Generator().manual_seed(0)
        torch.Generator(device="cpu")
        torch.set_default_device(None)
        assert heard == []
        assert torch.Generator(device="cuda").device.type == "cpu"
        assert heard == ["acted"]
