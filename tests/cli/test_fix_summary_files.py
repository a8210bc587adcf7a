"""``fix --diff``'s summary counts every file a finding is left in.

Oracle, computed apart: ``fix_source`` then ``check_source`` on each file's text give the
findings a real fix would leave; the dry run's "Found N findings in M files" must name
the same N and M, including files whose only findings lie on lines the fix writes
(which have no place on disk). Before, such a file was counted as no file at all
("Found 1 finding in 0 files").
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchport.check import check_source, fix_source
from torchport.cli._main import main

LINES = [
    "x = torch.randn(2).cuda()",  # fixed to .to(device), then TP106 on the written line
    "torch.cuda.synchronize()",
    "y = torch.randn(4, 3).to(device)",  # TP106 on a line the fix leaves alone
    "z = 1",
]
FOUND = re.compile(r"^Found (\d+) findings? in (\d+) files?\b", re.M)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    files=st.lists(st.lists(st.sampled_from(LINES), min_size=1, max_size=3), min_size=1, max_size=3)
)
def test_the_dry_run_counts_the_files_a_fix_would_leave_findings_in(
    files: list[list[str]],
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
) -> None:
    work = tmp_path_factory.mktemp("summary")
    left, holding = 0, 0
    for i, lines in enumerate(files):
        text = "import torch\n\ndevice = 'cpu'\n" + "\n".join(lines) + "\n"
        (work / f"m{i}.py").write_text(text)
        found = check_source(fix_source(text))
        left += len(found)
        holding += bool(found)
    main(["fix", "--diff", str(work)])
    err = capsys.readouterr().err
    match = FOUND.search(err)
    if left == 0:
        assert match is None, err
        return
    assert match is not None, err
    assert (int(match.group(1)), int(match.group(2))) == (left, holding), (err, files)
