"""torchport's own code, examples and benchmarks pass its checker (dogfooding)."""

from __future__ import annotations

from pathlib import Path

from torchport.check import check_paths

ROOT = Path(__file__).parents[1]


def test_the_repository_checks_clean_with_its_own_config() -> None:
    result = check_paths([str(ROOT)], config=str(ROOT / "pyproject.toml"))
    assert result.errors == []
    assert result.files > 50  # src/, examples/ and benchmarks/ were all read
    assert [str(finding) for finding in result.findings] == []
