"""The summary's hints name commands that do what they say: generated files, real rules.

``check`` ends with notes such as ``(2 more with `torchport fix --unsafe`)``. Oracle:
running each named command on a fresh copy of the file leaves at least that many
findings fewer than ``check`` reported (the command also applies the safe fixes, so
never fewer removed).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchport.cli._main import main

LINES = [
    "a = torch.randn(4, 3).to(device)",  # TP106, unsafe (random), speed
    "b = torch.zeros(4, 3).to(device)",  # TP106, safe, speed
    "print(torch.cuda.device_count())",  # TP401, unsafe
    "torch.cuda.synchronize()",  # TP401, safe
    'c = out.to("cpu", non_blocking=True)',  # TP204, safe
    "torch.cuda.manual_seed(0)",  # TP402
    'd = torch.load("w.pt", weights_only=False)',  # TP302, reported only
]
NOTE = re.compile(r"(\d+) (?:fixable|more) with `torchport (fix[^`]*)`")
COUNT = re.compile(r"Found (\d+) finding")


def _check(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    main(["check", str(path)])
    return capsys.readouterr().out


@pytest.mark.slow  # among the default run's slowest (15-29 s on 2 cores): the slow leg runs it
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(lines=st.lists(st.sampled_from(LINES), min_size=1, max_size=6))
def test_each_hint_applies_what_it_counts(
    lines: list[str], tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    work = tmp_path_factory.mktemp("hints")
    original = work / "prog.py"
    original.write_text("import torch\n\ndevice = 'cpu'\nout = None\n" + "\n".join(lines) + "\n")
    report = _check(original, capsys)
    found = COUNT.search(report)
    total = int(found.group(1)) if found else 0
    for count, command in NOTE.findall(report):
        copy = work / "copy.py"
        shutil.copy(original, copy)
        main([*command.split(), str(copy)])
        capsys.readouterr()
        after = COUNT.search(_check(copy, capsys))
        left = int(after.group(1)) if after else 0
        assert left <= total - int(count), (command, report, copy.read_text())
