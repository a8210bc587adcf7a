"""The runner's pieces that need no process of their own: whole-line output, module lookup."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from torchport.run._lines import WholeLines
from torchport.run._target import Target, check_target


class _Recorder(io.RawIOBase):
    """A binary stream that keeps every write it gets, as the write() calls a pipe would see."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, data: object) -> int:
        chunk = bytes(data)  # type: ignore[call-overload]
        self.writes.append(chunk)
        return len(chunk)


def whole_lines() -> tuple[WholeLines, _Recorder]:
    raw = _Recorder()
    return WholeLines(io.BufferedWriter(raw), encoding="utf-8", write_through=True), raw


def test_each_write_is_whole_lines_even_when_an_argument_holds_newlines() -> None:
    stream, raw = whole_lines()
    print("epoch", 0, "tensor([[1.],\n        [4.]])", file=stream)
    assert raw.writes == [b"epoch 0 tensor([[1.],\n", b"        [4.]])\n"]
    print("progress", end="", file=stream, flush=True)  # an explicit flush gets a partial line out
    assert raw.writes[-1] == b"progress"
    stream.detach()


@given(st.lists(st.text(st.sampled_from("ab \n\r\t"), max_size=12), max_size=20))
def test_text_comes_out_unchanged_and_only_flush_cuts_a_line(pieces: list[str]) -> None:
    stream, raw = whole_lines()
    for piece in pieces:
        stream.write(piece)
    before_flush = list(raw.writes)
    stream.flush()
    assert b"".join(raw.writes).decode() == "".join(pieces)
    assert all(chunk.endswith(b"\n") for chunk in before_flush)
    stream.detach()


def test_a_module_is_found_without_importing_its_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "loud_pkg_for_test"
    package.mkdir()
    (package / "__init__.py").write_text("raise RuntimeError('imported too early')\n")
    (package / "job.py").write_text("")
    (package / "sub").mkdir()
    (package / "sub" / "__main__.py").write_text("")
    monkeypatch.chdir(tmp_path)
    check_target(Target("loud_pkg_for_test.job", module=True))
    check_target(Target("loud_pkg_for_test.sub", module=True))  # a namespace package's __main__
    assert "loud_pkg_for_test" not in sys.modules
