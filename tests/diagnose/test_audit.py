"""audit(): copies and host syncs counted by source line; CPU, with ``meta`` as the other device."""

from __future__ import annotations

import dataclasses
import io
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console
from torch import nn

import torchport as tp
from torchport.diagnose import AuditEntry
from torchport.diagnose._drawing import render_text

META = torch.device("meta")


def _previous_line() -> int:
    """The number of the line before the caller's: where the op under test ran."""
    return sys._getframe(1).f_lineno - 1


def _at(report: tp.AuditReport, line: int) -> list[AuditEntry]:
    return [e for e in report.entries if e.file == __file__ and e.line == line]


def _no_modes_left() -> bool:
    from torch.utils._python_dispatch import _get_current_dispatch_mode

    return torch._C._len_torch_function_stack() == 0 and _get_current_dispatch_mode() is None


def test_copies_and_scalar_reads_in_a_loop_are_counted_per_line() -> None:
    x = torch.randn(10, 3)
    with tp.audit() as report:
        for _ in range(7):
            y = x.to("meta")
            copy_line = _previous_line()
            v = x.sum().item()
            read_line = _previous_line()
    assert y.device == META and isinstance(v, float)
    (copy,) = _at(report, copy_line)
    assert (copy.kind, copy.device, copy.count, copy.bytes) == ("transfer", "cpu→meta", 7, 7 * 120)
    assert copy.op == "aten::_to_copy" and copy.code.startswith('y = x.to("meta")')
    assert copy.function == "test_copies_and_scalar_reads_in_a_loop_are_counted_per_line"
    (read,) = _at(report, read_line)
    assert (read.kind, read.op, read.count, read.would_sync) == ("sync", "Tensor.item", 7, True)
    assert read.label == "scalar read (.item())"
    assert len(report.entries) == 2  # .item() once, not again as _local_scalar_dense


# Each case runs on its own line; the entry must land on that line with that label.
_SYNCS: list[tuple[str, str, Callable[[torch.Tensor], Any]]] = [
    ("item", ".item()", lambda x: x[0].item()),
    ("float", "float(tensor)", lambda x: float(x[0])),
    ("int", "int(tensor)", lambda x: int(x[0])),
    ("bool", "bool(tensor)", lambda x: bool(x[0] > 0)),
    ("if", "bool(tensor)", lambda x: 1 if x.sum() else 0),
    # values computed from x (the device's tensor): torch.tensor(1) would be made on the
    # host in the accelerator run too, and reading it waits for nothing (._host_held)
    ("index", "tensor used as an index", lambda x: [1, 2, 3][(x[0] > 0).long()]),
    ("in", "value in tensor", lambda x: 1.0 in x),
    ("tolist", ".tolist()", lambda x: x.tolist()),
    ("numpy", ".numpy()", lambda x: x.numpy()),
    ("asarray", "np.asarray", lambda x: np.asarray(x)),
    ("repr", "printing", lambda x: repr(x)),
    ("str", "printing", lambda x: str(x)),
    ("print", "printing", lambda x: print(x, file=io.StringIO())),
    ("format", "formatting", lambda x: f"{x[0]:.2f}"),
    ("nonzero", "nonzero", lambda x: x.nonzero()),
    ("where", "where(cond)", lambda x: torch.where(x > 0)),
    ("argwhere", "argwhere", lambda x: torch.argwhere(x)),
    ("mask", "boolean-mask indexing", lambda x: x[x > 0]),
    ("masked_select", "masked_select", lambda x: torch.masked_select(x, x > 0)),
    ("unique", "unique", lambda x: torch.unique(x)),
    ("unique_consecutive", "unique_consecutive", lambda x: torch.unique_consecutive(x)),
    ("repeat_interleave", "repeat_interleave", lambda x: x.repeat_interleave((x > -9).long())),
    ("bincount", "bincount", lambda x: torch.bincount((x > 0).long())),
    ("equal", "torch.equal", lambda x: torch.equal(x, x)),
    # a tensor value: index_put_ expands the mask (a number would be masked_fill_, no wait)
    ("mask_assign", "boolean-mask assignment", lambda x: x.clone().__setitem__(x > 0, x[:1])),
]


@pytest.mark.parametrize(("name", "label", "run"), _SYNCS, ids=[c[0] for c in _SYNCS])
def test_each_sync_kind_is_recorded_once_at_its_line(
    name: str, label: str, run: Callable[[torch.Tensor], Any]
) -> None:
    x = torch.tensor([1.0, -2.0, 3.0, 0.5])
    with tp.audit() as report:
        run(x)
    line = run.__code__.co_firstlineno
    syncs = [
        e
        for e in report.syncs
        if e.label != "scalar read (tensor used as an index)" or name == "index"
    ]
    assert len(syncs) == 1, report.entries
    (entry,) = syncs
    assert label in entry.label
    assert (entry.file, entry.line, entry.count) == (__file__, line, 1)
    assert entry.device == "cpu" and entry.would_sync
    assert not report.transfers


