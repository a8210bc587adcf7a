"""``fix --diff`` names places in the file on disk: generated files, real rules.

Oracle: every finding left after ``fix --diff`` lies within the file on disk; one
not marked as being in text the fix writes sits on a disk line whose text is the
line the checker found it on in the fixed text (computed apart, with ``fix_source``
and ``check_source``).
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchport.check import check_source, fix_source
from torchport.cli._main import main

LINES = [
    "x = torch.randn(2).cuda()",
    "torch.cuda.synchronize()",
    'w = torch.load("a.pt", weights_only=False)',
    "y = torch.randn(4, 3).to(device)",
    "print(torch.cuda.device_count())",
    "z = x + 1",
    "",
    'h = out.to("cpu", non_blocking=True)',
]
LEFT = re.compile(r"^prog\.py:(\d+):(\d+): (TP\d+) (.*)$")


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(lines=st.lists(st.sampled_from(LINES), min_size=1, max_size=7), unsafe=st.booleans())
def test_positions_after_a_diff_name_the_file_on_disk(
    lines: list[str],
    unsafe: bool,
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
) -> None:
    work = tmp_path_factory.mktemp("diff")
    text = "import torch\n\ndevice = 'cpu'\nout = None\n" + "\n".join(lines) + "\n"
    path = work / "prog.py"
    path.write_text(text)
    main(["fix", "--diff", "--speed", *(["--unsafe"] if unsafe else []), str(path)])
    err = capsys.readouterr().err
    assert path.read_text() == text  # --diff writes nothing
    disk = text.splitlines()
    fixed = fix_source(text, unsafe=unsafe)
    fixed_lines = fixed.splitlines()
    found_in_fixed = {(f.code, fixed_lines[f.line - 1].strip()) for f in check_source(fixed)}
    for row in err.splitlines():
        match = LEFT.match(row.replace(str(path), "prog.py"))
        if match is None:
            continue
        line, code, message = int(match.group(1)), match.group(3), match.group(4)
        assert 1 <= line <= len(disk), (row, text)
        if "in the text the fix writes" not in message:
            assert (code, disk[line - 1].strip()) in found_in_fixed, (row, text, fixed)
