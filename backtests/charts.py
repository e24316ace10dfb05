"""The equity chart of a backtest report, drawn as SVG on the server.

One line per rule (the debate's thicker, on top), the equity axis on the left, dates
along the bottom, and a dashed line where the candles the simulation used change
granularity (1h to 15m on 2024-08-05). Plain text in, plain text out: no Django, no
script, nothing fetched by the browser.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from xml.sax.saxutils import escape

WIDTH, HEIGHT = 980, 380
# The right margin holds the legend: wide enough for the longest label a report gives
# ("Votes weighed by calibrated confidence"; tests/web checks it in Chromium).
LEFT, RIGHT, TOP, BOTTOM = 64, 260, 16, 40
# Colours of the rules, in report order; participants alone take the seat colours.
COLOURS = {
    "debate": "#2563eb",
    "buy_and_hold": "#111827",
    "flat": "#9ca3af",
    "round1_majority": "#d97706",
    "weighting:confidence": "#64748b",
    "weighting:calibrated": "#db2777",
    "budget_matched": "#0d9488",
}
SEAT_COLOURS = ("#22C55E", "#EF4444", "#3B82F6", "#F59E0B", "#8B5CF6", "#0EA5E9")


def _colour(key: str, seat: int) -> str:
    return COLOURS.get(key, SEAT_COLOURS[seat % len(SEAT_COLOURS)])


def _ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Return about ``count`` round values spanning ``low``..``high``."""
    span = high - low or abs(high) or 1.0
    raw = span / count
    magnitude = 10 ** len(str(int(raw))) / 10 if raw >= 1 else 1.0
    while magnitude > raw and magnitude > 1e-9:
        magnitude /= 10
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    first = (low // step) * step
    ticks, value = [], first
    while value <= high:
        if value >= low:
            ticks.append(round(value, 10))
        value += step
    return ticks


PLOT_W, PLOT_H = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
DAY_MS = 86_400_000
EMPTY = (
    f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="60" role="img">'
    '<text x="8" y="30" font-family="sans-serif" font-size="14">No equity yet.</text>'
    "</svg>"
)


def equity_svg(report: dict, *, title: str = "") -> str:
    """Return the SVG of the equity curves of every rule of ``report``."""
    rules = report.get("rules") or []
    points = [(at, value) for rule in rules for at, value in rule["equity"]]
    if not points:
        return EMPTY
    frame = _Frame.around(points)
    colours = _colours(rules)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'width="{WIDTH}" height="{HEIGHT}" role="img" font-family="sans-serif" '
        f'font-size="12"><title>{escape(title or "Equity by rule")}</title>',
        f'<rect x="{LEFT}" y="{TOP}" width="{PLOT_W}" height="{PLOT_H}" fill="#fff" '
        'stroke="#e5e7eb"/>',
        *_value_axis(frame),
        *_date_axis(frame),
        *_stretch_marks(frame, report.get("stretches", [])[1:]),
        *_curves(frame, rules, colours),
        *_legend(rules, colours),
        "</svg>",
    ]
    return "".join(parts)


@dataclass(frozen=True)
class _Frame:
    """The times and equity values the plot spans, and where each falls on it."""

    start: int
    end: int
    low: float
    high: float

    @classmethod
    def around(cls, points: list[tuple[int, float]]) -> _Frame:
        """Return the frame of ``points``, with 5 % of room above and below the values."""
        low, high = min(v for _, v in points), max(v for _, v in points)
        pad = (high - low) * 0.05 or max(abs(high) * 0.01, 1.0)
        start, end = min(at for at, _ in points), max(at for at, _ in points)
        return cls(start, end, low - pad, high + pad)

    def x(self, at: int) -> float:
        return LEFT + (at - self.start) / ((self.end - self.start) or 1) * PLOT_W

    def y(self, value: float) -> float:
        return TOP + (self.high - value) / (self.high - self.low) * PLOT_H