def test_reads_to_python_count_their_bytes() -> None:
    x = torch.zeros(5, 2, dtype=torch.float64)
    with tp.audit() as report:
        x.tolist()
        x[0, 0].item()
    by_op = {e.op: e.bytes for e in report.entries}
    assert by_op == {"Tensor.tolist": 80, "Tensor.item": 8}


def test_copy_directions_and_bytes() -> None:
    x = torch.randn(4, 5)  # 80 bytes
    with tp.audit() as report:
        x.to(META)
        to_line = _previous_line()
        torch.empty(4, 5, device=META).copy_(x)
        copy_line = _previous_line()
        torch.tensor([1.0, 2.0], device=META)
        tensor_line = _previous_line()
        x.to(torch.float64)
        x.to("cpu")
        x.cpu()
        x.clone()
    assert [(e.device, e.bytes, e.op) for e in _at(report, to_line)] == [
        ("cpu→meta", 80, "aten::_to_copy")
    ]
    assert [(e.device, e.bytes) for e in _at(report, copy_line)] == [("cpu→meta", 80)]
    assert [(e.device, e.bytes, e.op) for e in _at(report, tensor_line)] == [
        ("cpu→meta", 8, "torch.tensor")
    ]
    real = [e for e in report.entries if not e.would_sync]
    assert len(real) == 3  # the cast and the clone copy nothing between devices
    assert report.total_bytes == 168
    # x.to("cpu") and x.cpu() return x here; on a GPU run x would be on the device
    predicted = sorted((e.op, e.device, e.bytes) for e in report.entries if e.would_sync)
    # both name the host as the target: on a GPU run they copy from the device to it
    assert predicted == [("Tensor.cpu", "device→host", 80), ("Tensor.to", "device→host", 80)]
    assert report.would_copy_bytes == 160


def test_non_blocking_copies_are_listed_apart() -> None:
    x = torch.randn(4)
    with tp.audit() as report:
        x.to(META, non_blocking=True)
        torch.empty(4, device=META).copy_(x, non_blocking=True)
        x.to(META)
    labels = sorted(e.label for e in report.transfers)
    assert labels == [
        "copy (.to()/.cpu()/.cuda())",
        "copy (.to()/.cpu()/.cuda()), non_blocking",
        "copy (copy_), non_blocking",
    ]


@given(ops=st.lists(st.sampled_from(["copy", "item", "nonzero", "add"]), max_size=12))
def test_counts_match_what_ran(ops: list[str]) -> None:
    x = torch.ones(3)
    with tp.audit() as report:
        for op in ops:
            if op == "copy":
                x.to(META)
            elif op == "item":
                x[0].item()
            elif op == "nonzero":
                x.nonzero()
            else:
                x + x
    counts = {e.label.split(" (")[0]: e.count for e in report.entries}
    expected = {
        "copy": ops.count("copy"),
        "scalar read": ops.count("item"),
        "data-dependent shape": ops.count("nonzero"),
    }
    assert counts == {k: v for k, v in expected.items() if v}
    assert report.total_count == len(ops) - ops.count("add")


def test_a_plain_training_step_has_nothing_to_report_and_results_are_unchanged() -> None:
    def step(seed: int) -> torch.Tensor:
        torch.manual_seed(seed)
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
        opt = torch.optim.Adam(model.parameters())
        x, y = torch.randn(4, 8), torch.randn(4, 1)
        for _ in range(2):
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        return model[0].weight.detach().clone()

    expected = step(0)
    with tp.audit() as report:
        got = step(0)
    assert torch.equal(got, expected)
    assert report.entries == []


def test_data_loading_internals_are_not_listed() -> None:
    # A shuffling DataLoader reads its sampler permutation (.tolist()) and a worker
    # seed (.item()): CPU tensors on every machine, so no wait to predict.
    data = torch.utils.data.TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
    loader = torch.utils.data.DataLoader(data, batch_size=8, shuffle=True)
    with tp.audit() as report:
        batches = [x for x, _ in loader]
    assert len(batches) == 4
    assert report.entries == []


def test_reads_inside_torch_outside_optimizers_are_listed_at_the_users_line() -> None:
    params = [nn.Parameter(torch.randn(3))]
    params[0].grad = torch.randn(3)
    with tp.audit() as report:
        nn.utils.clip_grad_norm_(params, 1.0, error_if_nonfinite=True)
        line = _previous_line()
    (entry,) = report.entries
    assert "bool(tensor)" in entry.label and entry.would_sync
    assert (entry.file, entry.line) == (__file__, line)


def test_a_step_inside_a_recorded_step_does_not_stack_modes() -> None:
    x = torch.ones(1)  # made before the block: taken for the device's (torch.ones(1) made
    # inside it would be the host's in an accelerator run too, and read without a wait)
    with tp.audit(every=2) as report:
        with report.step(), report.step():
            x[0].item()
        with report.step():
            x[0].item()
    assert _no_modes_left()
    assert report.steps == 3 and report.total_count == 2


