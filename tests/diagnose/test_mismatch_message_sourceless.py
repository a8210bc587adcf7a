"""strict's message where the failing line has no source (``python -c``, exec'd strings).

The message must name the place without an empty quote: every backquoted span in it
holds text. Checked on a real mismatch (a meta-device layer fed a CPU tensor).
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import torch
from torch import nn

import torchport as tp

_QUOTED = re.compile(r"`([^`]*)`")

SCRIPT = (
    "import torch, torchport as tp\n"
    "layer = torch.nn.Linear(4, 2, device='meta')\n"
    "x = torch.randn(3, 4)\n"
    "with tp.strict():\n"
    "    layer(x)\n"
)


def _assert_no_empty_quote(message: str) -> None:
    assert "device mismatch" in message, message
    assert "``" not in message, message
    assert all(span.strip() for span in _QUOTED.findall(message)), message


def test_a_mismatch_in_python_dash_c_has_no_empty_quote() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert "DeviceMismatchError" in last, done.stderr
    _assert_no_empty_quote(last)
    assert "<string>:5" in last  # the place is still named


def test_a_mismatch_in_exec_d_code_has_no_empty_quote() -> None:
    layer = nn.Linear(4, 2, device="meta")
    code = compile("layer(x)\n", "<generated-by-a-test>", "exec")
    with pytest.raises(tp.DeviceMismatchError) as caught, tp.strict():
        exec(code, {"layer": layer, "x": torch.randn(3, 4)})
    _assert_no_empty_quote(str(caught.value))


def test_a_line_with_source_is_still_quoted() -> None:
    layer = nn.Linear(4, 2, device="meta")
    with pytest.raises(tp.DeviceMismatchError) as caught, tp.strict():
        layer(torch.randn(3, 4))
    assert "`layer(torch.randn(3, 4))`" in str(caught.value)
