"""``port --verify PATH``: a path written after ``--verify`` is not silently a script argument.

``--verify`` takes the rest of the line as the entry script's arguments. With no PATH
before it, ``torchport port --verify train.py`` used to port the whole working folder
and pass ``train.py`` to the script. Now it is refused (exit 2) and nothing is written;
``--`` first still passes arguments on purpose.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from torchport.cli._main import main

CPU_SCRIPT = (
    "import torch\nfrom torch import nn\n\n\n"
    "def main() -> None:\n"
    "    model = nn.Linear(2, 1)\n"
    "    print(model(torch.randn(3, 2)).sum().item())\n\n\n"
    'if __name__ == "__main__":\n    main()\n'
)


@pytest.mark.parametrize("named", ["train.py", "pkg", "./train.py"])
def test_a_path_after_verify_is_refused_and_nothing_is_written(
    named: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "train.py").write_text(CPU_SCRIPT)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "other.py").write_text(CPU_SCRIPT)
    before = {p: p.read_text() for p in tmp_path.rglob("*.py")}
    monkeypatch.chdir(tmp_path)
    assert main(["port", "--verify", named]) == 2
    err = capsys.readouterr().err
    assert f"torchport port {named} --verify" in err
    assert {p: p.read_text() for p in tmp_path.rglob("*.py")} == before


def test_an_argument_that_is_no_path_is_left_to_the_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import argparse

    from torchport.cli.port import _path_after_verify

    monkeypatch.chdir(tmp_path)
    (tmp_path / "data.csv").write_text("")
    for paths, verify, expected in [
        ([], ["--epochs", "1"], None),  # not a path: the script's argument
        ([], ["--", "data.csv"], None),  # `--`: on purpose
        (["."], ["data.csv"], None),  # paths given first: the rest is the script's
        ([], None, None),
        ([], ["data.csv"], "data.csv"),
        ([], ["--no-progress", "data.csv"], "data.csv"),  # behind an option (a real trial)
    ]:
        args = argparse.Namespace(paths=paths, verify=verify)
        assert _path_after_verify(args) == expected, (paths, verify)
    assert os.path.exists("data.csv")