def test_json_round_trip_and_dict() -> None:
    x = torch.randn(3)
    with tp.audit() as report:
        x.to(META)
        x.sum().item()
    data = json.loads(report.to_json())
    assert data["total_bytes"] == 12 and data["total_count"] == 2
    assert {e["kind"] for e in data["entries"]} == {"transfer", "sync"}
    assert tp.AuditReport.from_json(report.to_json()) == report
    assert tp.AuditReport.from_dict(report.to_dict()) == report


def test_entries_are_sorted_by_bytes_then_count() -> None:
    small, big = torch.randn(2), torch.randn(1000)
    with tp.audit() as report:
        for _ in range(3):
            small.to(META)
        big.to(META)
        for _ in range(5):
            small[0].item()
        small[1].item()
    assert [(e.bytes, e.count) for e in report.entries] == [(4000, 1), (24, 3), (20, 5), (4, 1)]


def test_rendering_shows_lines_code_labels_and_totals() -> None:
    x = torch.tensor([1.0, -1.0])
    with tp.audit() as report:
        x[x > 0]
        mask_line = _previous_line()
        x.to(META)
    text = str(report)
    assert f"test_audit.py:{mask_line}" in text
    assert "x[x > 0]" in text  # not swallowed as rich markup
    assert "would sync on an accelerator" in text
    assert "total: 1 copy (8 B), 0 host syncs, 1 point that would sync" in text
    console = Console(file=io.StringIO(), width=200, color_system=None)
    console.print(report)
    assert "boolean-mask indexing" in console.file.getvalue()  # type: ignore[attr-defined]


def test_empty_report_renders() -> None:
    with tp.audit() as report:
        pass
    assert "no copies between devices and no host syncs" in str(report)
    assert report.total_count == 0 and report.total_bytes == 0


def test_sampling_records_one_step_in_every() -> None:
    x = torch.ones(2)
    with tp.audit(every=3) as report:
        x.to(META)  # outside any step: not recorded when sampling
        for _ in range(7):
            with report.step():
                x[0].item()
    assert (report.steps, report.recorded_steps, report.every) == (7, 3, 3)
    assert [(e.op, e.count) for e in report.entries] == [("Tensor.item", 3)]
    assert "recorded 3 of 7 steps (every=3)" in render_text(report, width=300)
    assert _no_modes_left()


def test_steps_only_count_without_sampling() -> None:
    x = torch.ones(2)
    with tp.audit() as report:
        for _ in range(4):
            with report.step():
                x[0].item()
        x[1].item()
    assert (report.steps, report.recorded_steps) == (4, 4)
    assert sum(e.count for e in report.entries) == 5


@pytest.mark.parametrize("every", [0, -1, 1.5, "10", True])
def test_bad_every_is_a_config_error(every: Any) -> None:
    with pytest.raises(tp.ConfigError, match="positive integer"), tp.audit(every=every):
        pass


def test_nothing_is_recorded_after_exit() -> None:
    x = torch.ones(2)
    with tp.audit() as report:
        x[0].item()
    before = report.to_dict()
    x.to(META)
    x[0].item()
    assert report.to_dict() == before
    assert _no_modes_left()
    with pytest.raises(tp.ConfigError, match=r"after its tp\.audit"):
        report.step()


def test_modes_are_removed_when_the_block_raises() -> None:
    with pytest.raises(KeyError), tp.audit():
        raise KeyError("x")
    assert _no_modes_left()


def test_audit_inside_strict_and_strict_inside_audit() -> None:
    x = torch.ones(3)
    with pytest.raises(tp.DeviceMismatchError), tp.strict(), tp.audit() as inner:
        x.to(META)
        x + torch.ones(3, device=META)
    assert [(e.device, e.count) for e in inner.entries] == [("cpu→meta", 1)]
    with (
        tp.audit() as outer,
        pytest.raises(tp.DeviceMismatchError, match="x on cpu"),
        tp.strict(),
    ):
        x.to(META)
        x + torch.ones(3, device=META)
    assert [(e.device, e.count) for e in outer.entries] == [("cpu→meta", 1)]
    assert _no_modes_left()


def test_nested_audits_both_record() -> None:
    x = torch.ones(3)
    with tp.audit() as outer:
        x[0].item()
        with tp.audit() as inner:
            x[1].item()
    assert outer.total_count == 2 and inner.total_count == 1


