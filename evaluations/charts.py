"""The reliability chart of voters' calibration, drawn by the server as SVG.

For each voter, a point per confidence bin holding votes: the bin's mean confidence
across, the share of its votes that were right up; the diagonal is perfect calibration
(a voter right 70 % of the times it says 70). Nothing is fetched from elsewhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

SIZE, PAD, LEFT = 360, 44, 64
COLOURS = ("#2563eb", "#dc2626", "#16a34a", "#d97706", "#7c3aed", "#0891b2")


def reliability_svg(voters: Sequence[dict[str, Any]], *, title: str = "") -> str:
    """Return the SVG of the reliability of ``voters`` (``evaluations.selectors.calibration``)."""
    plot = SIZE - PAD - LEFT
    width = LEFT + plot + 230
    height = max(PAD + plot + 48, PAD + 18 * len(voters) + 28)

    def x(confidence: float) -> float:
        return LEFT + confidence / 100 * plot

    def y(share: float) -> float:
        return PAD + (1 - share) * plot

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" font-family="sans-serif" '
        f'font-size="12"><title>{escape(title or "Reliability by voter")}</title>',
        f'<rect x="{LEFT}" y="{PAD}" width="{plot}" height="{plot}" fill="#fff" stroke="#e5e7eb"/>',
        f'<line x1="{x(0)}" y1="{y(0)}" x2="{x(100)}" y2="{y(1)}" stroke="#9ca3af" '
        'stroke-dasharray="4 4"/>',
    ]
    for tick in range(0, 101, 20):
        parts.append(
            f'<text x="{x(tick):.1f}" y="{PAD + plot + 16}" text-anchor="middle" '
            f'fill="#6b7280">{tick}</text>'
            f'<text x="{LEFT - 6}" y="{y(tick / 100) + 4:.1f}" text-anchor="end" '
            f'fill="#6b7280">{tick}%</text>'
        )
    parts.append(
        f'<text x="{LEFT + plot / 2}" y="{PAD + plot + 34}" text-anchor="middle">confidence</text>'
        f'<text x="14" y="{PAD + plot / 2}" transform="rotate(-90 14 {PAD + plot / 2})" '
        'text-anchor="middle">share right</text>'
    )
    for index, voter in enumerate(voters):
        colour = COLOURS[index % len(COLOURS)]
        points = [
            (x(b["mean_confidence"]), y(b["share_right"]), b["count"])
            for b in voter["reliability"]
            if b["count"]
        ]
        if len(points) > 1:
            path = " ".join(f"{px:.1f},{py:.1f}" for px, py, _ in points)
            parts.append(
                f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{path}"/>'
            )
        for px, py, count in points:
            parts.append(
                f'<circle cx="{px:.1f}" cy="{py:.1f}" r="{min(3 + count**0.5, 9):.1f}" '
                f'fill="{colour}" fill-opacity=".75"><title>{count} votes</title></circle>'
            )
        ly = PAD + 14 + 18 * index
        name = f"{voter['ai_model_name']} as {voter['personality']}"
        parts.append(
            f'<rect x="{LEFT + plot + 16}" y="{ly - 9}" width="10" height="10" fill="{colour}"/>'
            f'<text x="{LEFT + plot + 32}" y="{ly}">{escape(name)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)
