"""Charts drawn on the server as inline SVG (no JavaScript, readable by screen readers).

The bars stretch to the container's width; the labels are HTML text below them, so they stay
legible from 390 px to 1280 px instead of shrinking with the drawing.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape


@dataclass(frozen=True)
class Point:
    label: str
    value: int


def bar_chart(points: list[Point], *, title: str, width: int = 720, height: int = 160) -> str:
    """A bar chart as an HTML ``<figure>``: an SVG with a <title> (and one per bar, for hover
    and assistive technology), the first, middle and last labels, and the peak value."""
    top = 4
    plot_h = height - top
    peak = max((p.value for p in points), default=0)
    scale = plot_h / peak if peak else 0.0
    slot = width / max(len(points), 1)
    bar_w = max(slot * 0.7, 1.0)
    parts = [
        '<figure class="chart-figure">',
        f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" aria-labelledby="chart-title" '
        f'preserveAspectRatio="none" xmlns="http://www.w3.org/2000/svg">',
        f'<title id="chart-title">{escape(title)}</title>',
        f'<line x1="0" y1="{height}" x2="{width}" y2="{height}" class="axis"/>',
    ]
    for index, point in enumerate(points):
        bar_h = point.value * scale
        x, y = index * slot + (slot - bar_w) / 2, height - bar_h
        parts.append(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar_w:.1f}" height="{bar_h:.1f}" class="bar">'
            f"<title>{escape(point.label)}: {point.value}</title></rect>"
        )
    parts.append("</svg>")
    if points:
        marks = sorted({0, len(points) // 2, len(points) - 1})
        labels = "".join(f"<span>{escape(points[i].label)}</span>" for i in marks)
        parts.append(f'<div class="chart-axis" aria-hidden="true">{labels}</div>')
    total = sum(p.value for p in points)
    parts.append(f"<figcaption>{escape(title)}: {total} in all, at most {peak} on one day.</figcaption>")
    parts.append("</figure>")
    return "".join(parts)
