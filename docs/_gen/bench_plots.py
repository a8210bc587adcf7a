"""Draw the headline benchmark figures as SVG, from ``benchmarks/figures.toml``.

One horizontal bar chart per ``[[figure]]``: a bar per row of RESULTS.md it names, as
long as the median of the values that row records; each value of a row with several
runs is a dot on its bar, and a dashed mark across a bar is that row's target. The
SVG is written by hand (no matplotlib, which torchport does not depend on), with no
date or random id in it, so the same numbers always give the same bytes.

``python docs/_gen plots`` writes ``docs/images/bench-NAME.svg``;
``tests/docs/test_bench_plots.py`` fails when a committed SVG differs from what the
numbers draw, or when a number is not the one RESULTS.md records.
"""

from __future__ import annotations

import math
import statistics
import tomllib
from dataclasses import dataclass
from html import escape
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "benchmarks" / "figures.toml"
OUT = ROOT / "docs" / "images"

WIDTH = 860
LABEL_WIDTH = 250
ROW = 34
TOP = 56
BOTTOM = 48
FONT = "font-family='DejaVu Sans, Helvetica, Arial, sans-serif'"


@dataclass(frozen=True)
class Bar:
    label: str
    row: str
    values: tuple[float, ...]
    target: float | None
    target_quote: str | None

    @property
    def median(self) -> float:
        return statistics.median(self.values)


@dataclass(frozen=True)
class Figure:
    name: str
    title: str
    axis: str
    suffix: str
    bars: tuple[Bar, ...]


def load(path: Path = DATA) -> list[Figure]:
    """The figures of ``path`` (``ValueError`` on a bar without values)."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    figures = []
    for raw in data["figure"]:
        bars = []
        for bar in raw["bar"]:
            if not bar["values"]:
                raise ValueError(f"figure {raw['name']!r}, bar {bar['label']!r} has no values")
            bars.append(
                Bar(
                    label=bar["label"],
                    row=bar["row"],
                    values=tuple(float(v) for v in bar["values"]),
                    target=float(bar["target"]) if "target" in bar else None,
                    target_quote=bar.get("target_quote"),
                )
            )
        figures.append(Figure(raw["name"], raw["title"], raw["axis"], raw["suffix"], tuple(bars)))
    return figures


def _ticks(top: float) -> list[float]:
    """Round tick values from 0 to at least ``top``: 4 to 8 of them."""
    raw = top / 5
    power = 10 ** math.floor(math.log10(raw))
    step = next(s * power for s in (1, 2, 2.5, 5, 10) if s * power >= raw)
    return [i * step for i in range(math.ceil(top / step) + 1)]


def _number(value: float) -> str:
    return f"{value:.3g}"


def _measured(value: float) -> str:
    """A measured value as RESULTS.md writes it: two decimals below 10 (``1.00``)."""
    return f"{value:.2f}" if value < 10 else f"{value:.3g}"


def render(figure: Figure) -> str:
    """One figure as an SVG document."""
    largest = max(max(max(b.values), b.target or 0.0) for b in figure.bars)
    ticks = _ticks(largest * 1.05)
    span = ticks[-1]
    plot = WIDTH - LABEL_WIDTH - 170  # room on the right for the value text
    height = TOP + ROW * len(figure.bars) + BOTTOM

    def x(value: float) -> float:
        return round(LABEL_WIDTH + plot * value / span, 1)

    parts = [
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{WIDTH}' height='{height}' "
        f"viewBox='0 0 {WIDTH} {height}' {FONT} font-size='12'>",
        f"<title>{escape(figure.title)}</title>",
        f"<rect width='{WIDTH}' height='{height}' fill='white'/>",
        f"<text x='12' y='22' font-size='14' font-weight='bold'>{escape(figure.title)}</text>",
        "<text x='12' y='40' fill='#555'>bars: median of the runs RESULTS.md records; "
        "dots: each run; dashed: the target</text>",
    ]
    bottom = TOP + ROW * len(figure.bars)
    for tick in ticks:
        parts.append(
            f"<line x1='{x(tick)}' y1='{TOP - 4}' x2='{x(tick)}' y2='{bottom}' stroke='#ddd'/>"
        )
        parts.append(
            f"<text x='{x(tick)}' y='{bottom + 16}' text-anchor='middle' fill='#333'>"
            f"{_number(tick)}</text>"
        )
    parts.append(
        f"<text x='{LABEL_WIDTH + plot / 2}' y='{bottom + 36}' text-anchor='middle' "
        f"fill='#333'>{escape(figure.axis)}</text>"
    )
    for index, bar in enumerate(figure.bars):
        top = TOP + ROW * index
        middle = top + ROW / 2
        parts.append(
            f"<text x='{LABEL_WIDTH - 8}' y='{middle + 4}' text-anchor='end'>"
            f"{escape(bar.label)}</text>"
        )
        length = round(x(bar.median) - LABEL_WIDTH, 1)
        parts.append(
            f"<rect x='{LABEL_WIDTH}' y='{top + 7}' width='{length}' "
            f"height='{ROW - 14}' fill='#4c78a8'/>"
        )
        if len(bar.values) > 1:
            for value in bar.values:
                parts.append(
                    f"<circle cx='{x(value)}' cy='{middle}' r='3' fill='white' stroke='#222'/>"
                )
        if bar.target is not None:
            parts.append(
                f"<line x1='{x(bar.target)}' y1='{top + 2}' x2='{x(bar.target)}' "
                f"y2='{top + ROW - 2}' stroke='#d62728' stroke-width='2' stroke-dasharray='4 3'/>"
            )
        shown = f"{_measured(bar.median)}{figure.suffix}"
        if len(bar.values) > 1:
            shown += f" (runs {_measured(min(bar.values))}-{_measured(max(bar.values))})"
        right = max(x(max(bar.values)), x(bar.target or 0.0))
        parts.append(f"<text x='{right + 6}' y='{middle + 4}' fill='#222'>{escape(shown)}</text>")
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def path_of(figure: Figure, out: Path = OUT) -> Path:
    return out / f"bench-{figure.name}.svg"


def main(out: Path = OUT) -> None:
    for figure in load():
        path_of(figure, out).write_text(render(figure), encoding="utf-8")
        print(f"wrote {path_of(figure, out)}")


if __name__ == "__main__":
    main()