def test_a_failure_to_describe_an_op_never_reaches_the_program(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from torchport.diagnose import _moves, _ops

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("bug in the audit")

    class BrokenTable(dict[int, bool]):
        get = broken  # type: ignore[assignment]

    monkeypatch.setattr(_ops, "READS", BrokenTable())  # read for the Python-level .item()
    monkeypatch.setattr(_moves, "transfer_of", broken)  # used for the aten-level copy
    x = torch.ones(3)
    with tp.audit() as report:
        assert x.sum().item() == 3.0
        y = x.to(META)
    assert y.device == META
    assert report.dropped == 2 and report.entries == []
    assert "2 op(s) could not be described" in render_text(report, width=300)
    assert tp.AuditReport.from_json(report.to_json()).dropped == 2


def test_report_holds_no_tensors() -> None:
    with tp.audit() as report:
        torch.ones(3).to(META)
        torch.ones(3)[0].item()
    values = [v for e in report.entries for v in vars(e).values()]
    assert values and all(isinstance(v, (str, int, bool)) for v in values)


def test_out_of_memory_gets_a_note() -> None:
    oom = torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 MiB")
    with pytest.raises(torch.OutOfMemoryError) as info, tp.audit():
        raise oom
    assert info.value is oom
    assert any(n.startswith("torchport:") for n in getattr(oom, "__notes__", []))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_real_cuda_copies_and_syncs() -> None:
    x = torch.randn(256)
    with tp.audit() as report:
        y = x.cuda()
        up = _previous_line()
        y.cpu()
        down = _previous_line()
        y.sum().item()
        read = _previous_line()
        y.nonzero()
        shape = _previous_line()
    assert [(e.device, e.bytes) for e in _at(report, up)] == [("cpu→cuda:0", 1024)]
    assert [(e.device, e.bytes) for e in _at(report, down)] == [("cuda:0→cpu", 1024)]
    (item,) = _at(report, read)
    assert item.device == "cuda:0" and not item.would_sync
    (nz,) = _at(report, shape)
    assert nz.kind == "shape sync" and not nz.would_sync


def test_watched_methods_are_never_replaced_and_module_wrappers_restored_exactly() -> None:
    tensor_attrs = dict(vars(torch.Tensor))
    torch_attrs = {name: getattr(torch, name) for name in ("tensor", "as_tensor", "asarray")}
    jit_attrs = {name: getattr(torch.jit, name) for name in ("script", "trace", "trace_module")}
    with tp.audit(), tp.audit():  # nested: installed once, removed once
        assert dict(vars(torch.Tensor)) == tensor_attrs  # no class attribute, ever
        assert {name: getattr(torch, name) for name in torch_attrs} == torch_attrs
        assert torch.jit.trace is not jit_attrs["trace"]  # a module's, stepping aside
    assert dict(vars(torch.Tensor)) == tensor_attrs
    assert {name: getattr(torch, name) for name in torch_attrs} == torch_attrs
    assert {name: getattr(torch.jit, name) for name in jit_attrs} == jit_attrs
    assert "tolist" not in vars(torch.Tensor)  # inherited again, not shadowed


def test_other_threads_pass_through_the_watch() -> None:
    import threading

    seen: list[float] = []
    with tp.audit() as report:
        worker = threading.Thread(target=lambda: seen.append(torch.ones(()).item()))
        worker.start()
        worker.join()
    assert seen == [1.0]
    assert report.entries == []


# -- never break the program; predict the accelerator's copies ---------------------------


def _adds_one(x: torch.Tensor) -> torch.Tensor:
    return x + torch.tensor(1.0)


@pytest.mark.filterwarnings("ignore:`torch.jit.:DeprecationWarning")
def test_torchscript_of_a_function_calling_torch_tensor_works_inside_audit() -> None:
    with tp.audit() as report:
        scripted = torch.jit.script(_adds_one)
        out = scripted(torch.ones(2))
    assert torch.equal(out, torch.full((2,), 2.0))
    assert report.dropped == 0
    assert _no_modes_left()


def _traced_body(x: torch.Tensor) -> torch.Tensor:
    return (x * 2).sum() + x.mean()


@pytest.mark.filterwarnings("ignore:`torch.jit.:DeprecationWarning")
def test_tracing_works_inside_audit_and_the_traced_code_runs_audited() -> None:
    # torch.jit.trace of this function fails under any TorchDispatchMode; the audit
    # steps aside while it traces
    layer = nn.Linear(2, 2)
    batch = torch.ones(1, 2)  # made before the block: taken for the device's
    with tp.audit() as report:
        traced_fn = torch.jit.trace(_traced_body, torch.ones(1, 2))
        traced_module = torch.jit.trace(layer, torch.ones(1, 2))
        traced_fn(batch).item()
        read = _previous_line()
    assert torch.equal(traced_module(torch.ones(1, 2)), layer(torch.ones(1, 2)))
    assert [e.op for e in _at(report, read)] == ["Tensor.item"]
    # the tracer's own checks (it runs the function again and compares) are not listed
    assert all(e.line == read for e in report.entries if e.file == __file__)
    assert _no_modes_left()


@pytest.mark.filterwarnings("ignore:`torch.jit.:DeprecationWarning")
def test_stepping_aside_keeps_a_users_mode_above_the_audit() -> None:
    from torch.utils._python_dispatch import TorchDispatchMode

    seen: list[str] = []

    class Spy(TorchDispatchMode):  # type: ignore[misc]
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    with tp.audit(), Spy():
        torch.jit.script(_adds_one)
        torch.ones(2).add(1)
    assert "aten.add.Tensor" in seen
    assert _no_modes_left()


def test_copies_a_cpu_run_skips_are_listed_as_predicted_with_bytes() -> None:
    device = torch.device("cpu")  # what pick_device() gives on a laptop
    model = nn.Linear(4, 2)  # 40 bytes of parameters
    x = torch.ones(8, 4)  # 128 bytes
    with tp.audit() as report:
        model.to(device)
        move_model = _previous_line()
        out = model(x.to(device))
        move_input = _previous_line()
        out.cpu()
        move_back = _previous_line()
        x.new_tensor([1.0, 2.0])
        new = _previous_line()
        torch.asarray([1.0, 2.0], device=device)
        asarray = _previous_line()
        torch.tensor([1.0, 2.0], device="cpu")  # written as "cpu": host on every machine
        literal = _previous_line()
    predicted = {e.line: (e.count, e.bytes) for e in report.transfers if e.would_sync}
    assert predicted == {
        move_model: (2, 40),
        move_input: (1, 128),
        move_back: (1, 64),
        new: (1, 8),
        asarray: (1, 8),
    }
    assert literal not in predicted
    assert report.total_bytes == 0 and report.would_copy_bytes == 248
    text = " ".join(render_text(report, width=120).split())
    assert "would copy on an accelerator" in text
    assert "6 copies (248 B) that would happen on an accelerator" in text


def test_torchs_own_host_moves_predict_nothing() -> None:
    params = [nn.Parameter(torch.randn(3))]
    params[0].grad = torch.randn(3)
    with tp.audit() as report:
        nn.utils.clip_grad_norm_(params, 1.0)  # moves its norms with .to() internally
    assert report.transfers == []


def test_allclose_is_a_sync() -> None:
    a = torch.ones(3)
    with tp.audit() as report:
        torch.allclose(a, a)
        line = _previous_line()
    (entry,) = _at(report, line)
    assert (entry.kind, entry.op, entry.would_sync) == ("sync", "aten::allclose", True)


def test_new_tensor_and_asarray_onto_another_device_are_real_copies() -> None:
    x = torch.ones(3)
    with tp.audit() as report:
        x.new_tensor([1.0, 2.0], device=META)
        new = _previous_line()
        torch.asarray([1.0, 2.0, 3.0], device=META)
        asarray = _previous_line()
    assert [(e.device, e.bytes, e.would_sync) for e in _at(report, new)] == [("cpu→meta", 8, False)]
    assert [(e.device, e.bytes, e.would_sync) for e in _at(report, asarray)] == [
        ("cpu→meta", 12, False)
    ]


def test_a_loss_read_by_reduce_lr_on_plateau_is_listed_at_the_users_line() -> None:
    param = nn.Parameter(torch.ones(1))
    optimizer = torch.optim.SGD([param], lr=0.1)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer)
    loss = torch.tensor(0.5)
    with tp.audit() as report:
        optimizer.step()  # its own step bookkeeping stays unlisted
        scheduler.step(loss)  # float(loss): a wait for the device on a GPU run
        line = _previous_line()
    (entry,) = report.entries
    assert (entry.line, entry.label, entry.would_sync) == (
        line,
        "scalar read (float(tensor))",
        True,
    )


