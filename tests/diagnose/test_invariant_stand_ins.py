"""The functions an audit swaps on torch's modules behave as torch's own while it watches.

The oracle is the program run bare: every way of holding a swapped function (a class
body run inside the block, an instance attribute, a ``functools.partial``, a default
argument, a list) crossed with every use (calling it through the holder, pickling the
holder and calling what comes back, deep-copying it, asking its signature) must give the
same outcome, value or exception, inside ``audit()`` and after it as without it.
On main a class body's ``make = torch.from_numpy`` passed ``self`` as the array, and
pickling anything holding ``torch.load``/``torch.save``/``torch.from_numpy`` raised.
"""

from __future__ import annotations

import copy
import functools
import inspect
import io
import pickle
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import torchport as tp

# name on torch -> a call of it whose outcome is comparable
_CALLS: dict[str, Callable[[Callable[..., Any]], Any]] = {
    "from_numpy": lambda f: f(np.arange(3.0)).tolist(),
    "frombuffer": lambda f: f(bytearray(8), dtype=torch.float32).tolist(),
    "save": lambda f: len(_saved(f)) > 0,
    "load": lambda f: f(io.BytesIO(_saved(torch.save)), weights_only=True).tolist(),
}


def _saved(save: Callable[..., Any]) -> bytes:
    buffer = io.BytesIO()
    save(torch.ones(2), buffer)
    return buffer.getvalue()


class _Box:
    """An instance attribute holding the function (a dataset's ``self.loader``)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn

    def call(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)


def _holders(name: str) -> dict[str, Callable[..., Any]]:
    """Ways a program holds ``torch.<name>``, each made now (inside the block, if any)."""
    fn = getattr(torch, name)

    class InBody:  # a class body run now: a builtin does not bind, a function does
        held = fn

    def with_default(*args: Any, made: Callable[..., Any] = fn, **kwargs: Any) -> Any:
        return made(*args, **kwargs)

    held_in_list = [fn]
    through_body: Callable[..., Any] = (
        InBody.held if not inspect.isfunction(inspect.unwrap(fn)) else InBody().held.__func__
    )
    return {
        "module attribute": fn,
        "class body, read from an instance": InBody().held,
        "class body, read from the class": through_body,
        "instance attribute": _Box(fn).call,
        "partial": functools.partial(fn),
        "default argument": with_default,
        "list": held_in_list[0],
    }


def _outcome(run: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return ("value", run())
    except Exception as err:  # the exception is the outcome compared
        return (type(err).__name__, str(err).split(" at 0x")[0])


def _program(made_before: dict[str, dict[str, Callable[..., Any]]] | None = None) -> list[Any]:
    """Each holder (made now, or ``made_before`` the block) crossed with each use."""
    seen: list[Any] = []
    for name, call in _CALLS.items():
        holders = made_before[name] if made_before is not None else _holders(name)
        for way, held in holders.items():
            seen.append((name, way, "call", _outcome(lambda held=held, call=call: call(held))))
            seen.append(
                (
                    name,
                    way,
                    "pickled",
                    _outcome(lambda held=held, call=call: call(pickle.loads(pickle.dumps(held)))),
                )
            )
            seen.append(
                (
                    name,
                    way,
                    "deepcopy",
                    _outcome(lambda held=held, call=call: call(copy.deepcopy(held))),
                )
            )
        fn = getattr(torch, name)
        seen.append((name, "signature", _outcome(lambda fn=fn: str(inspect.signature(fn)))))
        seen.append((name, "repr", _outcome(lambda fn=fn: repr(fn).split(" at 0x")[0])))
        seen.append((name, "doc", _outcome(lambda fn=fn: fn.__doc__)))
    return seen


@pytest.mark.parametrize("tools", ["audit", "audit+strict", "nested audits"])
def test_swapped_functions_bind_pickle_and_copy_as_torchs_own(tools: str) -> None:
    bare = _program()
    assert any(o[-1][0] == "value" for o in bare)
    with tp.audit():
        if tools == "audit":
            inside = _program()
        elif tools == "audit+strict":
            with tp.strict():
                inside = _program()
        else:
            with tp.audit():
                inside = _program()
            assert _program() == bare
    assert inside == bare
    assert _program() == bare  # after the block


def test_holders_made_before_the_block_bind_pickle_and_copy_the_same_inside() -> None:
    # the audit rebinds the program's own names for from_numpy/frombuffer made before it
    # (instance attributes, class attributes, defaults: diagnose/_held_names.py)
    made_before = {name: _holders(name) for name in _CALLS}
    bare = _program(made_before)
    with tp.audit():
        inside = _program(made_before)
    assert inside == bare
    assert _program(made_before) == bare


def test_a_pickle_made_inside_the_block_loads_torchs_own_function_after_it() -> None:
    with tp.audit():
        data = pickle.dumps((functools.partial(torch.load, weights_only=True), torch.from_numpy))
    load, make = pickle.loads(data)
    assert load.func is torch.load and make is torch.from_numpy
    assert make(np.ones(2)).tolist() == [1.0, 1.0]


@pytest.mark.parametrize("name", ["from_numpy", "frombuffer"])
def test_a_table_keyed_by_a_builtin_before_the_block_finds_it_inside(name: str) -> None:
    table = {getattr(torch, name): name}  # a library's dispatch dict, built at import
    with tp.audit():
        fn = getattr(torch, name)
        assert (table.get(fn), fn in {getattr(torch, name)}) == (name, True)
        assert fn == fn and fn != torch.save
    assert table.get(getattr(torch, name)) == name
