"""TP401 on generated ``try`` blocks around a question only CUDA's module answers.

Oracle: ``torch.cuda.get_device_name()`` / ``get_device_properties()`` is left alone
exactly when a handler of the ``try`` around it catches what a machine without CUDA
raises (RuntimeError, AssertionError, a catch-all).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_source

NO_CUDA = {"RuntimeError", "AssertionError", "Exception", "BaseException", ""}
HANDLERS = ["RuntimeError", "AssertionError", "Exception", "", "ValueError", "KeyError"]


@settings(max_examples=100, deadline=None)
@given(
    st.sampled_from(["get_device_name(0)", "get_device_properties(0).name"]),
    st.lists(st.sampled_from(HANDLERS), max_size=2, unique=True),
    st.booleans(),
)
def test_a_probe_is_left_alone(call: str, handlers: list[str], in_function: bool) -> None:
    lines = [f"name = torch.cuda.{call}"]
    if handlers:
        lines = ["try:", f"    {lines[0]}"]
        for kind in sorted(handlers, key=lambda k: k == ""):  # a bare except comes last
            lines += [f"except {kind}:" if kind else "except:", "    name = None"]
    if in_function:
        lines = ["def which():", *(f"    {line}" for line in lines), "    return name"]
    source = "import torch\n" + "".join(f"{line}\n" for line in lines)
    reported = any(f.code == "TP401" for f in check_source(source, select=["TP401"]))
    assert reported == (not (set(handlers) & NO_CUDA)), source