def test_warnings_raised_under_audit_point_at_the_users_line() -> None:
    source = torch.ones(2)
    with tp.audit(), pytest.warns(UserWarning, match="copy construct") as caught:
        torch.tensor(source)
        line = _previous_line()
    assert [(w.filename, w.lineno) for w in caught] == [(__file__, line)]


def test_torch_jits_own_warnings_point_where_they_would_without_audit() -> None:
    import warnings

    with warnings.catch_warnings(record=True) as probe:
        warnings.simplefilter("always")
        torch.jit.trace(_traced_body, torch.ones(1, 2))
    if not any("torch.jit.trace" in str(w.message) for w in probe):
        pytest.skip(f"torch {torch.__version__} does not deprecate torch.jit.trace")
    deprecation = (DeprecationWarning, FutureWarning)  # FutureWarning from torch 2.15 on
    with pytest.warns(deprecation, match="torch.jit.trace") as bare:
        torch.jit.trace(_traced_body, torch.ones(1, 2))
    with tp.audit(), pytest.warns(deprecation, match="torch.jit.trace") as audited:
        torch.jit.trace(_traced_body, torch.ones(1, 2))
    assert [(w.filename, w.lineno) for w in audited] == [(w.filename, w.lineno) for w in bare]


def test_a_warning_filtered_to_error_still_raises_under_audit() -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning, match="copy construct"), tp.audit():
            torch.tensor(torch.ones(2))


def test_sampling_without_marked_steps_warns_and_says_so() -> None:
    with (
        pytest.warns(UserWarning, match=r"recorded nothing.*report\.step\(\)") as caught,
        tp.audit(every=5) as report,
    ):
        torch.ones(2).sum().item()
    assert caught[0].filename == __file__
    assert report.entries == [] and report.steps == 0
    assert "none was" in render_text(report, width=300)


