"""Modules keep their Parameters when they move; optimizers follow them or say what to do."""

from __future__ import annotations

import threading
import warnings
import weakref
from collections.abc import Iterator
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

import torchport as tp

META = torch.device("meta")


@pytest.fixture
def overwrite_params() -> Iterator[None]:
    """torch's flag that makes module.to() replace every Parameter."""
    before = torch.__future__.get_overwrite_module_params_on_conversion()
    torch.__future__.set_overwrite_module_params_on_conversion(True)
    yield
    torch.__future__.set_overwrite_module_params_on_conversion(before)


def _trained(opt_cls: Any = torch.optim.Adam, **kwargs: Any) -> tuple[nn.Module, Any]:
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    opt = opt_cls(model.parameters(), lr=0.1, **kwargs)
    x = torch.randn(8, 3)

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = model(x).pow(2).sum()
        loss.backward()
        return loss

    for _ in range(3):
        opt.step(closure)
    return model, opt


def _same_objects(model: nn.Module, opt: torch.optim.Optimizer) -> bool:
    ours = [id(p) for group in opt.param_groups for p in group["params"]]
    return ours == [id(p) for p in model.parameters()]


@pytest.mark.parametrize("flag", [False, True], ids=["default", "overwrite-flag"])
@pytest.mark.parametrize("target", ["meta", "cpu"])
def test_parameters_keep_their_identity(
    request: pytest.FixtureRequest, flag: bool, target: str
) -> None:
    if flag:
        request.getfixturevalue("overwrite_params")
    model, opt = _trained()
    before = [id(p) for p in model.parameters()]
    tp.to_device(model, target, dtype=torch.float64 if target == "cpu" else None)
    assert [id(p) for p in model.parameters()] == before
    assert all(isinstance(p, nn.Parameter) for p in model.parameters())
    assert _same_objects(model, opt)
    tp.to_device(opt, target)
    for p in model.parameters():
        assert opt.state[p]["exp_avg"].device.type == target
        assert opt.state[p]["exp_avg"].dtype == p.dtype


def test_optimizer_steps_after_a_move_and_a_cast() -> None:
    model, opt = _trained()
    tp.to_device(model, "cpu", dtype=torch.float64)
    tp.to_device(opt, "cpu", dtype=torch.float64)
    weight = model[0].weight
    before = weight.detach().clone()
    model(torch.randn(2, 3, dtype=torch.float64)).sum().backward()
    opt.step()
    assert not torch.equal(weight, before)  # the step reached the model's parameter


def test_gradients_move_with_their_parameters() -> None:
    model, _ = _trained()
    tp.to_device(model, "meta")
    assert all(p.grad is not None and p.grad.device == META for p in model.parameters())


def test_optimizer_before_its_model_says_what_to_do() -> None:
    _, opt = _trained()
    with pytest.raises(tp.DeviceMismatchError, match=r"move the model first") as info:
        tp.to_device(opt, "meta")
    assert "to_device(model, 'meta')" in str(info.value)
    assert isinstance(info.value, RuntimeError)


def test_optimizer_dtype_must_match_the_model() -> None:
    model, opt = _trained()
    with pytest.raises(tp.DeviceMismatchError, match=r"cast the model first"):
        tp.to_device(opt, "cpu", dtype=torch.float64)
    tp.to_device(model, "cpu", dtype=torch.float64)
    tp.to_device(opt, "cpu", dtype=torch.float64)
    assert all(opt.state[p]["exp_avg_sq"].dtype == torch.float64 for p in model.parameters())


def test_lbfgs_list_state_moves_too() -> None:
    model, opt = _trained(torch.optim.LBFGS, history_size=4, max_iter=3)
    (state,) = opt.state.values()
    assert state["old_dirs"] and state["old_stps"] and state["ro"]
    tp.to_device(model, "meta")
    tp.to_device(opt, "meta")
    (state,) = opt.state.values()
    for key in ("old_dirs", "old_stps", "ro"):
        assert all(t.device == META for t in state[key]), key
    assert all(t is None or t.device == META for t in state["al"])
    assert state["d"].device == META and state["prev_flat_grad"].device == META
    assert isinstance(state["n_iter"], int)


def _state_of(model: nn.Module) -> list[tuple[str, int, str, Any]]:
    """What "nothing moved" compares: each parameter, gradient and buffer, by object."""
    found = []
    for name, t in [*model.named_parameters(), *model.named_buffers()]:
        found.append((name, id(t), t.device.type, t.detach().clone() if not t.is_meta else None))
        if t.grad is not None:
            found.append((f"{name}.grad", id(t.grad), t.grad.device.type, t.grad.clone()))
    return found


