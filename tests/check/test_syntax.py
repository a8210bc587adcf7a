"""A file written for a newer Python: a per-file error that names the Python it needs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_paths, check_source
from torchport.check._syntax import NewerSyntaxError, parse_source

# Each snippet is valid on the Python named beside it and a syntax error before it.
NEWER = [
    ("type Vec = list[float]\n", (3, 12), 1),
    ("type Pair[T] = tuple[T, T]\n", (3, 12), 1),
    ("def first[T](xs: list[T]) -> T:\n    return xs[0]\n", (3, 12), 1),
    ("class Box[T]:\n    pass\n", (3, 12), 1),
    ("async def go[T](x: T) -> T:\n    return x\n", (3, 12), 1),
    ('x = {"a": 1}\ny = f"{x["a"]}"\n', (3, 12), 2),
    ("y = f\"{'\\n'.join(['a', 'b'])}\"\n", (3, 12), 1),
    ('name = "w"\nz = t"hello {name}"\n', (3, 14), 2),
    ("try:\n    pass\nexcept ValueError, TypeError:\n    pass\n", (3, 14), 3),
]
PLAIN_ERRORS = ["x = = 1\n", "def f(:\n    pass\n", "type = 3 3\n", 'f"{x!z}"\n']


def _python(version: tuple[int, int]) -> str | None:
    """An interpreter of ``version`` on this machine, if there is one (the oracle)."""
    name = f"python{version[0]}.{version[1]}"
    candidates = [shutil.which(name)]
    pyenv = Path(os.path.expanduser("~/.pyenv/versions"))
    if pyenv.is_dir():
        candidates += [
            str(h / "bin" / name) for h in sorted(pyenv.glob(f"{version[0]}.{version[1]}.*"))
        ]
    for found in candidates:
        if found and subprocess.run([found, "-V"], capture_output=True).returncode == 0:
            return found
    return None


@pytest.mark.parametrize(("source", "version", "line"), NEWER)
def test_newer_syntax_names_the_python_it_needs(
    source: str, version: tuple[int, int], line: int
) -> None:
    if sys.version_info[:2] >= version:
        parse_source(source)  # this Python reads it: nothing to explain
        return
    with pytest.raises(
        NewerSyntaxError, match=rf"needs Python {version[0]}\.{version[1]} or newer"
    ):
        parse_source(source)
    newer = _python(version)
    if newer is not None:  # the oracle, where this machine has that Python: it reads the file
        run = subprocess.run(
            [newer, "-c", f"import ast; ast.parse({source!r})"], capture_output=True
        )
        assert run.returncode == 0, run.stderr


@pytest.mark.parametrize("source", PLAIN_ERRORS)
def test_plain_syntax_errors_stay_plain(source: str) -> None:
    with pytest.raises(SyntaxError) as info:
        parse_source(source)
    assert not isinstance(info.value, NewerSyntaxError)
    assert "Python 3." not in str(info.value)


@settings(max_examples=50, deadline=None)
@given(
    case=st.sampled_from([c for c in NEWER if sys.version_info[:2] < c[1]]),
    before=st.integers(0, 5),
    filler=st.sampled_from(["import torch\n", "x = 1\n", "# a comment\n", "\n"]),
)
def test_the_error_points_at_the_line_and_names_the_file(
    case: tuple[str, tuple[int, int], int], before: int, filler: str
) -> None:
    snippet, version, line = case
    source = filler * before + snippet
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "new.py"
        path.write_text(source)
        report = check_paths([path])
    (error,) = report.errors
    text = str(error)
    assert f"needs Python {version[0]}.{version[1]}" in text and "new.py" in text, text
    assert f"at line {before + line}," in text, text
    with pytest.raises(NewerSyntaxError):
        check_source(source)
