"""torchport.redirect: CUDA calls land on the target, and everything is undone on exit."""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import torchport as tp
from torchport.run import RedirectError

CUDA_SPELLINGS = st.one_of(
    st.just("cuda"),
    st.integers(0, 7).map(lambda i: f"cuda:{i}"),
    st.integers(0, 7).map(lambda i: torch.device("cuda", i)),
    st.just(torch.device("cuda")),
    st.integers(0, 7),
)


def test_redirect_is_public_and_named_for_torchport() -> None:
    assert tp.redirect.__module__ == "torchport"
    assert RedirectError.__mro__[1:3] == (tp.TorchportError, RuntimeError)


@pytest.mark.devices("cpu", "meta")
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spelling=CUDA_SPELLINGS)
def test_every_spelling_of_cuda_lands_on_the_target(
    device: torch.device, spelling: object, tiny_model: Callable[[], torch.nn.Module]
) -> None:
    with tp.redirect(device) as target:
        assert target == device
        made = [
            torch.zeros(2, device=spelling),  # type: ignore[call-overload]
            torch.ones(2).to(spelling),  # type: ignore[call-overload]
            torch.ones(2).to(device=spelling),  # type: ignore[call-overload]
            torch.tensor([1.0], device=spelling),  # type: ignore[arg-type]
            torch.ones(1).new_zeros(3, device=spelling),  # type: ignore[call-overload]
            torch.empty_like(torch.ones(2), device=spelling),  # type: ignore[arg-type]
            tiny_model().to(spelling).state_dict()["0.weight"],
            tiny_model().to(device=spelling).state_dict()["0.bias"],
            tiny_model().to(spelling, torch.float16).state_dict()["2.weight"],
        ]
        assert {t.device.type for t in made} == {device.type}
        assert made[-1].dtype == torch.float16
    assert torch.zeros(1).device.type == "cpu"


@pytest.mark.devices("cpu", "meta")
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=20)
@given(spelling=CUDA_SPELLINGS)
def test_every_spelling_of_cuda_lands_on_the_target_under_an_audit(
    device: torch.device, spelling: object
) -> None:
    # `torchport run --audit`: the audit stands its wrappers in for Tensor.to & co., and
    # torch hands the redirect those wrappers; the program must run as it does unaudited
    with tp.redirect(device), tp.audit() as report:
        made = [
            torch.ones(2).to(spelling),  # type: ignore[call-overload]
            torch.ones(2).to(spelling, torch.float16),  # type: ignore[call-overload]
            torch.ones(2).to(device=spelling),  # type: ignore[call-overload]
            torch.tensor([1.0], device=spelling),  # type: ignore[arg-type]
        ]
    assert {t.device.type for t in made} == {device.type}
    assert len(report.transfers) == 4 and report.dropped == 0


@pytest.mark.devices("cpu", "meta")
def test_cuda_methods_and_modules_move_to_the_target(
    device: torch.device, untouched: Callable[[], None], tiny_model: Callable[[], torch.nn.Module]
) -> None:
    with tp.redirect(device):
        x = torch.arange(4.0)
        assert x.cuda().device.type == device.type
        assert x.cuda(1, non_blocking=True).device.type == device.type
        half = x.to("cuda", torch.float16)
        assert (half.device.type, half.dtype) == (device.type, torch.float16)
        model = tiny_model().cuda()
        assert {p.device.type for p in model.parameters()} == {device.type}
        assert tiny_model().to("cuda:0").state_dict()["0.weight"].device.type == device.type
        assert x.type(torch.cuda.LongTensor).dtype == torch.int64
        assert x.type("torch.cuda.HalfTensor").device.type == device.type
    untouched()


def test_the_script_sees_one_cuda_device(untouched: Callable[[], None]) -> None:
    real = torch.cuda.is_available()  # False on a CPU box, True on a GPU machine
    with tp.redirect("cpu"):
        assert torch.cuda.is_available()
        assert torch.cuda.device_count() == 1
        assert torch.cuda.current_device() == 0
        assert "cpu" in torch.cuda.get_device_name(0)
        torch.cuda.set_device(0)
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        assert torch.cuda.memory_allocated() == 0
        assert torch.cuda.max_memory_reserved() == 0
        free, total = torch.cuda.mem_get_info()
        assert 0 < free <= total
        with torch.cuda.device(0):
            assert torch.zeros(1, device="cuda").device.type == "cpu"
    assert torch.cuda.is_available() is real
    untouched()


