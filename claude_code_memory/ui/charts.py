"""Charts drawn on the server as inline SVG (no JavaScript, readable by screen readers)."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape


@dataclass(frozen=True)
class Point:
    label: str
    value: int


def bar_chart(points: list[Point], *, title: str, width: int = 720, height: int = 180) -> str:
    """A bar chart as an SVG string, with a <title> and one <title> per bar for hover and AT.

    The SVG scales to its container (viewBox), so it reads the same at 390 and 1280 px.
    """
    top, bottom, left, right = 12, 24, 32, 8
    plot_w, plot_h = width - left - right, height - top - bottom
    peak = max((p.value for p in points), default=0)
    scale = plot_h / peak if peak else 0.0
    slot = plot_w / max(len(points), 1)
    bar_w = max(slot * 0.7, 1.0)
    parts = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" aria-labelledby="chart-title" '
        f'preserveAspectRatio="none" xmlns="http://www.w3.org/2000/svg">',
        f'<title id="chart-title">{escape(title)}</title>',
        f'<line x1="{left}" y1="{top + plot_h}" x2="{width - right}" y2="{top + plot_h}" class="axis"/>',
        f'<text x="{left - 4}" y="{top + 8}" class="tick" text-anchor="end">{peak}</text>',
        f'<text x="{left - 4}" y="{top + plot_h}" class="tick" text-anchor="end">0</text>',
    ]
    for index, point in enumerate(points):
        bar_h = point.value * scale
        x = left + index * slot + (slot - bar_w) / 2
        y = top + plot_h - bar_h
        parts.append(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar_w:.1f}" height="{bar_h:.1f}" class="bar">'
            f"<title>{escape(point.label)}: {point.value}</title></rect>"
        )
    if points:
        for index in {0, len(points) // 2, len(points) - 1}:
            x = left + index * slot + slot / 2
            parts.append(
                f'<text x="{x:.1f}" y="{height - 6}" class="tick" text-anchor="middle">'
                f"{escape(points[index].label)}</text>"
            )
    parts.append("</svg>")
    return "".join(parts)
