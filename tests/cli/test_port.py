"""`torchport port`: in place, --diff, --check, exit codes, files that do not parse."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchport.cli._main import main

SCRIPT = (
    "import torch\n\n"
    "model = torch.nn.Linear(4, 2)  # the model\n"
    "loader = torch.utils.data.DataLoader(data)\n"
    "for x, y in loader:\n"
    "    loss = (model(x) - y).sum()\n"
)
UNPORTABLE = (
    "import torch\n\nmodel = torch.nn.Linear(4, 2)\nfor b in loader:\n    model(b)\n    b[0]\n"
)


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "train.py"
    path.write_text(SCRIPT)
    return path


def test_port_rewrites_in_place_and_is_idempotent(
    script: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["port", str(script)]) == 0
    text = script.read_text()
    assert "model = torch.nn.Linear(4, 2).to(device)  # the model\n" in text
    assert "    x, y = x.to(device, non_blocking=True)" in text
    assert "ported" in capsys.readouterr().out
    assert main(["port", str(script)]) == 0
    assert script.read_text() == text
    assert main(["port", "--check", str(script)]) == 0


def test_diff_and_check_write_nothing(script: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["port", "--diff", str(script)]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"--- {script}") and "+device = torch.accelerator" in out
    assert main(["port", "--check", str(script)]) == 1
    assert "would port" in capsys.readouterr().out
    assert script.read_text() == SCRIPT


def test_what_cannot_be_ported_is_listed_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "odd.py"
    path.write_text(UNPORTABLE)
    assert main(["port", str(path)]) == 1
    out = capsys.readouterr().out
    assert "Could not port" in out and "TP520" in out
    assert ".to(device)" in path.read_text()  # the model moved; the batch is reported


def test_a_file_that_does_not_parse_exits_2_and_is_untouched(
    tmp_path: Path, script: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("def f(:\n")
    assert main(["port", str(tmp_path)]) == 2
    assert "cannot parse" in capsys.readouterr().err
    assert bad.read_text() == "def f(:\n"
    assert "to(device)" in script.read_text()  # the other file is still ported


def _stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


def test_port_dash_ports_stdin_to_stdout(
    monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    _stdin(monkeypatch, SCRIPT.encode())
    assert main(["port", "-"]) == 0
    out, err = capsysbinary.readouterr()
    assert b"model = torch.nn.Linear(4, 2).to(device)  # the model\n" in out
    assert b"in 1 file; 0 left." in err
    _stdin(monkeypatch, out)
    assert main(["port", "-"]) == 0
    assert capsysbinary.readouterr().out == out  # idempotent through stdin too


@pytest.mark.parametrize(
    ("head", "encoding"),
    [
        (b"# -*- coding: latin-1 -*-\n", "latin-1"),
        (b"\xef\xbb\xbf", "utf-8-sig"),
        (b"# vim: set fileencoding=cp1252 :\n", "cp1252"),
    ],
)
def test_stdin_is_decoded_as_a_file_and_written_back_in_its_encoding(
    monkeypatch: pytest.MonkeyPatch,
    capsysbinary: pytest.CaptureFixture[bytes],
    head: bytes,
    encoding: str,
) -> None:
    text = "import torch\nname = 'caf\u00e9'\nx = torch.ones(1).cuda()\n"
    _stdin(monkeypatch, head + text.encode(encoding.replace("-sig", "")))
    assert main(["fix", "--speed", "--extend-select", "TP101", "-"]) == 0  # TP101: named
    out = capsysbinary.readouterr().out
    assert out.startswith(head)
    fixed = out.decode(encoding)
    assert "caf\u00e9" in fixed and ".cuda()" not in fixed


def test_stdin_with_bytes_invalid_in_its_encoding_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    given = b"import torch\ns = '\xff'\nx = torch.ones(1).cuda()\n"
    for command in ("check", "fix", "port"):
        _stdin(monkeypatch, given)
        assert main([command, "-"]) == 2
        out, err = capsysbinary.readouterr()
        assert b"not valid utf-8 at byte 18" in err and b"coding" in err
        assert out == b""  # no text: an editor keeps its buffer on exit 2


def test_the_summary_never_says_nothing_is_left_without_saying_it_ran_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A static port cannot promise that no data stays on the CPU: the summary says so."""
    (tmp_path / "model.py").write_text(
        "from torch import nn\n\n\nclass Net(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.fc = nn.Linear(4, 2)\n\n"
        "    def forward(self, x):\n        return self.fc(x)\n"
    )
    (tmp_path / "train.py").write_text(
        "import torch\nfrom model import Net\n\nnet = Net()\nprint(net(torch.ones(1, 4)))\n"
    )
    assert main(["port", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "0 left." in out
    assert "Not verified by running" in out
    text = (tmp_path / "train.py").read_text()
    assert "net = Net().to(device)" in text  # the model from the sibling module is moved
    assert "torch.ones(1, 4, device=device)" in text