@pytest.mark.skipif(
    tp.hardware.accelerator_type() is not None, reason="torch.accelerator answers for a real one"
)
@pytest.mark.parametrize("target", ["cpu", "meta"])
def test_torch_accelerator_synchronize_waits_for_a_host_target(target: str) -> None:
    # A script whose CUDA work went to the host waits with the generic API (what fix writes).
    original = torch.accelerator.synchronize
    with pytest.raises(RuntimeError):  # "none is available"; a CUDA build: "no NVIDIA driver"
        original()
    with tp.redirect(target), tp.audit() as report:
        x = torch.ones(3, device="cuda") * 2
        torch.accelerator.synchronize()
        line = sys._getframe().f_lineno - 1
    assert x.device.type == target
    waits = [e for e in report.entries if e.op == "torch.accelerator.synchronize"]
    assert [e.line for e in waits] == [line]
    assert torch.accelerator.synchronize is original


def test_legacy_cuda_tensor_types_build_on_the_target() -> None:
    with tp.redirect("cpu"):
        filled = torch.cuda.FloatTensor(2, 3).fill_(1.5)
        assert filled.shape == (2, 3) and filled.dtype == torch.float32
        assert torch.cuda.LongTensor([1, 2]).tolist() == [1, 2]
        assert isinstance(filled, torch.cuda.FloatTensor)
        assert not isinstance(filled, torch.cuda.LongTensor)
        assert torch.cuda.FloatTensor.__name__ == "FloatTensor"


def test_pinning_is_dropped_on_the_cpu() -> None:
    with tp.redirect("cpu"):
        assert not torch.zeros(3, pin_memory=True).is_pinned()
        x = torch.ones(2)
        assert x.pin_memory() is x


def test_amp_follows_the_target(tiny_model: Callable[[], torch.nn.Module]) -> None:
    model = tiny_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with tp.redirect("cpu"):
        scaler = torch.cuda.amp.GradScaler()
        with torch.cuda.amp.autocast():
            out = model(torch.ones(2, 4))
        assert out.dtype == torch.get_autocast_dtype("cpu")
        with torch.autocast("cuda"):
            assert model(torch.ones(2, 4)).dtype == torch.get_autocast_dtype("cpu")
        with torch.amp.autocast(device_type="cuda", dtype=torch.bfloat16):
            assert torch.is_autocast_enabled("cpu")
        scaler.scale(out.float().sum()).backward()
        scaler.step(optimizer)
        scaler.update()
        assert isinstance(torch.amp.GradScaler(), torch.amp.GradScaler)


def test_unsupported_cuda_api_names_the_call_and_the_device(
    untouched: Callable[[], None],
) -> None:
    with tp.redirect("meta"):
        for call, name in (
            (torch.cuda.CUDAGraph, "torch.cuda.CUDAGraph"),
            (torch.cuda.graph_pool_handle, "torch.cuda.graph_pool_handle()"),
            (lambda: torch.cuda.ExternalStream(0), "torch.cuda.ExternalStream"),
            (lambda: torch.cuda.caching_allocator_alloc(8), "caching_allocator_alloc()"),
        ):
            with pytest.raises(RedirectError, match=re.escape(f"{name} has no meaning on meta")):
                call()
        with pytest.raises(RedirectError, match="mem_get_info\\(\\) has no answer on meta"):
            torch.cuda.mem_get_info()  # no figure is better than a made-up one
        assert not isinstance(object(), torch.cuda.Stream)
        # Exceptions stay real types: scripts catch them.
        assert issubclass(torch.cuda.OutOfMemoryError, RuntimeError)
    untouched()


def test_library_code_keeps_seeing_the_real_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    # The real machine is pinned to "no CUDA" (a GPU machine answers True, as the script
    # does inside), so only the redirect's answer is True. Code compiled under torch's own
    # folder stands in for torch's internals.
    @functools.wraps(torch.cuda.is_available)  # torch's name and module: redirect wraps it
    def no_cuda() -> bool:
        return False

    monkeypatch.setattr(torch.cuda, "is_available", no_cuda)
    fake = os.path.join(os.path.dirname(torch.__file__), "_torchport_probe.py")
    probe = compile("result = torch.cuda.is_available()", fake, "exec")
    namespace: dict[str, object] = {"torch": torch}
    with tp.redirect("cpu"):
        exec(probe, namespace)
        assert torch.cuda.is_available()
    assert namespace["result"] is False