def _same_state(a: list[tuple[str, int, str, Any]], b: list[tuple[str, int, str, Any]]) -> bool:
    return all(
        x[:3] == y[:3] and (x[3] is None or torch.equal(x[3], y[3]))
        for x, y in zip(a, b, strict=True)
    ) and len(a) == len(b)


def _quantized() -> torch.Tensor:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # quantized tensors are deprecated
        return torch.quantize_per_tensor(torch.ones(3), 0.1, 0, torch.qint8)


@given(layers=st.integers(1, 4), data=st.data(), hold=st.sampled_from(["weak", "graph", "copy"]))
@settings(max_examples=30, deadline=None)
def test_a_move_that_would_fail_raises_before_anything_moved(
    layers: int, data: st.DataObject, hold: str
) -> None:
    model = nn.Sequential(*(nn.Linear(3, 3) for _ in range(layers)))
    model(torch.randn(2, 3)).sum().backward()  # every parameter has a gradient
    at = data.draw(st.integers(0, layers - 1))
    kept: Any = None
    if hold == "weak":
        kept = weakref.ref(model[at].bias)  # torch cannot swap a tensor with weak references
        match = "weak reference"
    elif hold == "graph":
        x = torch.randn(2, 3, requires_grad=True)
        kept = model(x)  # not yet backward: the graph holds the weights it used
        match = "computation graph"
    else:
        model[at].register_buffer("codes", _quantized())  # torch cannot copy it to meta
        match = "quantized"
    before = _state_of(model)
    with pytest.raises(tp.UnsupportedBatchError, match=match):
        tp.to_device(model, "meta")
    assert _same_state(_state_of(model), before), "the failed move changed the module"
    del kept


@given(layers=st.integers(1, 4), data=st.data())
@settings(deadline=None)
def test_a_lazy_modules_failed_move_raises_before_anything_moved(
    layers: int, data: st.DataObject
) -> None:
    # A module holding a lazy layer is moved by torch's own conversion (a swap would
    # break its UninitializedParameter); a tensor torch cannot copy, wherever it sits,
    # is still named before any tensor moved. (On the simulated accelerator the
    # UninitializedParameter itself is such a tensor.)
    lazy_at = data.draw(st.integers(0, layers - 1))
    model = nn.Sequential(
        *(nn.LazyLinear(3) if i == lazy_at else nn.Linear(3, 3) for i in range(layers))
    )
    model[data.draw(st.integers(0, layers - 1))].register_buffer("codes", _quantized())
    before = [(n, id(t), t.device.type) for n, t in _named(model)]
    with pytest.raises(tp.UnsupportedBatchError, match=r"'\d+\.codes'.*quantized"):
        tp.to_device(model, "meta")
    assert [(n, id(t), t.device.type) for n, t in _named(model)] == before


def _named(model: nn.Module) -> list[tuple[str, torch.Tensor]]:
    return [*model.named_parameters(), *model.named_buffers()]


def test_optimizer_state_torch_cannot_copy_is_named_before_any_state_changed() -> None:
    model, opt = _trained()
    tp.to_device(model, "meta")
    last = list(model.parameters())[-1]
    opt.state[last]["codes"] = _quantized()
    before = {id(p): dict(state) for p, state in opt.state.items()}
    with pytest.raises(tp.UnsupportedBatchError, match=r"'codes'.*quantized"):
        tp.to_device(opt, "meta")
    after = {id(p): dict(state) for p, state in opt.state.items()}
    assert before.keys() == after.keys()
    for key, state in before.items():
        assert all(after[key][name] is value for name, value in state.items())


def test_after_the_graph_is_used_the_move_keeps_every_parameter() -> None:
    model, _ = _trained()
    loss = model(torch.randn(2, 3)).sum()
    with pytest.raises(tp.UnsupportedBatchError, match="run backward"):
        tp.to_device(model, "meta")
    loss.backward()
    del loss
    params = list(model.parameters())
    tp.to_device(model, "meta")
    assert list(model.parameters()) == params and all(p.is_meta for p in params)


def test_module_already_there_is_left_alone() -> None:
    model, _ = _trained()
    weights = [p.data_ptr() for p in model.parameters()]
    tp.to_device(model, "cpu:0")
    assert [p.data_ptr() for p in model.parameters()] == weights


