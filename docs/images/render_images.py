"""Render the README's pictures from real runs: the audit table and ``torchport doctor``.

Run from the repository root (it overwrites ``docs/images/*.svg``)::

    .venv/bin/python docs/images/render_images.py [OUT_DIR]

``audit.svg`` is the report ``torchport run --audit examples/quickstart.py`` prints
at exit (the quickstart run in this process under ``torchport.audit()``);
``doctor.svg`` is ``torchport doctor`` on this machine. Both are drawn by rich,
which the reports already render with, and exported as SVG (text stays text).
"""

from __future__ import annotations

import contextlib
import io
import runpy
import sys
from pathlib import Path

from rich.console import Console

import torchport as tp
from torchport.diagnose import render_doctor

ROOT = Path(__file__).resolve().parents[2]
WIDTH = 110


def _svg(renderable: object, title: str) -> str:
    console = Console(record=True, width=WIDTH, file=io.StringIO(), color_system="truecolor")
    console.print(renderable)
    return console.export_svg(title=title)


def render_audit() -> str:
    """The quickstart's audit report, as `torchport run --audit` shows it."""
    script = ROOT / "examples" / "quickstart.py"
    argv = sys.argv
    sys.argv = [str(script)]
    try:
        with contextlib.redirect_stdout(io.StringIO()), tp.audit() as report:
            runpy.run_path(str(script), run_name="__main__")
    finally:
        sys.argv = argv
    return _svg(report, "torchport run --audit examples/quickstart.py")


def render_doctor_report() -> str:
    """`torchport doctor` on this machine."""
    report = tp.doctor()
    return _svg(render_doctor(report, bandwidth_hint="run `torchport doctor --bandwidth`"),
                "torchport doctor")  # fmt: skip


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "audit.svg").write_text(render_audit(), encoding="utf-8")
    (out / "doctor.svg").write_text(render_doctor_report(), encoding="utf-8")
    print(f"wrote {out / 'audit.svg'} and {out / 'doctor.svg'}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "images")