@pytest.mark.parametrize(
    "map_location", [None, "cuda", "cuda:1", torch.device("cuda"), {"cuda:0": "cuda:1"}]
)
def test_gpu_checkpoints_load_on_the_target(
    cuda_checkpoint: Path, map_location: object, tiny_model: Callable[[], torch.nn.Module]
) -> None:
    if not torch.cuda.is_available():  # a GPU machine loads it on its GPU
        with pytest.raises(RuntimeError, match="CUDA"):
            torch.load(cuda_checkpoint)
    with tp.redirect("cpu"):
        state = torch.load(cuda_checkpoint, map_location=map_location)  # type: ignore[arg-type]
    assert {t.device.type for t in state.values()} == {"cpu"}
    torch.manual_seed(1234)
    expected = tiny_model().state_dict()
    assert all(torch.equal(state[k], expected[k]) for k in expected)


_NCCL_CHILD = """
import gc
import sys
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
import torchport as tp

with tp.redirect("cpu"):
    dist.init_process_group("nccl", init_method="file://" + sys.argv[1], rank=0, world_size=1)
    try:
        backend = dist.get_backend()
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
        ddp = DistributedDataParallel(model.cuda(), device_ids=[0], output_device=0)
        ddp(torch.ones(2, 4, device="cuda")).sum().backward()
        grads = all(p.grad is not None and p.grad.device.type == "cpu" for p in model.parameters())
    finally:
        ddp = None  # its reducer's gloo work ends with the group, not in the interpreter's exit
        gc.collect()
        dist.destroy_process_group()
print(backend, grads)
"""
# gloo's worker thread now and then aborts the process as it exits, after the work is done
# (test_ddp_example.py): that abort, after the child printed its answer, is run once more.
_EXIT_ABORT = "terminate called without an active exception"