def _value_axis(frame: _Frame) -> list[str]:
    """Return the equity grid lines and their labels."""
    parts = []
    for tick in _ticks(frame.low, frame.high):
        ty = frame.y(tick)
        parts.append(
            f'<line x1="{LEFT}" x2="{LEFT + PLOT_W}" y1="{ty:.1f}" y2="{ty:.1f}" '
            'stroke="#f1f5f9"/>'
            f'<text x="{LEFT - 6}" y="{ty + 4:.1f}" text-anchor="end" fill="#6b7280">'
            f"{tick:,.0f}</text>"
        )
    return parts


def _date_axis(frame: _Frame) -> list[str]:
    """Return about six date ticks along the bottom, each at a midnight (UTC)."""
    days = max(1, round((frame.end - frame.start) / DAY_MS / 6))
    midnight = datetime.fromtimestamp(frame.start / 1000, tz=UTC).replace(hour=0, minute=0)
    tick_ms = int(midnight.timestamp() * 1000)
    parts = []
    while tick_ms <= frame.end:
        if tick_ms >= frame.start:
            tx = frame.x(tick_ms)
            label = datetime.fromtimestamp(tick_ms / 1000, tz=UTC).strftime("%b %d")
            parts.append(
                f'<line x1="{tx:.1f}" x2="{tx:.1f}" y1="{TOP + PLOT_H}" '
                f'y2="{TOP + PLOT_H + 4}" stroke="#9ca3af"/>'
                f'<text x="{tx:.1f}" y="{TOP + PLOT_H + 18}" text-anchor="middle" '
                f'fill="#6b7280">{label}</text>'
            )
        tick_ms += days * DAY_MS
    return parts


def _stretch_marks(frame: _Frame, stretches: list[dict]) -> list[str]:
    """Return a dashed line where each stretch of other candles begins."""
    parts = []
    for stretch in stretches:
        at = int(datetime.fromisoformat(stretch["from"].replace("Z", "+00:00")).timestamp() * 1000)
        sx = frame.x(at)
        parts.append(
            f'<line x1="{sx:.1f}" x2="{sx:.1f}" y1="{TOP}" y2="{TOP + PLOT_H}" '
            'stroke="#9ca3af" stroke-dasharray="4 4"/>'
            f'<text x="{sx + 4:.1f}" y="{TOP + 14}" fill="#6b7280">'
            f"{escape(stretch['timeframe'])} candles from here</text>"
        )
    return parts


def _colours(rules: list[dict]) -> dict[str, str]:
    """Return each rule's colour: its own, or the next seat colour for a participant."""
    colours, seat = {}, 0
    for rule in rules:
        colours[rule["key"]] = _colour(rule["key"], seat)
        seat += rule["key"].startswith("seat:")
    return colours


def _curves(frame: _Frame, rules: list[dict], colours: dict[str, str]) -> list[str]:
    """Return a line per rule, the debate's last, so it is drawn over the baselines."""
    parts = []
    for rule in sorted(rules, key=lambda rule: rule["key"] == "debate"):
        path = " ".join(f"{frame.x(at):.1f},{frame.y(value):.1f}" for at, value in rule["equity"])
        width = 2.5 if rule["key"] == "debate" else 1.4
        parts.append(
            f'<polyline fill="none" stroke="{colours[rule["key"]]}" stroke-width="{width}" '
            f'points="{path}" data-rule="{escape(rule["key"])}"/>'
        )
    return parts


def _legend(rules: list[dict], colours: dict[str, str]) -> list[str]:
    """Return each rule's colour, label and final equity, in the right margin."""
    parts = []
    for index, rule in enumerate(rules):
        legend_y = TOP + 8 + 32 * index
        final = rule["metrics"]["final_equity"]
        parts.append(
            f'<line x1="{WIDTH - RIGHT + 12}" x2="{WIDTH - RIGHT + 30}" y1="{legend_y}" '
            f'y2="{legend_y}" stroke="{colours[rule["key"]]}" stroke-width="3"/>'
            f'<text x="{WIDTH - RIGHT + 36}" y="{legend_y + 4}">{escape(rule["label"])}</text>'
            f'<text x="{WIDTH - RIGHT + 36}" y="{legend_y + 18}" fill="#6b7280">'
            f"{final:,.2f}</text>"
        )
    return parts