def test_sampling_without_marked_steps_does_not_mask_an_exception() -> None:
    with pytest.raises(KeyError), tp.audit(every=5):
        raise KeyError("the program's own error")


def test_a_report_pickles_and_names_modules_that_export_its_types() -> None:
    import importlib
    import pickle

    with tp.audit() as report:
        torch.ones(2).sum().item()
    again = pickle.loads(pickle.dumps(report))
    assert again == report and again.entries == report.entries
    for cls in (tp.AuditReport, AuditEntry):
        assert getattr(importlib.import_module(cls.__module__), cls.__name__) is cls


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_audit_counts_what_cuda_sync_debug_mode_reports_at_the_same_lines() -> None:
    import warnings

    x = torch.randn(256, device="cuda")
    torch.cuda.synchronize()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            with tp.audit() as report:
                x.sum().item()
                x.nonzero()
                x[x > 0]
                x.cpu()
        finally:
            torch.cuda.set_sync_debug_mode(0)
    # "called a synchronizing": torch 2.11 also warns at set_sync_debug_mode that the mode
    # "does not yet detect all synchronizing operations", from its own frame
    synced = [w for w in caught if "called a synchronizing" in str(w.message)]
    # every one at this test's lines, never a torchport (or torch dispatch) frame
    assert synced and {w.filename for w in synced} == {__file__}, [
        (w.filename, w.lineno) for w in synced
    ]
    waits = [e for e in report.entries if not e.would_sync]
    assert sorted({e.line for e in waits}) == sorted({w.lineno for w in synced})


def _script_classes() -> Any:
    @torch.jit.script
    class Inner:
        def __init__(self, v: int) -> None:
            self.v = v

    @torch.jit.script
    class Outer:  # names Inner: resolved in this function's frame, _frames_up above
        def __init__(self, v: int) -> None:
            self.inner = Inner(v)

    return Outer


@pytest.mark.filterwarnings("ignore:`torch.jit.:DeprecationWarning")
def test_scripted_classes_resolve_names_in_the_callers_frame_inside_audit() -> None:
    with tp.audit():
        outer = _script_classes()
        assert outer(4).inner.v == 4


def _adds_constants(x: torch.Tensor) -> torch.Tensor:
    return x + torch.tensor(1.0) + torch.as_tensor(2.0)


@pytest.mark.filterwarnings("ignore:`torch.jit.:DeprecationWarning")
def test_script_taken_before_the_audit_compiles_under_the_audits_modes() -> None:
    script = torch.jit._script.script  # the unwrapped function, as `from torch.jit import script`
    with tp.audit():
        assert torch.tensor is torch._C._VariableFunctions.tensor  # never wrapped
        scripted = script(_adds_constants)  # no step-aside: compiled under the function mode
        assert torch.equal(scripted(torch.ones(2)), torch.full((2,), 4.0))


# -- one copy is one event ---------------------------------------------------------------

_HOST_COPIES: list[tuple[str, Callable[[torch.Tensor], Any]]] = [
    (".cpu().numpy()", lambda x: x.cpu().numpy()),
    (".cpu().tolist()", lambda x: x.cpu().tolist()),
    ('.to("cpu").numpy()', lambda x: x.to("cpu").numpy()),
    (".detach().cpu().numpy()", lambda x: x.detach().cpu().numpy()),
    (".cpu().detach().numpy()", lambda x: x.cpu().detach().numpy()),
    (".cpu().item()", lambda x: x[0].cpu().item()),
    ("float(x.cpu())", lambda x: float(x[0].cpu())),
    ("np.asarray(x.cpu())", lambda x: np.asarray(x.cpu())),
    ("[v.item() for v in x.cpu()]", lambda x: [v.item() for v in x.cpu()]),
]


@pytest.mark.parametrize(("name", "run"), _HOST_COPIES, ids=[c[0] for c in _HOST_COPIES])
def test_a_copy_to_the_host_read_at_once_is_one_event(
    name: str, run: Callable[[torch.Tensor], Any]
) -> None:
    x = torch.arange(4.0)
    with tp.audit() as report:
        run(x)
    (entry,) = report.entries
    assert (entry.kind, entry.device, entry.count, entry.would_sync) == (
        "transfer",
        "device→host",
        1,
        True,
    )
    assert entry.line == run.__code__.co_firstlineno


