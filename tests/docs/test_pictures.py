"""The README's pictures are what a run draws today (``docs/images/render_images.py``).

The test renders both pictures again, from real runs, and compares the text they
show with the committed SVGs, line by line. It compares text, not SVG bytes: rich
names its CSS classes by a hash of the content, so one masked value changes every
byte of the file.

What is masked, and why (nothing else is):

- doctor rows that describe the machine, not torchport: ``Python``, ``NumPy``,
  ``libraries`` (which optional packages this environment has), ``OS``, ``CPU``,
  ``host CUDA toolkit``, ``platform``, ``CPUs``, ``torch threads``, ``host RAM``
  (free memory moves between two runs). Their labels are compared; their values
  are not.
- the width of a table: a masked value of another length widens its column, so
  padding and runs of box-drawing characters are collapsed before comparing.

The torchport and torch versions, the accelerator, ``pick_device()``'s choice and
reason, the environment table and every line of the audit are compared as they are.
The committed doctor picture is of a healthy machine without an accelerator; on one
with an accelerator, or where the doctor finds a problem (a container whose CPU quota
is below torch's thread count, say), that comparison is skipped: the picture there is
rightly another. The audit is drawn on the CPU everywhere.
"""

from __future__ import annotations

import html
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
IMAGES = ROOT / "docs" / "images"

MACHINE_ROWS = (
    "Python",
    "NumPy",
    "libraries",
    "OS",
    "CPU",
    "host CUDA toolkit",
    "platform",
    "CPUs",
    "torch threads",
    "host RAM",
)


def svg_lines(svg: str) -> list[str]:
    """The text of a rich SVG export, one string per terminal line (by ``y``, then ``x``)."""
    rows: dict[float, list[tuple[float, str]]] = defaultdict(list)
    for match in re.finditer(r'<text[^>]*?x="([\d.]+)" y="([\d.]+)"[^>]*>(.*?)</text>', svg, re.S):
        text = html.unescape(match.group(3)).replace("\xa0", " ")
        rows[float(match.group(2))].append((float(match.group(1)), text))
    return ["".join(text for _, text in sorted(row)).rstrip() for _, row in sorted(rows.items())]


def masked(lines: list[str]) -> list[str]:
    """``lines`` with machine facts replaced by ``<machine>`` and table widths collapsed."""
    out = []
    for line in lines:
        cells = [cell.strip() for cell in line.split("│")]
        if len(cells) >= 3 and cells[1] in MACHINE_ROWS:
            cells[2] = "<machine>"
        line = "│".join(cells)
        line = re.sub(r"([─━┄])\1+", r"\1", line)
        out.append(re.sub(r" {2,}", " ", line).strip())
    return out


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("images")
    done = subprocess.run(
        [sys.executable, str(IMAGES / "render_images.py"), str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return out


@pytest.mark.slow  # renders both pictures from real runs
def test_the_audit_picture_is_fresh(fresh: Path) -> None:
    kept = svg_lines((IMAGES / "audit.svg").read_text(encoding="utf-8"))
    now = svg_lines((fresh / "audit.svg").read_text(encoding="utf-8"))
    assert any("examples/quickstart.py:" in line for line in now)
    assert masked(kept) == masked(now), "run: python docs/_gen pictures"


@pytest.mark.slow
def test_the_doctor_picture_is_fresh(fresh: Path) -> None:
    now = svg_lines((fresh / "doctor.svg").read_text(encoding="utf-8"))
    if not any(re.match(r"│accelerator\s*│none", line) for line in now):
        pytest.skip("this machine has an accelerator; the committed picture is of one without")
    if not any(line.strip() == "no problems found" for line in now):
        pytest.skip("the doctor finds a problem on this machine; the picture is of one without")
    kept = svg_lines((IMAGES / "doctor.svg").read_text(encoding="utf-8"))
    assert any(line.startswith("│pick_device()") for line in now)
    assert masked(kept) == masked(now), "run: python docs/_gen pictures"


def test_the_mask_hides_only_machine_rows() -> None:
    """A changed version or choice shows through the mask; a changed RAM figure does not."""
    table = ["┌────┬─────┐", "│torch   │2.13.0+cpu│", "│host RAM│22.8 GiB  │", "└────┴─────┘"]
    other_ram = [line.replace("22.8", "3.1") for line in table]
    other_torch = [line.replace("2.13.0", "2.15.0") for line in table]
    wider = ["┌──────┬───────┐", *table[1:3], "└──────┴───────┘"]
    assert masked(table) == masked(other_ram) == masked(wider)
    assert masked(table) != masked(other_torch)


def test_the_readme_shows_both_pictures() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for name in ("audit.svg", "doctor.svg"):
        assert f"](docs/images/{name})" in readme