def test_rnn_keeps_its_flat_weights_consistent() -> None:
    rnn = nn.LSTM(3, 4)
    tp.to_device(rnn, "cpu", dtype=torch.float64)
    assert all(w.dtype == torch.float64 for w in rnn._flat_weights if w is not None)
    out, _ = rnn(torch.randn(2, 1, 3, dtype=torch.float64))
    assert out.dtype == torch.float64


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_identity_under_the_overwrite_flag_and_pageable_offload(
    overwrite_params: None,
) -> None:
    model, opt = _trained()
    tp.to_device(model, "cuda")
    tp.to_device(opt, "cuda")
    assert _same_objects(model, opt)
    before = model[0].weight.detach().clone()
    model(torch.randn(2, 3, device="cuda")).sum().backward()
    opt.step()
    assert not torch.equal(model[0].weight, before)
    tp.to_device(model, "cpu")  # offload: pageable memory, complete when this returns
    tp.to_device(opt, "cpu")
    assert all(p.is_cpu and not p.is_pinned() for p in model.parameters())
    assert all(not opt.state[p]["exp_avg"].is_pinned() for p in model.parameters())


def test_tied_weights_stay_one_parameter() -> None:
    class Tied(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(10, 4)
            self.out = nn.Linear(4, 10, bias=False)
            self.out.weight = self.emb.weight

    model = Tied()
    weight = model.emb.weight
    model.out(model.emb(torch.tensor([1, 2]))).sum().backward()
    tp.to_device(model, "meta")
    assert model.emb.weight is weight and model.out.weight is weight
    assert weight.device == META and weight.grad is not None and weight.grad.device == META


@pytest.mark.filterwarnings("ignore:Lazy modules are a new feature")
def test_lazy_modules_stay_lazy() -> None:
    model = nn.LazyLinear(3)
    tp.to_device(model, "cpu", dtype=torch.float64)
    out = model(torch.randn(2, 5, dtype=torch.float64))
    assert out.shape == (2, 3) and model.weight.dtype == torch.float64


def _lazy_state(model: nn.Module) -> list[tuple[str, int, type, str, torch.dtype]]:
    return [(n, id(t), type(t), t.device.type, t.dtype) for n, t in _named(model)]


@pytest.mark.filterwarnings("ignore:Lazy modules are a new feature")
@given(
    layers=st.integers(1, 3),
    data=st.data(),
    way=st.sampled_from([("meta", None), ("cpu", torch.float64), ("meta", torch.float64)]),
    flag=st.booleans(),
)
@settings(deadline=None, max_examples=30)
def test_a_lazy_module_stays_lazy_or_the_move_raises_before_anything_moved(
    layers: int, data: st.DataObject, way: tuple[str, torch.dtype | None], flag: bool
) -> None:
    # torch's own conversion replaces an UninitializedParameter by a plain empty Parameter
    # wherever it cannot set its data in place (to meta; under the overwrite flag): the
    # layer is no longer lazy (it would compute with a 0-element weight) and the captured
    # parameters are stale. Oracle: after a move that returns, every lazy layer is still
    # lazy and a forward pass initializes it; a move that raises names the lazy parameter
    # and leaves the model exactly as it was.
    lazy_at = data.draw(st.integers(0, layers - 1))
    model = nn.Sequential(
        *(nn.LazyLinear(4) if i == lazy_at else nn.Linear(4, 4) for i in range(layers))
    )
    target, dtype = way
    before = _lazy_state(model)
    previous = torch.__future__.get_overwrite_module_params_on_conversion()
    torch.__future__.set_overwrite_module_params_on_conversion(flag)
    try:
        tp.to_device(model, target, dtype=dtype)
    except tp.UnsupportedBatchError as exc:
        assert f"'{lazy_at}.weight'" in str(exc) and "lazy" in str(exc)
        assert _lazy_state(model) == before, "the refused move changed the module"
        return
    finally:
        torch.__future__.set_overwrite_module_params_on_conversion(previous)
    assert model[lazy_at].has_uninitialized_params(), "the lazy layer was left broken"
    out = model(torch.ones(2, 4, device=target, dtype=dtype or torch.float32))
    assert out.shape == (2, 4) and model[lazy_at].weight.shape == (4, 4)


def test_an_optimizer_left_behind_by_a_plain_module_to_is_reported() -> None:
    model, opt = _trained()
    model.to("meta")  # torch replaces the parameters: the optimizer holds the old ones
    with pytest.raises(tp.DeviceMismatchError, match=r"still holds the old ones"):
        tp.to_device(opt, "meta")


# --- legacy reparametrizations: the weight their hook computes is not a user's tensor ------


def _legacy(kind: str, layer: nn.Module) -> nn.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # both are deprecated in torch
        if kind == "weight_norm":
            return nn.utils.weight_norm(layer, name="weight", dim=0)
        return nn.utils.spectral_norm(layer, name="weight", n_power_iterations=2)


@pytest.mark.parametrize("kind", ["weight_norm", "spectral_norm"])
@pytest.mark.parametrize("conv", [True, False])
def test_legacy_reparametrized_weights_move_without_a_warning(kind: str, conv: bool) -> None:
    layer = nn.Conv1d(2, 3, 3) if conv else nn.Linear(5, 4)
    model = nn.Sequential(_legacy(kind, layer), nn.Tanh())
    x = torch.randn(2, 2, 6) if conv else torch.randn(2, 5)
    model(x)  # a training step: spectral_norm refines its u and v once
    model.eval()  # no more power iterations: the output is a function of the state
    expected = model(x).detach()  # a graph kept alive would hold the parameters (no swap)
    estimates = {k: v.clone() for k, v in model.named_buffers()}  # spectral_norm's u and v
    with warnings.catch_warnings():
        warnings.simplefilter("error", tp.UnregisteredTensorWarning)
        tp.to_device(model, "cpu", dtype=torch.float64)
        assert model[0].weight.dtype == torch.float64  # computed again from the cast params
        assert all(torch.equal(model.get_buffer(k), v.double()) for k, v in estimates.items())
        assert torch.allclose(model(x.double()), expected.double(), atol=1e-5)
        tp.to_device(model, "meta")
    assert model[0].weight.device == META


def test_a_real_stray_beside_a_reparametrized_weight_is_still_named() -> None:
    layer = _legacy("weight_norm", nn.Linear(2, 2))
    layer.scale = torch.ones(1)  # a plain attribute nothing computes again
    with pytest.warns(tp.UnregisteredTensorWarning, match=r"'scale'") as record:
        tp.to_device(layer, "meta")
    assert "'weight'" not in str(record[0].message)


# --- training state that has its own rules is refused, with what to do instead -----------


def test_grad_scaler_and_lr_schedulers_are_refused_with_advice() -> None:
    _, opt = _trained()
    scheduler = torch.optim.lr_scheduler.StepLR(opt, step_size=2)
    plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(opt)
    scaler = torch.amp.GradScaler("cpu")
    with pytest.raises(
        tp.UnsupportedBatchError, match=r"GradScaler.*GradScaler\('meta'\).*load_state_dict"
    ):
        tp.to_device(scaler, "meta")
    for sched in (scheduler, plateau):
        with pytest.raises(tp.UnsupportedBatchError, match=r"LR scheduler.*to_device\(optimizer"):
            tp.to_device(sched, "meta")
    assert opt.param_groups[0]["lr"] == 0.1  # nothing was touched


@pytest.mark.parametrize(
    ("make", "found"),
    [
        (lambda m, o: {"model": m, "x": torch.ones(1)}, r"batch\['model'\] is a module"),
        (lambda m, o: [torch.ones(1), {"opt": o}], r"batch\[1\]\['opt'\] is an optimizer"),
        (lambda m, o: (torch.amp.GradScaler("cpu"),), r"batch\[0\] is a GradScaler"),
    ],
)
def test_training_state_inside_a_batch_is_refused_naming_its_path(make: Any, found: str) -> None:
    model, opt = _trained()
    batch = make(model, opt)
    with pytest.raises(tp.UnsupportedBatchError, match=found):
        tp.to_device(batch, "meta")
    assert all(p.device.type == "cpu" for p in model.parameters())  # left as it was


@pytest.mark.filterwarnings("ignore:.*torch.nn.utils.weight_norm.* is deprecated:FutureWarning")
@pytest.mark.parametrize("reparametrize", ["weight_norm", "spectral_norm"])
def test_legacy_reparametrized_modules_keep_their_parameter_objects(reparametrize: str) -> None:
    torch.manual_seed(0)
    make = getattr(torch.nn.utils, reparametrize)
    x = torch.randn(4, 3)
    for target, dtype in (("meta", None), ("cpu", torch.float64)):
        model = torch.nn.Sequential(make(torch.nn.Linear(3, 2)), torch.nn.Tanh()).eval()
        captured = list(model.parameters())
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        expected = model(x).detach().double()  # with grad: the weight's graph holds g and v
        tp.to_device(model, target, dtype=dtype)
        assert list(map(id, model.parameters())) == list(map(id, captured))  # the very objects
        assert list(map(id, optimizer.param_groups[0]["params"])) == list(map(id, captured))
        assert all(p.device.type == target for p in captured)
        if dtype is not None:
            assert all(p.dtype == dtype for p in captured)
            with torch.no_grad():
                assert torch.allclose(model(x.double()), expected, atol=1e-6)


@settings(max_examples=30, deadline=None)  # a model, a move and a backward each
@given(
    hooked=st.lists(st.tuples(st.integers(0, 3), st.sampled_from(["grad", "post"])), max_size=6),
    tagged=st.sets(st.integers(0, 3)),
    dtype=st.sampled_from([None, torch.float64]),
    target=st.sampled_from(["cpu", "meta"]),
)
def test_a_moved_parameter_keeps_its_hooks_and_attributes(
    hooked: list[tuple[int, str]], tagged: set[int], dtype: Any, target: str
) -> None:
    # A Parameter keeps its identity through the move (torch's swap), and with it the
    # hooks registered on it (register_hook, register_post_accumulate_grad_hook: an
    # optimizer stepping in backward, a gradient compressor), each firing as before,
    # and its attributes (Megatron's tensor_model_parallel, a no-weight-decay flag).
    model = nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 2))
    params = list(model.parameters())
    for at in tagged:
        params[at].tag = ("tag", at)  # type: ignore[attr-defined]
    fired: list[tuple[int, str]] = []
    for at, kind in hooked:
        p = params[at]
        if kind == "grad":
            p.register_hook(lambda g, at=at: fired.append((at, "grad")))  # type: ignore[misc]
        else:
            p.register_post_accumulate_grad_hook(lambda q, at=at: fired.append((at, "post")))
    tp.to_device(model, target, dtype=dtype)
    assert all(a is b for a, b in zip(model.parameters(), params, strict=True))
    assert {at for at, p in enumerate(params) if vars(p)} == tagged
    assert all(vars(params[at]) == {"tag": ("tag", at)} for at in tagged)
    x = torch.randn(2, 3, dtype=params[0].dtype, device=params[0].device)
    model(x).sum().backward()
    assert sorted(fired) == sorted(hooked)  # each hook once, as without the move


