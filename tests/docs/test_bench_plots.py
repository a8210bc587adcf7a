"""The benchmark plots draw what RESULTS.md records, and the committed SVGs are fresh.

``benchmarks/figures.toml`` copies numbers from RESULTS.md's tables; each number is
checked against the row it names here (so a plot cannot show a figure RESULTS.md does
not hold), and each SVG is compared with what ``docs/_gen/bench_plots.py`` draws now,
byte for byte (the drawing holds no date or random id).
"""

from __future__ import annotations

import re
from pathlib import Path
from xml.etree import ElementTree

import bench_plots
import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = (ROOT / "benchmarks" / "RESULTS.md").read_text(encoding="utf-8")
FIGURES = bench_plots.load()


def _row(start: str) -> str:
    rows = [line for line in RESULTS.splitlines() if line.startswith(f"| {start} |")]
    assert len(rows) == 1, f"RESULTS.md has {len(rows)} table rows starting {start!r}"
    return rows[0]


def _written(value: float) -> set[str]:
    """The ways RESULTS.md writes ``value``: ``0.8``, ``0.80``, ``5``, ``5.0``."""
    # only spellings of this very number: 0.81 is not "0.8", though it rounds to it
    return {s for s in (f"{value:g}", f"{value:.1f}", f"{value:.2f}") if float(s) == value}


@pytest.mark.parametrize("figure", FIGURES, ids=lambda f: f.name)
def test_every_number_is_in_the_row_it_names(figure: bench_plots.Figure) -> None:
    unit = re.escape(figure.suffix.strip())
    for bar in figure.bars:
        row = _row(bar.row)
        # the measured cells: every cell after the first, the target column aside
        recorded = re.findall(rf"(?<![\d.])(\d+(?:\.\d+)?) ?{unit}", row)
        # each run's number in the row's own order, each cell used once: a repeated
        # or reordered copy would draw another median from numbers the row holds
        cells = iter(recorded)
        for value in bar.values:
            assert any(cell in _written(value) for cell in cells), (
                f"{bar.label}: {bar.values} are not the row's numbers in its order: {row}"
            )
        if bar.target is not None:
            stated = bar.target_quote or f"≤ {bar.target:g}{figure.suffix}"
            where = RESULTS if bar.target_quote else row
            assert stated in where, f"{bar.label}: target {stated!r} not stated"
            if bar.target_quote:
                assert f"{bar.target:g}{figure.suffix}" in RESULTS


@pytest.mark.parametrize("figure", FIGURES, ids=lambda f: f.name)
def test_the_committed_svg_is_what_the_numbers_draw(figure: bench_plots.Figure) -> None:
    path = bench_plots.path_of(figure)
    assert path.read_text(encoding="utf-8") == bench_plots.render(figure), (
        f"{path.name} is stale; run: python docs/_gen plots"
    )


def test_each_svg_is_well_formed_and_fits_its_canvas() -> None:
    for figure in FIGURES:
        root = ElementTree.fromstring(bench_plots.render(figure))
        width = float(root.attrib["width"])
        for element in root.iter():
            for name in ("x", "x1", "x2", "cx"):
                if name in element.attrib:
                    assert 0 <= float(element.attrib[name]) <= width, (figure.name, element.attrib)
            if element.tag.endswith("text"):
                # A sans-serif glyph averages about 0.55 of the font size: text must end inside.
                size = float(element.attrib.get("font-size", root.attrib["font-size"]))
                span = 0.55 * size * len(element.text or "")
                x = float(element.attrib["x"])
                anchor = element.attrib.get("text-anchor", "start")
                left, right = {"start": (x, x + span), "end": (x - span, x)}.get(
                    anchor, (x - span / 2, x + span / 2)
                )
                assert left >= 0 and right <= width, (figure.name, element.text)


def test_each_bar_is_as_long_as_its_median() -> None:
    """The drawing's scale, read back from the SVG: bar length / median is one constant."""
    for figure in FIGURES:
        svg = bench_plots.render(figure)
        widths = [float(w) for w in re.findall(r"<rect x='\d+' y='[\d.]+' width='([\d.]+)'", svg)]
        scales = [w / bar.median for w, bar in zip(widths, figure.bars, strict=True)]
        assert max(scales) - min(scales) < 0.5, (figure.name, scales)


def test_results_and_readme_link_every_plot() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for figure in FIGURES:
        name = bench_plots.path_of(figure).name
        assert f"../docs/images/{name}" in RESULTS, name
        assert f"docs/images/{name}" in readme, name