def test_nccl_becomes_gloo_and_ddp_drops_device_ids(tmp_path: Path) -> None:
    # A process group is process-wide state (and init_process_group installs a "[rank0]:"
    # sys.excepthook that outlives it), so the group lives in a child of its own. Gloo's
    # in-process start once hung past the test limit on torch 2.6 late in a long run (not
    # reproduced alone): a child that hangs is killed and run once more, as is one that
    # aborted at exit after its answer (_EXIT_ABORT).
    for attempt in range(2):
        store = tmp_path / f"store{attempt}"
        try:
            done = subprocess.run(
                [sys.executable, "-c", _NCCL_CHILD, str(store)],
                capture_output=True, text=True, timeout=120,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            continue
        answered = done.stdout.split() == ["gloo", "True"]
        if done.returncode != 0 and answered and _EXIT_ABORT in done.stderr and attempt == 0:
            continue
        assert done.returncode == 0, done.stderr[-3000:]
        assert answered, done.stdout + done.stderr[-3000:]
        return
    pytest.fail("the child's gloo process group hung twice (120 s each), or hung then aborted")


def _real_cuda(make: Callable[[], torch.Tensor]) -> str:
    """What this machine makes of a CUDA call: the device type, or the error it raises."""
    try:
        return make().device.type
    except (RuntimeError, AssertionError) as exc:
        return f"{type(exc).__name__}: {exc}"


def test_everything_is_restored_after_an_exception(untouched: Callable[[], None]) -> None:
    before = _real_cuda(lambda: torch.ones(1).cuda())
    # The real machine's answer: a GPU's tensor, or a CPU box's error (a CPU build says
    # "not compiled with CUDA"; a CUDA build without a GPU, "no NVIDIA driver").
    assert before == "cuda" if torch.cuda.is_available() else re.search(r"CUDA|NVIDIA", before)
    with pytest.raises(ZeroDivisionError), tp.redirect("cpu"):
        torch.ones(1).cuda()
        _ = 1 / 0
    untouched()
    assert _real_cuda(lambda: torch.ones(1).cuda()) == before


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_a_cuda_target_patches_nothing(snapshot: Callable[[], Any]) -> None:
    before = snapshot()
    with tp.redirect("cuda:0") as target:
        assert target == torch.device("cuda", 0)
        inside = snapshot()
    assert inside[0] == before[0] and inside[1] == before[1]


def test_nested_redirects_apply_innermost_first(
    cuda_checkpoint: Path, untouched: Callable[[], None], tiny_model: Callable[[], torch.nn.Module]
) -> None:
    with tp.redirect("cpu"):
        with tp.redirect("meta"):
            assert torch.ones(1).cuda().device.type == "meta"
            assert torch.cuda.get_device_name().startswith("meta")
            assert torch.cuda.FloatTensor(2).device.type == "meta"
            assert tiny_model().cuda().state_dict()["0.bias"].is_meta
            state = torch.load(cuda_checkpoint, map_location="cuda")
            assert {t.device.type for t in state.values()} == {"meta"}
        assert torch.ones(1).cuda().device.type == "cpu"
        assert torch.cuda.FloatTensor(2).device.type == "cpu"
        state = torch.load(cuda_checkpoint)
        assert {t.device.type for t in state.values()} == {"cpu"}
        assert torch.cuda.is_available()
    untouched()


def test_the_same_object_cannot_be_entered_twice(untouched: Callable[[], None]) -> None:
    block = tp.redirect("cpu")
    with block:
        with pytest.raises(RedirectError, match="already active"), block:
            pass
        assert torch.ones(1).cuda().device.type == "cpu"
    with block:  # usable again once exited
        pass
    untouched()


def test_blocks_must_exit_in_reverse_order(untouched: Callable[[], None]) -> None:
    outer, inner = tp.redirect("cpu"), tp.redirect("meta")
    outer.__enter__()
    inner.__enter__()
    with pytest.raises(RedirectError, match="reverse order"):
        outer.__exit__(None, None, None)
    inner.__exit__(None, None, None)
    outer.__exit__(None, None, None)
    untouched()


def test_another_thread_cannot_redirect_at_the_same_time() -> None:
    errors: list[BaseException] = []

    def other() -> None:
        try:
            with tp.redirect("meta"):
                pass
        except RedirectError as exc:
            errors.append(exc)

    with tp.redirect("cpu"):
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
    assert len(errors) == 1 and "another thread" in str(errors[0])


def test_modes_pushed_inside_the_block_survive_its_exit(untouched: Callable[[], None]) -> None:
    block = tp.redirect("cpu")
    block.__enter__()
    context = torch.device("meta")
    context.__enter__()  # a mode the code left on the stack above the redirect
    block.__exit__(None, None, None)
    try:
        assert torch.zeros(1).device.type == "meta"
    finally:
        context.__exit__(None, None, None)
    untouched()


def test_bad_device_is_a_device_error() -> None:
    with pytest.raises(tp.DeviceError, match="not a device"):
        tp.redirect("gpu0")


@pytest.mark.parametrize("device", ["xpu:7", "cuda:99", "mps:3", "cpu:1", 7])
def test_a_device_that_is_not_here_is_refused_naming_the_argument(device: str) -> None:
    # Accepting it silently would fail later, deep in the script, or not at all.
    with pytest.raises(tp.DeviceError, match=re.escape(f"device={device!r}")):
        tp.redirect(device)


@pytest.mark.parametrize("count", [0, -1, 1.5, True])
def test_device_count_below_one_is_a_config_error(count: Any) -> None:
    with pytest.raises(tp.ConfigError, match="device_count"):
        tp.redirect("cpu", device_count=count)


def test_module_to_keeps_its_other_forms(
    untouched: Callable[[], None], tiny_model: Callable[[], torch.nn.Module]
) -> None:
    with tp.redirect("meta"):
        assert tiny_model().to(torch.float64).state_dict()["0.weight"].dtype == torch.float64
        like = torch.ones(1, dtype=torch.float16, device="meta")
        moved = tiny_model().to(like).state_dict()["0.weight"]
        assert (moved.device.type, moved.dtype) == ("meta", torch.float16)
        assert tiny_model().to("cpu").state_dict()["0.weight"].device.type == "cpu"
    untouched()


def test_generators_and_default_devices_land_on_the_target(untouched: Callable[[], None]) -> None:
    with tp.redirect("cpu"):
        for generator in (torch.Generator(device="cuda"), torch.Generator("cuda:0")):
            assert generator.device.type == "cpu" and isinstance(generator, torch.Generator)
            generator.manual_seed(3)
            drawn = torch.randn(3, generator=generator, device="cuda")
            assert torch.equal(drawn, torch.randn(3, generator=torch.Generator().manual_seed(3)))
        assert torch.Generator(device="cpu").device.type == "cpu"
        try:
            torch.set_default_device("cuda")
            assert torch.zeros(1).device.type == "cpu"
            torch.set_default_device("meta")  # another device passes through
            assert torch.zeros(1).device.type == "meta"
        finally:
            torch.set_default_device(None)
    untouched()


def test_a_cuda_default_tensor_type_sets_the_dtype_on_the_target() -> None:
    storage = torch.Storage  # set_default_dtype replaces it; the test puts it back
    try:
        with tp.redirect("cpu"):
            torch.set_default_tensor_type(torch.cuda.DoubleTensor)
            assert torch.zeros(1).dtype == torch.float64
            torch.set_default_tensor_type("torch.cuda.FloatTensor")
            assert torch.zeros(1).dtype == torch.float32
    finally:
        torch.set_default_dtype(torch.float32)
        torch.Storage = storage  # type: ignore[misc]


def test_a_generator_the_target_cannot_have_is_a_redirect_error() -> None:
    with tp.redirect("meta"), pytest.raises(RedirectError, match="cannot follow this run to meta"):
        torch.Generator(device="cuda")


def test_one_device_per_local_worker_with_a_current_index_per_thread(
    untouched: Callable[[], None],
) -> None:
    with tp.redirect("cpu", device_count=2):
        assert torch.cuda.device_count() == 2 and torch.cuda.current_device() == 0
        torch.cuda.set_device(1)
        assert torch.cuda.current_device() == 1
        torch.cuda.set_device("cuda:0")
        with torch.cuda.device(1):
            assert torch.cuda.current_device() == 1
        assert torch.cuda.current_device() == 0
        seen: list[int] = []
        thread = threading.Thread(target=lambda: seen.append(torch.cuda.current_device()))
        torch.cuda.set_device(torch.device("cuda", 1))
        thread.start()
        thread.join()
        assert seen == [0]  # CUDA's current device is per thread
        assert torch.ones(1, device="cuda:1").device.type == "cpu"
        for bad in (2, "cuda:5"):
            with pytest.raises(RedirectError, match="shows the script 2 CUDA device"):
                torch.cuda.set_device(bad)
        with pytest.raises(RedirectError, match="use an index below 2"):
            torch.cuda.device(7)
    untouched()


def test_threads_started_inside_see_the_same_redirect(untouched: Callable[[], None]) -> None:
    results: list[object] = []
    real = _real_cuda(lambda: torch.zeros(1, device=0))  # a GPU machine's or the error

    def work() -> None:
        results.append(torch.cuda.is_available())
        results.append(torch.ones(1).cuda().device.type)
        results.append(torch.zeros(1, device="cuda:0").device.type)
        results.append(torch.nn.Linear(1, 1).to(0).weight.device.type)

    with tp.redirect("meta"):
        thread = threading.Thread(target=work)
        thread.start()
        thread.join()
    assert results == [True, "meta", "meta", "meta"]
    untouched()

    after = threading.Thread(
        target=lambda: results.append(_real_cuda(lambda: torch.zeros(1, device=0)))
    )
    after.start()
    after.join()
    assert results[4:] == [real]  # undone: the thread meets the real machine again


def test_python_children_of_the_code_are_redirected_but_not_torchs(
    untouched: Callable[[], None],
) -> None:
    echo = str(Path(__file__).parent / "scripts" / "echo_args.py")
    fake = os.path.join(os.path.dirname(torch.__file__), "_torchport_probe.py")
    start = "children.append(subprocess.Popen([sys.executable, echo], stdout=subprocess.DEVNULL))"
    children: list[subprocess.Popen[bytes]] = []
    namespace = {"subprocess": subprocess, "sys": sys, "echo": echo, "children": children}
    try:
        with tp.redirect("cpu"):
            exec(compile(start, fake, "exec"), namespace)  # as if torch started it
            exec(compile(start, __file__, "exec"), namespace)
    finally:
        for child in children:
            child.kill()
            child.wait()
    run = ["-m", "torchport", "run", "--quiet", "--device", "cpu"]
    assert [child.args for child in children] == [
        [sys.executable, echo],
        [sys.executable, *run, echo],
    ]
    untouched()


def test_cuda_random_state_is_the_targets_generator(untouched: Callable[[], None]) -> None:
    torch.manual_seed(11)
    with tp.redirect("cpu", device_count=2):
        saved = torch.cuda.get_rng_state()
        assert torch.equal(saved, torch.get_rng_state())  # the CPU's one generator
        assert len(torch.cuda.get_rng_state_all()) == 2
        assert torch.cuda.initial_seed() == torch.initial_seed() == 11
        first = torch.randn(3, device="cuda")
        torch.set_rng_state(saved)  # what a checkpoint resume does for the CPU...
        torch.cuda.set_rng_state(saved)  # ...and for CUDA: one restore, as a CPU port would do
        torch.cuda.set_rng_state_all([saved, saved])
        assert torch.equal(torch.randn(3, device="cuda"), first)
    with tp.redirect("meta"), pytest.raises(RedirectError, match="get_rng_state"):
        torch.cuda.get_rng_state()
    untouched()