# --- torch's swap flag is process-wide: another thread's move (or the user) may have set it --


def _flag_movers() -> list[tuple[nn.Module, Any]]:
    """A lazy model and one with a weakly held weight: both moved by torch's set_data path."""
    lazy = nn.Sequential(nn.Linear(4, 4), nn.LazyLinear(3))
    held = nn.Linear(4, 4)
    return [(lazy, None), (held, weakref.ref(held.weight))]


def _check_flag_moves(pairs: list[tuple[nn.Module, Any]]) -> None:
    lazy, held = pairs[0][0], pairs[1][0]
    weight = held.weight
    tp.to_device(lazy, "cpu", dtype=torch.float64)
    assert lazy[1].has_uninitialized_params(), "the lazy layer was left broken"
    assert lazy[0].weight.dtype == torch.float64
    tp.to_device(held, "cpu", dtype=torch.float64)  # torch cannot swap it: set_data keeps it
    assert held.weight is weight and weight.dtype == held.bias.dtype == torch.float64


@pytest.mark.filterwarnings("ignore:Lazy modules are a new feature")
def test_moves_by_torchs_set_data_path_ignore_a_swap_flag_set_outside() -> None:
    # Lazy layers and parameters torch refuses to swap are moved by torch's own conversion
    # (set_data); with torch.__future__'s swap flag on (the user's, or another thread's
    # move holding it) that conversion swaps instead: the lazy layer became a plain empty
    # one with no error, and the weakly held weight raised torch's raw "Couldn't swap".
    previous = torch.__future__.get_swap_module_params_on_conversion()
    torch.__future__.set_swap_module_params_on_conversion(True)
    try:
        _check_flag_moves(_flag_movers())
        assert torch.__future__.get_swap_module_params_on_conversion()  # the user's flag kept
    finally:
        torch.__future__.set_swap_module_params_on_conversion(previous)


@pytest.mark.filterwarnings("ignore:Lazy modules are a new feature")
def test_moves_by_torchs_set_data_path_while_another_thread_moves_a_module() -> None:
    # The same, with the flag set by torchport's own swap in another thread (the oracle:
    # the invariants above after each move; without the lock about half the rounds broke).
    done = threading.Event()

    def other() -> None:
        model = nn.Sequential(*(nn.Linear(32, 32) for _ in range(8)))
        dtypes = (torch.float64, torch.float32)
        step = 0
        while not done.is_set():
            tp.to_device(model, "cpu", dtype=dtypes[step % 2])
            step += 1

    thread = threading.Thread(target=other)
    thread.start()
    try:
        for _ in range(150):
            _check_flag_moves(_flag_movers())
    finally:
        done.set()
        thread.join()
