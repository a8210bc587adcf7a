from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from torchport.bench import Check, Row, SuiteResult, script_main


def _measure(seen: list[bool]) -> Callable[[bool], list[SuiteResult]]:
    def measure(quick: bool) -> list[SuiteResult]:
        seen.append(quick)
        check = Check("x / y", 0.5, 0.8)
        return [
            SuiteResult("demo", (Row("case", "strategy", status="not installed: y"),), (check,))
        ]

    return measure


def test_json_output_carries_the_suites_and_the_quick_flag(
    capsys: pytest.CaptureFixture[str],
) -> None:
    seen: list[bool] = []
    assert script_main("Demo benchmark.\n\nMore.", _measure(seen), ["--quick", "--json"]) == 0
    assert seen == [True]
    data = json.loads(capsys.readouterr().out)
    assert data["quick"] is True
    (suite,) = data["suites"]
    assert suite["name"] == "demo"


def test_text_output_shows_the_check(capsys: pytest.CaptureFixture[str]) -> None:
    seen: list[bool] = []
    script_main("Demo benchmark.", _measure(seen), [])
    assert seen == [False]
    out = capsys.readouterr().out
    assert "x / y" in out and "PASS" in out
