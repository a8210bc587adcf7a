"""TP101 leaves a CUDA parameter default every call passes also under a decorator known to
call the function with its caller's arguments (sample Y, pos 88: kimi-k3's ``@contextmanager
def autocast_ctx(device="cuda")`` was reported for the decorator alone).

Programs are drawn: one decorator from a table marked by hand (``KEEPS``: whether the wrapper
calls the function with exactly the arguments it was given, read in contextlib's, functools'
and torch's sources, apart from the rule's list), and the calls (by keyword, by position,
omitting the argument, through ``**kw``, ``functools.partial`` or an alias). Two oracles,
written apart from the rule: Python runs the program for every value the unknown names may
hold, entering what a call returns as a (sync or async) context manager, and a default the
rule leaves alone must never have run; and the table: left alone exactly when the decorator
is marked as keeping the call and every call passes the argument.
"""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

torch = pytest.importorskip("torch")

# decorator -> (the function's kind, whether its wrapper calls the function with the
# caller's arguments unchanged), marked by hand
KEEPS = {
    "@contextlib.contextmanager": ("cm", True),
    "@contextmanager": ("cm", True),
    "@contextlib.asynccontextmanager": ("acm", True),
    "@functools.cache": ("plain", True),
    "@functools.lru_cache": ("plain", True),
    "@functools.lru_cache(maxsize=8)": ("plain", True),
    "@lru_cache()": ("plain", True),
    "@torch.no_grad()": ("plain", True),
    "@torch.no_grad": ("plain", True),
    "@torch.inference_mode()": ("plain", True),
    "@torch.inference_mode(False)": ("plain", True),
    "@torch.enable_grad()": ("plain", True),
    "@torch.set_grad_enabled(False)": ("plain", True),
    "@torch.no_grad()\n@contextlib.contextmanager": ("cm", True),
    "@_keep": ("plain", False),  # the identity, but the checker cannot know that
    "@_fill": ("plain", False),  # a functools.wraps wrapper dropping the argument
    "@functools.wraps(_other)": ("plain", False),
    "@functools.lru_cache(_other)": ("plain", False),  # wraps `_other`, calls it with `_f`
    "@torch.no_grad()\n@_fill": ("plain", False),
}
FORMS = {
    "keyword": "_drive(_f(1, device=d))",
    "position": "_drive(_f(1, d))",
    "omitted": "_drive(_f(1))",
    "kwargs": "_drive(_f(1, **kw))",
    "partial": "_drive(functools.partial(_f, 1)(device=d))",
    "alias": "h = _f\n    _drive(h(1, d))",
}
PRELUDE = """import asyncio
import contextlib
import functools
import torch
from contextlib import contextmanager
from functools import lru_cache


def _keep(f):
    return f


def _fill(f):
    @functools.wraps(f)
    def inner(*a, **k):
        return f(a[0])

    return inner


def _other(*a):
    return a


def _drive(value):
    if hasattr(value, "__aenter__"):

        async def run():
            async with value:
                pass

        asyncio.run(run())
    elif hasattr(value, "__enter__"):
        with value:
            pass
"""
D = "the caller's device"
BINDINGS = [kw for kw in ({}, {"device": D})]


def program(decorator: str, default: str, forms: list[str]) -> str:
    kind = KEEPS[decorator][0]
    head = "async def" if kind == "acm" else "def"
    tail = "\n    yield" if kind in ("cm", "acm") else ""
    callee = f"{decorator}\n{head} _f(x, device={default}):\n    SEEN.append(str(device)){tail}\n"
    calls = "".join(f"    {FORMS[form]}\n" for form in forms) + "    pass\n"
    return f"{PRELUDE}\n\n{callee}\n\ndef main(d, kw):\n{calls}"


def default_ran(source: str) -> bool:
    """Whether the default ran for some value of ``kw`` (Python decides)."""
    for kw in BINDINGS:
        scope: dict[str, object] = {"SEEN": []}
        exec(compile(source, "train.py", "exec"), scope)
        # `@lru_cache(_other)`: what `_f` names is no function of `x`
        with contextlib.suppress(TypeError):
            scope["main"](D, kw)  # type: ignore[operator]
        if any(seen.startswith("cuda") for seen in scope["SEEN"]):  # type: ignore[attr-defined]
            return True
    return False


def reported(source: str) -> bool:
    return bool(check_text(source, "train.py", ruleset_for(["TP101"], None)).findings)


def expected_left_alone(decorator: str, forms: list[str]) -> bool:
    return KEEPS[decorator][1] and bool(forms) and set(forms) <= {"keyword", "position"}


@given(
    decorator=st.sampled_from(sorted(KEEPS)),
    default=st.sampled_from(('"cuda"', 'torch.device("cuda")')),
    forms=st.lists(st.sampled_from(sorted(FORMS)), max_size=3),
)
@example(decorator="@contextmanager", default='"cuda"', forms=["position"])  # pos 88
@example(decorator="@_fill", default='"cuda"', forms=["keyword"])
@example(decorator="@functools.lru_cache(_other)", default='"cuda"', forms=["keyword"])
def test_left_alone_only_when_the_decorator_keeps_the_call(
    decorator: str, default: str, forms: list[str]
) -> None:
    source = program(decorator, default, forms)
    left_alone = not reported(source)
    if left_alone:
        assert not default_ran(source), source
    assert left_alone == expected_left_alone(decorator, forms), source


def test_sample_y_kimi_autocast_ctx() -> None:
    """kimi-k3 ``training/autocast.py:175``, reduced: every call passes the device."""
    source = """import contextlib
import torch


@contextlib.contextmanager
def _autocast_ctx(device="cuda", dtype=torch.bfloat16):
    with torch.autocast(device, dtype=dtype):
        yield


def step(device, model, x):
    with _autocast_ctx(device):
        return model(x)
"""
    assert not reported(source)
    assert reported(source.replace("@contextlib.contextmanager", "@some.decorator"))
