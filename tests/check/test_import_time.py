"""`torchport check` never pays for torch: checked in fresh interpreters."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def torch_loaded(code: str, cwd: Path | None = None) -> str:
    probe = f"{code}\nimport sys\nprint('TORCH' if 'torch' in sys.modules else 'NO-TORCH')"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=False, cwd=cwd
    )
    assert out.stdout.strip().splitlines(), out.stderr
    return out.stdout.strip().splitlines()[-1]


def test_import_check_and_every_module_under_it_imports_no_torch() -> None:
    code = (
        "import pkgutil, importlib, torchport.check as c\n"
        "for m in pkgutil.walk_packages(c.__path__, 'torchport.check.'):\n"
        "    importlib.import_module(m.name)\n"
        "assert c.RULES is not None"
    )
    assert torch_loaded(code) == "NO-TORCH"


@pytest.mark.parametrize(
    "argv", [["check", "--help"], ["fix", "--help"], ["check", "--explain", "TP101"]]
)
def test_cli_help_imports_no_torch(argv: list[str]) -> None:
    code = (
        "from torchport.cli._main import main\n"
        f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass"
    )
    assert torch_loaded(code) == "NO-TORCH"


def test_cli_check_and_fix_run_without_torch(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("import torch\nx = torch.ones(2).cuda()\n")
    code = (
        "from torchport.cli._main import main\n"
        "main(['check', '--select', 'ALL', 'm.py'])\n"
        "main(['fix', '--diff', '--select', 'ALL', 'm.py'])"
    )
    assert torch_loaded(code, cwd=tmp_path) == "NO-TORCH"
