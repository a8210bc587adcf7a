"""Diagnosing never changes the program: torch's warnings inside ``audit()`` and
``strict()`` name the program's line, module and once-registry, as outside.

Torch issues a C++ warning (``TORCH_WARN``) at the innermost Python frame; under the
audit's function mode that was the mode's own (``_methods.py``), so a filter on the
program's module, ``-W error::UserWarning:mymodule`` or a ``"default"`` filter's
once-per-line acted on torchport's frame instead. The warning used here is a kernel's
``TORCH_WARN`` reached through the dispatcher: ``out=`` of the wrong shape is resized.
"""

from __future__ import annotations

import re
import sys
import traceback
import warnings
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import pytest
import torch

import torchport as tp
from tests.sim.isolated import run_isolated

_RESIZED = "An output with one or more elements was resized"
_BLOCKS: dict[str, Callable[[], AbstractContextManager[Any]]] = {
    "bare": nullcontext,
    "audit": tp.audit,
    "strict": tp.strict,
}


def _resize_out(times: int = 1) -> int:
    """Warn from C++ ``times`` times at one line; returns that line."""
    a = torch.ones(3)
    for _ in range(times):
        torch.add(a, a, out=torch.empty(5))
    return sys._getframe().f_lineno - 1


@pytest.fixture(autouse=True)
def _warn_each_time() -> Iterator[None]:
    always = torch.is_warn_always_enabled()
    torch.set_warn_always(True)  # TORCH_WARN_ONCE would warn once per process otherwise
    yield
    torch.set_warn_always(always)


@pytest.mark.parametrize("block", list(_BLOCKS))
def test_a_cpp_warning_names_the_programs_file_and_line(block: str) -> None:
    with warnings.catch_warnings(record=True) as caught, _BLOCKS[block]():
        warnings.simplefilter("always")
        line = _resize_out()
    resized = [w for w in caught if _RESIZED in str(w.message)]
    assert [(w.filename, w.lineno) for w in resized] == [(__file__, line)]


@pytest.mark.parametrize("block", list(_BLOCKS))
def test_a_filter_on_the_programs_module_acts_inside_as_outside(block: str) -> None:
    # what `-W error::UserWarning:<this module>` installs
    with warnings.catch_warnings():
        warnings.filterwarnings("error", category=UserWarning, module=re.escape(__name__) + "$")
        with pytest.raises(UserWarning, match=_RESIZED), _BLOCKS[block]():
            _resize_out()
    with warnings.catch_warnings(record=True) as caught:  # another module's filter: no error
        warnings.simplefilter("always")
        warnings.filterwarnings("error", category=UserWarning, module="torchport")
        with _BLOCKS[block]():
            _resize_out()
    assert any(_RESIZED in str(w.message) for w in caught)


@pytest.mark.parametrize("block", list(_BLOCKS))
def test_the_default_filter_shows_a_line_once_inside_as_outside(block: str) -> None:
    globals().pop("__warningregistry__", None)  # the registry "default" keeps per module
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        with _BLOCKS[block]():
            line = _resize_out(times=3)
    resized = [(w.filename, w.lineno) for w in caught if _RESIZED in str(w.message)]
    assert resized == [(__file__, line)]


def test_an_error_raised_under_audit_shows_the_programs_line_once() -> None:
    with pytest.raises(RuntimeError) as info, tp.audit():
        torch.ones(2) @ torch.ones(3)
    line = sys._getframe().f_lineno - 1
    frames = traceback.extract_tb(info.value.__traceback__)
    here = [f for f in frames if f.filename == __file__]
    assert [f.lineno for f in here] == [line], frames


@pytest.mark.xfail(
    tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 15),
    reason="known, not yet fixed (issue 36): on torch 2.15 a uint8-mask index of a simulated "
    "tensor under audit() warns at torch/_ops.py, the simulator's own dispatch frame",
    strict=True,
)
def test_warnings_of_the_simulated_device_name_the_programs_line_inside_as_outside() -> None:
    found = run_isolated(
        """
        import sys, warnings
        import torchport as tp
        sim = simulate_accelerator()
        torch.set_warn_always(True)
        x = torch.ones(3, device=sim)

        def calls():
            torch.tensor(x)
            x[torch.tensor([1, 0, 1], dtype=torch.uint8, device=sim)]
            torch.add(x, x, out=torch.empty(5, device=sim))

        def where():
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                calls()
            return [[w.filename, w.lineno, str(w.message)[:30]] for w in caught]

        bare = where()
        with tp.audit():
            audited = where()
        print(json.dumps({"bare": bare, "audited": audited}))
        """
    )
    assert found["bare"], "torch warns in none of these cases"
    assert found["audited"] == found["bare"]
    assert {file for file, _, _ in found["audited"]} == {"<string>"}  # the program's


def test_a_warning_of_a_function_the_audit_stands_in_for_names_the_programs_line() -> None:
    import numpy as np

    frozen = np.ones(3)
    frozen.flags.writeable = False
    with warnings.catch_warnings(record=True) as caught, tp.audit():
        warnings.simplefilter("always")
        torch.from_numpy(frozen)  # stood in for while the audit watches: a wrapper's frame
        line = sys._getframe().f_lineno - 1
    found = [(w.filename, w.lineno) for w in caught if "not writable" in str(w.message)]
    assert found == [(__file__, line)]
