"""The pillar's reports hold facts; one module draws them, and nothing imports in a circle."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch

import torchport as tp
from torchport.diagnose import _report

_PACKAGE = Path(_report.__file__).parent
_FACTS = ("_audit.py", "_doctor.py", "_memory.py", "_oom.py", "_bandwidth.py", "_findings.py")


def _runtime_imports(path: Path) -> set[str]:
    """Modules a file imports when it runs: at its top level, outside ``if TYPE_CHECKING:``."""
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


@pytest.mark.parametrize("name", _FACTS)
def test_report_modules_draw_nothing(name: str) -> None:
    imports = _runtime_imports(_PACKAGE / name)
    assert not any(module.split(".")[0] == "rich" for module in imports)
    assert "torchport.diagnose._report" not in imports  # delegation is lazy, from a method


def test_the_renderer_imports_no_report_module_at_run_time() -> None:
    imports = _runtime_imports(_PACKAGE / "_report.py")
    assert not imports & {
        f"torchport.diagnose.{name[:-3]}"
        for name in ("_audit.py", "_doctor.py", "_memory.py", "_oom.py")
    }


def test_every_report_draws_through_the_one_renderer() -> None:
    with tp.audit() as audit_report:
        torch.ones(2).sum().item()
    memory = tp.memory_report("cpu")
    doctor = tp.doctor(free_memory=False)
    oom = tp.explain_oom("CUDA out of memory. Tried to allocate 2.00 GiB")
    for report in (audit_report, memory, doctor):
        assert str(report) == _report.render_text(report)
    assert str(oom) == _report.oom_text(oom)
    with pytest.raises(TypeError, match="expected an AuditReport"):
        _report.render(object())
