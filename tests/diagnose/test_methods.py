"""The audit's Python-level wrappers: indexing by a boolean mask, warnings, odd callers."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable
from typing import Any, ClassVar

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils._python_dispatch import TorchDispatchMode

import torchport as tp

_MASK = "boolean-mask indexing"
_ASSIGN = "boolean-mask assignment"


def _line_of(run: Callable[..., Any]) -> int:
    return run.__code__.co_firstlineno


# (index, label recorded or None): each runs on its own line of a lambda
_INDEXES: list[tuple[str, Callable[[torch.Tensor], Any], str | None]] = [
    ("mask", lambda x: x[x > 0], _MASK),
    ("mask then ellipsis", lambda x: x[x > 0, ...], _MASK),
    ("int then mask", lambda x: x.view(2, 2)[0, x.view(2, 2)[0] > 0], _MASK),
    ("mask, None", lambda x: x[None, x > 0], _MASK),
    ("mask and an index tensor", lambda x: x.view(2, 2)[x[:2] > 0, torch.tensor([1])], _MASK),
    ("assign by mask", lambda x: x.clone().__setitem__(x > 0, x[:1]), _ASSIGN),
    ("assign by mask, int", lambda x: x.view(2, 2).clone().__setitem__((x[:2] > 0, 0), x[0]), _ASSIGN),  # noqa: E501
    # a number by mask: ATen runs masked_fill_, no wait
    ("assign a number by mask", lambda x: x.clone().__setitem__(x > 0, 0.0), None),
    ("assign a number by mask, int", lambda x: x.view(2, 2).clone().__setitem__((x[:2] > 0, 0), 1), None),  # noqa: E501
    ("int", lambda x: x[1], None),
    ("slice", lambda x: x[1:3], None),
    ("index tensor", lambda x: x[torch.tensor([0, 2])], None),
    ("list of bools", lambda x: x[[True, False, True, False]], _MASK),  # made on x's device: a mask
    ("assign by slice", lambda x: x.clone().__setitem__(slice(0, 2), 0.0), None),
]  # fmt: skip


@pytest.mark.parametrize(("name", "run", "label"), _INDEXES, ids=[c[0] for c in _INDEXES])
def test_indexing_is_recorded_once_when_a_boolean_mask_decides_the_shape(
    name: str, run: Callable[[torch.Tensor], Any], label: str | None
) -> None:
    x = torch.tensor([1.0, -2.0, 3.0, 0.5])
    expected = run(x)
    with tp.audit() as report:
        got = run(x)
    if isinstance(expected, torch.Tensor):
        torch.testing.assert_close(got, expected)
    syncs = [e for e in report.syncs if e.line == _line_of(run)]
    if label is None:
        assert syncs == [], report.entries
        return
    assert [(e.count, e.file, e.device) for e in syncs] == [(1, __file__, "cpu")]
    assert label in syncs[0].label


def test_a_uint8_mask_warns_at_the_users_line_and_is_recorded() -> None:
    x = torch.tensor([1.0, -2.0, 3.0])
    with tp.audit() as report, pytest.warns(UserWarning, match="uint8") as caught:
        x[(x > 0).to(torch.uint8)]
        line = sys._getframe().f_lineno - 1
    assert [(w.filename, w.lineno) for w in caught] == [(__file__, line)]
    assert [(e.line, e.count) for e in report.syncs] == [(line, 1)]


def test_a_failing_index_leaves_the_audit_recording() -> None:
    x = torch.tensor([1.0, -2.0, 3.0])
    with tp.audit() as report:
        with pytest.raises(IndexError):
            x[torch.tensor([True, False])]  # the wrong length
        x.nonzero()
        line = sys._getframe().f_lineno - 1
    assert [e.line for e in report.syncs] == [line]


class _Logged(torch.Tensor):
    """A tensor subclass that sees each torch function called on it."""

    seen: ClassVar[list[str]] = []

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        cls.seen.append(getattr(func, "__name__", repr(func)))
        return super().__torch_function__(func, types, args, kwargs or {})


def test_a_tensor_subclass_still_sees_its_indexing() -> None:
    x = torch.tensor([1.0, -2.0, 3.0]).as_subclass(_Logged)
    mask = torch.tensor([True, False, True])
    _Logged.seen.clear()
    with tp.audit() as report:
        got = x[mask]
    assert type(got) is _Logged and got.tolist() == [1.0, 3.0]
    assert "__getitem__" in _Logged.seen
    assert [_MASK in e.label for e in report.syncs] == [True]


class _Counting(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.ops: list[str] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self.ops.append(str(func))
        return func(*args, **(kwargs or {}))


def test_a_users_mode_above_the_audit_still_sees_a_masked_index() -> None:
    x = torch.tensor([1.0, -2.0, 3.0])
    mask = x > 0
    with tp.audit() as report, _Counting() as mine:
        x[mask]
    assert mine.ops == ["aten.index.Tensor"]
    assert len(report.syncs) == 1


def test_indexing_stays_torch_s_own_during_and_after_the_audit() -> None:
    before = torch.Tensor.__getitem__, torch.Tensor.__setitem__
    with tp.audit():
        assert (torch.Tensor.__getitem__, torch.Tensor.__setitem__) == before
        assert "__getitem__" not in vars(torch.Tensor)
    assert (torch.Tensor.__getitem__, torch.Tensor.__setitem__) == before
    assert "__getitem__" not in vars(torch.Tensor)


def test_warnings_under_audit_in_python_dash_c_code_do_not_crash() -> None:
    # `python -c` code has BuiltinImporter as its loader, which cannot give a source line
    code = textwrap.dedent(
        """
        import torch, torchport as tp
        x = torch.ones(3)
        with tp.audit():
            torch.tensor(x)
        print("ran")
        """
    )
    done = subprocess.run(
        [sys.executable, "-W", "always", "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ran"
    assert "<string>:5: UserWarning: To copy construct" in done.stderr


# What one call in a thread without an audit is: (statement, whether it is a copy or a
# read an accelerator run makes, so one the audit would have counted in its own thread)
_THREAD_CALLS = {
    "x.to(device)": True,
    "x.item()": True,
    "x.cpu()": True,
    "x.tolist()": True,
    "x.to(torch.float64)": False,  # a cast, no move
    "x[0]": False,  # plain indexing
    "x + 1": False,
}


@given(
    threads=st.lists(st.lists(st.sampled_from(sorted(_THREAD_CALLS)), max_size=6), max_size=3),
    audited_thread=st.booleans(),
)
@settings(max_examples=25, deadline=None)
def test_threads_the_audit_does_not_watch_are_reported_not_lost(
    threads: list[list[str]], audited_thread: bool
) -> None:
    device = torch.device("cpu")
    x = torch.ones(1)
    scope = {"x": x, "device": device, "torch": torch}
    own: list[tp.AuditReport] = []

    def run(calls: list[str], audit_here: bool) -> None:
        with contextlib.ExitStack() as stack:
            if audit_here:  # a thread with its own audit: its calls are its audit's
                own.append(stack.enter_context(tp.audit()))
            for i, call in enumerate(calls):  # each its own "file": no two share a line
                eval(compile(call, f"<call {i}>", "eval"), scope)

    already = len(threading.enumerate()) - 1  # other threads of the test process
    with tp.audit() as report:
        x.item()
        workers = [
            threading.Thread(target=run, args=(calls, audited_thread and i == 0))
            for i, calls in enumerate(threads)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    expected = already + len(threads)  # started and ended inside the block: still heard
    assert report.other_threads == expected
    assert report.total_count == 1  # this thread's own read, and nothing of the others'
    if own:  # the audited thread counted its own calls
        assert own[0].total_count == sum(_THREAD_CALLS[call] for call in threads[0])
    text = " ".join(str(report).split())
    assert ("other thread" in text) == bool(expected)
    assert tp.AuditReport.from_json(report.to_json()).other_threads == expected
    assert threading.getprofile() is None  # the hook is gone with the block


# -- what is swapped on torch's modules is read when the audit starts ----------------------


def _data_dependent(x: torch.Tensor) -> torch.Tensor:
    return x * x.sum().item()  # .item() under the audit's modes breaks the tracer


@pytest.mark.filterwarnings("ignore::torch.jit.TracerWarning")
@pytest.mark.filterwarnings("ignore:`torch.jit.:DeprecationWarning")
def test_a_tracer_replaced_after_import_still_steps_aside(monkeypatch: pytest.MonkeyPatch) -> None:
    # torch.compile's first call imports torch._dynamo, which replaces torch.jit.trace
    # after torchport was imported: the audit must step aside around the new one too
    import functools

    import torchport.diagnose  # the audit's machinery first, as in a program that imports it

    assert torchport.diagnose.audit is tp.audit
    original = torch.jit.trace

    @functools.wraps(original)
    def replaced(*args: Any, **kwargs: Any) -> Any:
        return original(*args, **kwargs)

    monkeypatch.setattr(torch.jit, "trace", replaced)
    with tp.audit():
        assert torch.jit.trace is not replaced  # wrapped while the audit watches
        traced = torch.jit.trace(_data_dependent, torch.ones(3))
    assert torch.jit.trace is replaced  # and given back exactly
    assert torch.equal(traced(torch.ones(3)), _data_dependent(torch.ones(3)))
