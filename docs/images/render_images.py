"""Render the README's pictures from real runs: the audit table and ``torchport doctor``.

Run from the repository root (it overwrites ``docs/images/audit.svg`` and ``doctor.svg``)::

    .venv/bin/python docs/images/render_images.py [OUT_DIR]      # or: python docs/_gen pictures

``audit.svg`` is the report ``torchport run --audit examples/quickstart.py`` prints
at exit (the quickstart run in this process under ``torchport.audit()``, on the CPU:
``TORCHPORT_DEVICE=cpu`` for that run, so a machine with a GPU draws the same
picture); ``doctor.svg`` is ``torchport doctor`` on this machine, with the device
environment variables it lists unset (the picture shows a default environment, not
the one this script was started in). Both are drawn by rich, which the reports
already render with, and exported as SVG (text stays text).
``tests/docs/test_pictures.py`` renders both again and compares them with the
committed ones.
"""

from __future__ import annotations

import contextlib
import io
import os
import runpy
import sys
from collections.abc import Iterator
from pathlib import Path

from rich.console import Console

import torchport as tp
from torchport.diagnose import render_doctor
from torchport.diagnose._env import ENV_VARS

ROOT = Path(__file__).resolve().parents[2]
WIDTH = 110


def _svg(renderable: object, title: str) -> str:
    console = Console(record=True, width=WIDTH, file=io.StringIO(), color_system="truecolor")
    console.print(renderable)
    return console.export_svg(title=title)


@contextlib.contextmanager
def _environment(**values: str | None) -> Iterator[None]:
    """``os.environ`` with ``values`` set (``None``: unset), restored afterwards."""
    saved = {name: os.environ.get(name) for name in values}
    try:
        for name, value in values.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def render_audit() -> str:
    """The quickstart's audit report on the CPU, as `torchport run --audit` shows it."""
    script = ROOT / "examples" / "quickstart.py"
    argv = sys.argv
    sys.argv = [str(script)]
    try:
        with (
            _environment(TORCHPORT_DEVICE="cpu"),
            contextlib.redirect_stdout(io.StringIO()),
            tp.audit() as report,
        ):
            runpy.run_path(str(script), run_name="__main__")
    finally:
        sys.argv = argv
    return _svg(report, "torchport run --audit examples/quickstart.py")


def render_doctor_report() -> str:
    """`torchport doctor` on this machine, in a default device environment."""
    with _environment(**dict.fromkeys(ENV_VARS)):
        report = tp.doctor()
    return _svg(render_doctor(report, bandwidth_hint="run `torchport doctor --bandwidth`"),
                "torchport doctor")  # fmt: skip


def main(out: Path | None = None) -> None:
    out = out or ROOT / "docs" / "images"
    out.mkdir(parents=True, exist_ok=True)
    (out / "audit.svg").write_text(render_audit(), encoding="utf-8")
    (out / "doctor.svg").write_text(render_doctor_report(), encoding="utf-8")
    print(f"wrote {out / 'audit.svg'} and {out / 'doctor.svg'}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else None)
