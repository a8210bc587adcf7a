"""torchport's own API follows ``tp.redirect``: "cuda" means where ``.cuda()`` goes.

Under ``tp.redirect(target)`` (what ``torchport run --device target`` enters) a
script's ``.cuda()`` lands on the target; ``to_device``, ``DeviceLoader`` and
``pick_device`` must send it to the same place, whatever index it names, and
``pin_memory()`` must not fail where there is no accelerator to pin for.
"""

from __future__ import annotations

import pytest
import torch

import torchport as tp
from torchport.place import redirect_target, resolve_device

TARGETS = ["cpu", "meta"]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    "named", ["cuda", "cuda:0", torch.device("cuda"), torch.device("cuda", 0), 0]
)
def test_to_device_sends_cuda_where_cuda_goes(target: str, named: object) -> None:
    batch = {"ids": torch.arange(4), "mask": torch.ones(2, 2)}
    with tp.redirect(target):
        where = torch.ones(1).cuda().device
        out = tp.to_device(batch, named)  # type: ignore[arg-type]
        single = tp.to_device(torch.zeros(3), named)  # type: ignore[arg-type]
    assert where.type == target
    assert {t.device.type for t in out.values()} == {target}
    assert single.device.type == target


@pytest.mark.parametrize("target", TARGETS)
def test_the_loader_and_the_automatic_choice_agree_with_cuda(target: str) -> None:
    batches = [(torch.ones(2), torch.tensor(1)) for _ in range(3)]
    with tp.redirect(target):
        cuda = torch.zeros(1).cuda().device
        assert tp.pick_device() == cuda
        assert tp.pick_device("cuda") == cuda and tp.pick_device("auto") == cuda
        device, why = tp.pick_device_with_reason()
        assert device == cuda and "redirect" in why
        loader = tp.DeviceLoader(batches, "cuda")
        assert loader.device == cuda
        assert all(x.device == cuda for x, _ in loader)
        assert tp.DeviceLoader(batches).device == cuda
    # Undone on exit: "cuda" is again a device this CPU-only machine lacks.
    assert redirect_target() is None
    if not torch.cuda.is_available():
        with pytest.raises(tp.DeviceError):
            tp.to_device(torch.ones(1), "cuda")


def test_other_devices_keep_their_meaning_and_nesting_unwinds() -> None:
    with tp.redirect("meta"):
        assert tp.to_device(torch.ones(1), "cpu").device.type == "cpu"
        assert tp.pick_device("cpu").type == "cpu"
        with tp.redirect("cpu"):
            assert resolve_device("cuda:3").type == "cpu"
        assert resolve_device("cuda").type == "meta"
    assert redirect_target() is None


def test_the_environment_variable_follows_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCHPORT_DEVICE", "cuda:0")
    with tp.redirect("meta"):
        assert tp.pick_device().type == "meta"


@pytest.mark.parametrize("target", TARGETS)
def test_pin_memory_does_not_fail_without_an_accelerator(target: str) -> None:
    if torch.accelerator.is_available():
        pytest.skip("this machine has an accelerator to pin for")
    x = torch.ones(3)
    with tp.redirect(target):
        assert x.pin_memory() is x
        assert not torch.zeros(2, pin_memory=True).is_pinned()
        out = tp.to_device({"x": x.pin_memory()}, "cuda")
    assert out["x"].device.type == target


def test_a_thread_the_redirect_does_not_reach_is_not_redirected_by_torchport_either() -> None:
    import threading

    started, entered, done = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, object] = {}

    def worker() -> None:  # running before the redirect: its .cuda() is not redirected
        started.set()
        entered.wait(10)
        for name, call in [
            ("cuda()", lambda: torch.ones(1).cuda()),
            ("to_device", lambda: tp.to_device(torch.ones(1), "cuda")),
        ]:
            try:
                seen[name] = call().device.type
            except Exception as exc:  # no CUDA on this machine: both must fail alike
                seen[name] = type(exc).__name__ if "cuda" in str(exc).lower() else "other"
        done.set()

    def inside() -> None:  # started inside the block: redirected like the block
        seen["inner"] = tp.to_device(torch.ones(1), "cuda").device.type

    thread = threading.Thread(target=worker)
    thread.start()
    started.wait(10)
    with tp.redirect("meta"):
        entered.set()
        done.wait(10)
        child = threading.Thread(target=inside)
        child.start()
        child.join(10)
    thread.join(10)
    assert seen["inner"] == "meta"
    if torch.cuda.is_available():
        assert seen["cuda()"] == seen["to_device"] == "cuda"
    else:
        assert seen["cuda()"] != "meta" and seen["to_device"] != "meta"