def test_reads_on_other_lines_or_of_a_copy_to_the_device_still_count() -> None:
    x = torch.arange(4.0)
    device = torch.device("cpu")
    with tp.audit() as report:
        kept = x.cpu()
        kept_line = _previous_line()
        x.sum().item()  # a read of a device value on its own line: a sync
        read_line = _previous_line()
        x.to(device).sum().item()  # to the device, then read back: two events
        both_line = _previous_line()
    del kept
    assert [(e.kind, e.device) for e in _at(report, kept_line)] == [("transfer", "device→host")]
    assert [e.kind for e in _at(report, read_line)] == ["sync"]
    assert sorted((e.kind, e.device) for e in _at(report, both_line)) == [
        ("sync", "cpu"),
        ("transfer", "host→device"),
    ]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_a_real_copy_from_the_gpu_read_at_once_is_one_event() -> None:
    x = torch.arange(4.0, device="cuda")
    with tp.audit() as report:
        x.cpu().numpy()
        x.to("cpu").tolist()
        float(x[0].cpu())
    # one entry per line, each one copy: the read of the copied host tensor is no second event
    assert sorted((e.device, e.count) for e in report.entries) == [("cuda:0→cpu", 1)] * 3
    assert report.syncs == []


# -- module moves: each tensor once, tied weights once ----------------------------------


def _distinct_tensors(module: nn.Module) -> int:
    """Parameters and buffers reachable from ``module``, each object once (an oracle apart
    from torch's own iterators: it walks the modules' ``__dict__`` tables)."""
    seen: set[int] = set()
    stack = [module]
    visited: set[int] = set()
    while stack:
        m = stack.pop()
        if id(m) in visited:
            continue
        visited.add(id(m))
        stored = vars(m)
        for table in ("_parameters", "_buffers"):
            seen |= {id(t) for t in stored[table].values() if t is not None}
        stack += [child for child in stored["_modules"].values() if child is not None]
    return len(seen)


@st.composite
def _tied_models(draw: st.DrawFn) -> nn.Module:
    layers = [
        nn.Linear(draw(st.integers(1, 4)), draw(st.integers(1, 4)), bias=draw(st.booleans()))
        for _ in range(draw(st.integers(1, 5)))
    ]
    model = nn.Sequential(*layers)
    for _ in range(draw(st.integers(0, 3))):  # tie some weights of equal shape together
        a, b = draw(st.sampled_from(layers)), draw(st.sampled_from(layers))
        if a.weight.shape == b.weight.shape:
            b.weight = a.weight
    if draw(st.booleans()):
        model.register_buffer("scale", torch.ones(2))
    if draw(st.booleans()):  # a module reachable twice
        model.append(layers[0])
    return model


@given(_tied_models(), st.integers(1, 3))
def test_a_model_move_copies_each_tensor_once(model: nn.Module, moves: int) -> None:
    device = torch.device("cpu")
    with tp.audit() as report:
        for _ in range(moves):
            model.to(device)  # moved again: already there on an accelerator
        model.cpu()  # back to the host: each once more
        model.to(device)
    to_device = sum(e.count for e in report.entries if e.device == "host→device")
    to_host = sum(e.count for e in report.entries if e.device == "device→host")
    assert to_device == 2 * _distinct_tensors(model)
    assert to_host == _distinct_tensors(model)


def test_tied_language_model_embeddings_are_one_copy() -> None:
    class LM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(10, 4)
            self.head = nn.Linear(4, 10, bias=False)
            self.head.weight = self.embed.weight

    with tp.audit() as report:
        LM().to(torch.device("cpu"))
    (entry,) = report.entries
    assert (entry.count, entry.bytes) == (1, 10 * 4 * 4)


def _installed_package(root: Path, name: str, source: str) -> Path:
    package = root / "site-packages" / name
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(source)
    return package / "__init__.py"


def test_a_model_whose_class_overrides_to_is_charged_to_the_users_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Like transformers' PreTrainedModel: an installed class whose .to() checks and calls up
    library = _installed_package(
        tmp_path,
        "fakeformers",
        "import torch\n"
        "class PreTrainedModel(torch.nn.Module):\n"
        "    def to(self, *args, **kwargs):\n"
        "        if getattr(self, 'quantized', False):\n"
        "            raise ValueError('cannot move a quantized model')\n"
        "        return super().to(*args, **kwargs)\n"
        "class Tiny(PreTrainedModel):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.proj = torch.nn.Linear(3, 2)\n",
    )
    monkeypatch.syspath_prepend(str(tmp_path / "site-packages"))
    import fakeformers  # type: ignore[import-not-found]

    model = fakeformers.Tiny()
    with tp.audit() as report:
        model.to(torch.device("cpu"))
        line = _previous_line()
    (entry,) = report.entries
    assert (entry.file, entry.line, entry.count, entry.bytes) == (__file__, line, 2, 32)
    assert entry.via == f"{library}:6"  # the override's super().to() line


# -- torchport's own movers: what the DeviceLoader hands over ---------------------------


@dataclasses.dataclass
class _Pair:
    x: torch.Tensor
    y: torch.Tensor


_BATCHES: list[tuple[str, Callable[[int], Any], int]] = [
    ("tuple", lambda i: (torch.ones(2, 3), torch.zeros(2)), 2),
    ("list", lambda i: [torch.ones(4)], 1),
    ("dict", lambda i: {"a": torch.ones(1), "b": torch.ones(2), "c": torch.ones(3)}, 3),
    ("tensor", lambda i: torch.ones(5), 1),
    ("nested", lambda i: {"x": [torch.ones(2), (torch.ones(1), "text")], "n": i}, 2),
    ("dataclass", lambda i: _Pair(torch.ones(2), torch.ones(2)), 2),
]


