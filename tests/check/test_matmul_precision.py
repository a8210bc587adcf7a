"""TP407's claim, against torch: the legacy TF32 switch and the generic precision agree."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

from torchport.check import fix_source


@pytest.fixture
def fresh_precision() -> Iterator[None]:
    saved = torch.get_float32_matmul_precision()
    yield
    torch.set_float32_matmul_precision(saved)


@pytest.mark.parametrize("flag", [True, False])
def test_fixed_setting_leaves_torch_in_the_same_state(flag: bool, fresh_precision: None) -> None:
    source = f"import torch\ntorch.backends.cuda.matmul.allow_tf32 = {flag}\n"
    fixed = fix_source(source, select=["TP407"], unsafe=True)
    assert fixed != source
    states = []
    for program in (source, fixed):
        torch.set_float32_matmul_precision("highest")
        exec(compile(program, "<tf32>", "exec"), {})
        states.append((torch.get_float32_matmul_precision(), torch.backends.cuda.matmul.allow_tf32))
    assert states[0] == states[1]