@pytest.mark.parametrize(("name", "make", "tensors"), _BATCHES, ids=[b[0] for b in _BATCHES])
@given(batches=st.integers(0, 6))
def test_device_loader_batches_are_the_copies_an_accelerator_run_makes(
    name: str, make: Callable[[int], Any], tensors: int, batches: int
) -> None:
    data = [make(i) for i in range(batches)]
    nbytes = sum(t.numel() * t.element_size() for b in data for t in _leaves(b))
    loader = tp.DeviceLoader(data, "cpu")
    with tp.audit() as report:
        for _ in loader:
            pass
        line = _previous_line() - 1
    counted = [(e.line, e.count, e.bytes, e.would_sync, e.device) for e in report.entries]
    assert counted == ([(line, batches * tensors, nbytes, True, "host→device")] if batches else [])


def _leaves(batch: Any) -> list[torch.Tensor]:
    if isinstance(batch, torch.Tensor):
        return [batch]
    if isinstance(batch, dict):
        return [t for v in batch.values() for t in _leaves(v)]
    if isinstance(batch, (list, tuple)):
        return [t for v in batch for t in _leaves(v)]
    if dataclasses.is_dataclass(batch):
        return [t for f in dataclasses.fields(batch) for t in _leaves(getattr(batch, f.name))]
    return []


def test_device_loader_real_copies_are_counted_once_and_not_predicted() -> None:
    loader = tp.DeviceLoader([(torch.ones(2), torch.ones(3)) for _ in range(4)], META)
    with tp.audit() as report:
        for _ in loader:
            pass
    assert [(e.device, e.count, e.would_sync) for e in report.entries] == [("cpu→meta", 8, False)]


# -- under `torchport run`: legacy CUDA constructors ------------------------------------


def test_legacy_cuda_constructors_allocate_on_the_target_and_only_data_is_copied() -> None:
    with tp.redirect("cpu"), tp.audit() as report:
        a = torch.cuda.FloatTensor(10)
        b = torch.cuda.LongTensor(2, 3)
        c = torch.cuda.HalfTensor(torch.Size([4]))
        data = torch.cuda.FloatTensor([1.0, 2.0])
        data_line = _previous_line()
    assert (a.shape, b.shape, c.shape) == ((10,), (2, 3), (4,))
    assert (a.dtype, b.dtype, c.dtype, data.dtype) == (
        torch.float32,
        torch.int64,
        torch.float16,
        torch.float32,
    )
    # the list is host data, copied to the GPU on a GPU run; the sizes copy nothing
    assert [(e.line, e.kind, e.bytes) for e in report.entries] == [(data_line, "transfer", 8)]


# -- warnings point at the user's line ---------------------------------------------------

_WARNING_CALLS: list[tuple[str, Callable[[], Any]]] = [
    ("float", lambda: float((torch.ones(2, requires_grad=True) * 2).sum())),
    ("to complex->real", lambda: torch.ones(2, dtype=torch.complex64).to(torch.float32)),
    ("uint8 mask", lambda: torch.ones(3)[torch.tensor([1, 0, 1], dtype=torch.uint8)]),
    ("tensor(tensor)", lambda: torch.tensor(torch.ones(2))),
    ("new_tensor(tensor)", lambda: torch.ones(1).new_tensor(torch.ones(2))),
]


@pytest.mark.parametrize(("name", "call"), _WARNING_CALLS, ids=[c[0] for c in _WARNING_CALLS])
def test_torchs_warnings_under_audit_name_the_users_line(
    name: str, call: Callable[[], Any]
) -> None:
    import warnings

    def where() -> list[tuple[str, int, str]]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call()
        return [(w.filename, w.lineno, str(w.message)[:40]) for w in caught]

    always = torch.is_warn_always_enabled()
    torch.set_warn_always(True)  # torch warns some of these once per process otherwise
    try:
        bare = where()
        with tp.audit():
            audited = where()
    finally:
        torch.set_warn_always(always)
    if not bare:
        pytest.skip(f"torch {torch.__version__} does not warn in this case")
    assert audited == bare
    assert {(f, n) for f, n, _ in audited} == {(__file__, call.__code__.co_firstlineno)}


def test_sampled_audit_keeps_the_batches_its_recorded_steps_consume() -> None:
    batches = [(torch.ones(2), torch.ones(3)) for _ in range(7)]
    loader = tp.DeviceLoader(batches, "cpu")
    with tp.audit(every=3) as report:
        for x, _ in loader:
            with report.step():
                x.to(torch.device("cpu"))
    # steps 0, 3 and 6 are recorded: the batch each consumes is counted with it
    assert report.recorded_steps == 3
    by_op = {e.op: e.count for e in report.entries}
    assert by_op == {"torchport.DeviceLoader": 3 * 2, "Tensor.to": 3}
