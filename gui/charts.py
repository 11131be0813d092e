"""Small charts drawn with QPainter (no matplotlib: fast start, crisp at any DPI).

* :class:`BarChart` — horizontal labelled bars (label distributions, probabilities, MER).
* :class:`RadarChart` — several series over shared axes on 0–1 (model comparison); :func:`axis_fractions`
  puts an axis on a log scale where its values span orders of magnitude.
* :class:`RankRangeChart` — each model's rank and the best–worst range it takes as weights vary.
* :class:`BreakdownChart` — stacked bars: each metric's contribution to a model's score, against a named reference
  row where one is given (the baseline or the lowest-ranked row), so what every row shares does not fill it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from PySide6.QtCore import QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFontMetrics, QPainter, QPainterPath, QPalette, QPen, QPolygonF
from PySide6.QtWidgets import QSizePolicy, QWidget

PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
           "#bab0ac"]


# Labels whose meaning has a conventional colour: good/agreeing green, bad/contradicting red, neutral grey.
LABEL_COLORS = {"positive": "#59a14f", "negative": "#e15759", "neutral": "#9e9e9e", "entailment": "#59a14f",
                "contradiction": "#e15759", "not-hateful": "#59a14f", "hateful": "#e15759"}


def color(i: int) -> QColor:
    return QColor(PALETTE[i % len(PALETTE)])


class BarChart(QWidget):
    """Horizontal bars: one row per ``(label, value)``; values shown with ``fmt``."""

    def __init__(self, parent: QWidget | None = None, fmt: str = "{:g}", max_value: float | None = None,
                 highlight_max: bool = False):
        super().__init__(parent)
        self._rows: list[tuple[str, float]] = []
        self._fmt = fmt
        self._max = max_value
        self._highlight = highlight_max
        self._empty_text = "no data"
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self.setMinimumHeight(40)

    def set_data(self, rows: Sequence[tuple[str, float]], empty_text: str = "no data") -> None:
        self._rows = [(str(k), float(v)) for k, v in rows]
        self._empty_text = empty_text
        self.updateGeometry()
        self.update()

    def rows(self) -> list[tuple[str, float]]:
        return list(self._rows)

    def bar_color(self, i: int) -> QColor:
        """Row ``i``'s colour: the highlight when asked for, else the label's conventional colour, else the palette."""
        label, value = self._rows[i]
        if self._highlight:
            top = max(v for _, v in self._rows)
            return QColor("#2e7d32") if value == top and value > 0 else QColor("#90a4ae")
        return QColor(LABEL_COLORS[label]) if label in LABEL_COLORS else color(i)

    def sizeHint(self) -> QSize:
        h = QFontMetrics(self.font()).height() + 8
        return QSize(320, max(40, h * max(1, len(self._rows)) + 8))

    def paintEvent(self, _event: object) -> None:
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        fm = QFontMetrics(self.font())
        pal = self.palette()
        text_color = pal.windowText().color()
        if not self._rows:
            p.setPen(pal.placeholderText().color())
            p.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, self._empty_text)
            return
        label_w = min(self.width() // 3, max(fm.horizontalAdvance(k) for k, _ in self._rows) + 8)
        value_w = max(fm.horizontalAdvance(self._fmt.format(v)) for _, v in self._rows) + 8
        top = max((v for _, v in self._rows), default=0.0)
        scale_max = self._max if self._max is not None else (top or 1.0)
        row_h = max(fm.height() + 6, (self.height() - 4) / len(self._rows))
        bar_h = min(row_h - 4, fm.height() + 2)
        x0 = label_w + 4
        avail = max(10, self.width() - x0 - value_w - 4)
        for i, (label, value) in enumerate(self._rows):
            y = 2 + i * row_h
            rect = QRectF(0, y, label_w, row_h)
            p.setPen(text_color)
            p.drawText(rect, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight,
                       fm.elidedText(label, Qt.TextElideMode.ElideRight, label_w - 4))
            w = avail * max(0.0, min(1.0, value / scale_max)) if scale_max else 0
            p.fillRect(QRectF(x0, y + (row_h - bar_h) / 2, w, bar_h), self.bar_color(i))
            p.setPen(text_color)
            p.drawText(QRectF(x0 + w + 4, y, value_w, row_h), Qt.AlignmentFlag.AlignVCenter, self._fmt.format(value))


class ProbabilityBars(BarChart):
    """A model's label probabilities as percentages, highest first and highlighted: how the Models page's "Try it"
    and the Annotate page's last example both show a prediction."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent, fmt="{:.1%}", max_value=1.0, highlight_max=True)

    def show_output(self, output: Mapping[str, Any]) -> None:
        """The ``probs`` of a model's output (none for an output without them, such as a span answer)."""
        self.set_data(sorted(output.get("probs", {}).items(), key=lambda kv: -kv[1]))


LOG_SPAN = 100.0  # an axis whose largest value is this many times its smallest is drawn on a log scale


def axis_fractions(values: Sequence[float]) -> tuple[list[float], str]:
    """Where each value sits on its axis (0–1, the largest at 1) and the axis scale, ``"linear"`` or ``"log"``.

    Linear axes start at zero (or the most negative value), so small differences stay small; an axis whose
    non-zero magnitudes span ``LOG_SPAN`` or more is logarithmic in magnitude (sign kept, zero at zero; the
    smallest magnitude one decade out), so a 324k examples/s row does not flatten every other model to the centre.
    Values measured against a reference row (issue 44) have that row at zero and may be negative.
    """
    if not values:
        return [], "linear"
    mags = [abs(v) for v in values if v != 0]
    scale = "log" if mags and max(mags) / min(mags) >= LOG_SPAN else "linear"
    if scale == "log":
        least = min(mags)
        values = [0.0 if v == 0 else math.copysign(math.log10(abs(v) / least) + 1.0, v) for v in values]
    lo, hi = min(values), max(values)
    base = min(0.0, lo)
    return [1.0 if hi <= base else (v - base) / (hi - base) for v in values], scale


class RadarChart(QWidget):
    """Series (name -> values on 0..1, one per axis) drawn over shared axes."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._axes: list[str] = []
        self._series: list[tuple[str, list[float]]] = []
        self._scales: dict[str, str] = {}
        self._reference: str | None = None
        self.setMinimumSize(260, 220)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)

    def set_data(self, axes: Sequence[str], series: Sequence[tuple[str, Sequence[float]]],
                 scales: dict[str, str] | None = None, reference: str | None = None) -> None:
        """``scales``: axis -> ``"log"`` for axes drawn logarithmically (labelled so); ``reference``: the row the
        values are measured against, named under the chart (None: absolute values)."""
        self._axes = list(axes)
        self._series = [(n, [max(0.0, min(1.0, float(v))) for v in vals]) for n, vals in series]
        self._scales = dict(scales or {})
        self._reference = reference
        self.update()

    def reference(self) -> str | None:
        """The row the axes are measured against, as named on the chart."""
        return self._reference

    def scales(self) -> dict[str, str]:
        return {a: self._scales.get(a, "linear") for a in self._axes}

    def series_names(self) -> list[str]:
        return [n for n, _ in self._series]

    def series(self) -> dict[str, dict[str, float]]:
        """``{series: {axis: value on 0..1}}`` as drawn."""
        return {n: dict(zip(self._axes, vals)) for n, vals in self._series}

    def paintEvent(self, _event: object) -> None:
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        pal = self.palette()
        fm = QFontMetrics(self.font())
        n = len(self._axes)
        if n < 3 or not self._series:
            p.setPen(pal.placeholderText().color())
            p.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, "select models to compare")
            return
        legend_h = fm.height() + 6
        cx = self.width() / 2
        cy = (self.height() - legend_h) / 2 + legend_h
        r = max(20.0, min(self.width() / 2 - 70, (self.height() - legend_h) / 2 - fm.height() - 6))

        def point(i: int, frac: float) -> QPointF:
            ang = -math.pi / 2 + 2 * math.pi * i / n
            return QPointF(cx + r * frac * math.cos(ang), cy + r * frac * math.sin(ang))

        grid = QPen(pal.mid().color(), 1)
        p.setPen(grid)
        for ring in (0.25, 0.5, 0.75, 1.0):
            p.drawPolygon(QPolygonF([point(i, ring) for i in range(n)]))
        p.setPen(pal.windowText().color())
        for i, axis in enumerate(self._axes):
            name = f"{axis} (log)" if self._scales.get(axis) == "log" else axis
            p.setPen(grid)
            p.drawLine(QPointF(cx, cy), point(i, 1.0))
            lp = point(i, 1.12)
            w = fm.horizontalAdvance(name)
            p.setPen(pal.windowText().color())
            p.drawText(QRectF(lp.x() - w / 2 - 2, lp.y() - fm.height() / 2, w + 4, fm.height()),
                       Qt.AlignmentFlag.AlignCenter, name)
        x = 4
        for k, (name, vals) in enumerate(self._series):
            c = color(k)
            path = QPainterPath()
            pts = [point(i, vals[i] if i < len(vals) else 0.0) for i in range(n)]
            path.addPolygon(QPolygonF(pts + [pts[0]]))
            fill = QColor(c)
            fill.setAlpha(50)
            p.fillPath(path, fill)
            p.setPen(QPen(c, 2))
            p.drawPath(path)
            p.fillRect(QRectF(x, 4, 10, 10), c)
            p.setPen(pal.windowText().color())
            p.drawText(QPointF(x + 14, 4 + fm.ascent() - 1), name)
            x += 24 + fm.horizontalAdvance(name)
        if self._reference:
            p.setPen(pal.placeholderText().color())
            p.drawText(QPointF(4, self.height() - fm.descent() - 2), f"against {self._reference}")


class _ModelRowsChart(QWidget):
    """A chart drawn as one row per model: shared sizing and the empty board's placeholder."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._rows: list[Any] = []
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self.setMinimumHeight(60)

    def sizeHint(self) -> QSize:
        h = QFontMetrics(self.font()).height() + 8
        return QSize(320, h * (len(self._rows) + 1) + 8)

    def begin_paint(self) -> QPainter | None:
        """An antialiased painter, or ``None`` once the placeholder of an empty board is drawn."""
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        if self._rows:
            return p
        p.setPen(self.palette().placeholderText().color())
        p.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, "no models on the board")
        return None

    def paintEvent(self, _event: object) -> None:
        """The rows as the chart draws them (:meth:`draw`, with the widget's font metrics and palette), or the
        placeholder of an empty board: every model-rows chart paints the same way up to its own drawing."""
        p = self.begin_paint()
        if p is not None:
            self.draw(p, QFontMetrics(self.font()), self.palette())

    def draw(self, p: QPainter, fm: QFontMetrics, pal: QPalette) -> None:
        """Draw ``self._rows`` (never empty here) with ``p``."""
        raise NotImplementedError(f"{type(self).__name__} draws nothing: define draw()")


class RankRangeChart(_ModelRowsChart):
    """One row per model: a bar over the ranks it takes as weights vary, a dot at its current rank
    (rank 1, the best, on the left)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._rows: list[tuple[str, int, int, int]] = []
        self._n = 0

    def set_data(self, rows: Sequence[tuple[str, int, int, int]], n_ranks: int) -> None:
        """``rows``: ``(model, rank, best rank, worst rank)``; ``n_ranks``: the ranks the axis spans."""
        self._rows = [(str(m), int(r), int(lo), int(hi)) for m, r, lo, hi in rows]
        self._n = max(1, n_ranks)
        self.updateGeometry()
        self.update()

    def ranges(self) -> dict[str, tuple[int, int, int]]:
        """``{model: (rank, best, worst)}`` as drawn."""
        return {m: (r, lo, hi) for m, r, lo, hi in self._rows}

    def draw(self, p: QPainter, fm: QFontMetrics, pal: QPalette) -> None:
        label_w = min(self.width() // 3, max(fm.horizontalAdvance(m) for m, *_ in self._rows) + 8)
        x0, x1 = label_w + 12, self.width() - 16
        row_h = max(fm.height() + 6, (self.height() - fm.height() - 10) / len(self._rows))

        def x(rank: float) -> float:
            return x0 if self._n == 1 else x0 + (x1 - x0) * (rank - 1) / (self._n - 1)

        axis_y = 4 + fm.ascent()
        p.setPen(pal.placeholderText().color())
        for rank in sorted({1, self._n, *(r for _, r, _, _ in self._rows)}):
            label = f"#{rank}"
            p.drawText(QPointF(x(rank) - fm.horizontalAdvance(label) / 2, axis_y), label)
        for i, (model, rank, lo, hi) in enumerate(self._rows):
            y = fm.height() + 8 + i * row_h + row_h / 2
            p.setPen(pal.windowText().color())
            p.drawText(QRectF(0, y - row_h / 2, label_w, row_h),
                       Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight,
                       fm.elidedText(model, Qt.TextElideMode.ElideRight, label_w - 4))
            c = color(i)
            p.setPen(QPen(c, 6, Qt.PenStyle.SolidLine, Qt.PenCapStyle.RoundCap))
            p.drawLine(QPointF(x(lo), y), QPointF(x(hi), y))
            p.setPen(QPen(pal.windowText().color(), 1))
            p.setBrush(pal.base())
            p.drawEllipse(QPointF(x(rank), y), 5, 5)


class BreakdownChart(_ModelRowsChart):
    """Stacked horizontal bars, one per model: each metric's contribution to its score (negative ones to the
    left of zero); the total is written after the bar."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._metrics: list[str] = []
        self._rows: list[tuple[str, list[float]]] = []
        self._reference: str | None = None

    def set_data(self, metrics: Sequence[str], rows: Sequence[tuple[str, Sequence[float]]],
                 reference: str | None = None) -> None:
        """``reference``: the row the contributions are measured against (named in the legend; None: absolute)."""
        self._metrics = list(metrics)
        self._rows = [(str(m), [float(v) for v in vals]) for m, vals in rows]
        self._reference = reference
        self.updateGeometry()
        self.update()

    def reference(self) -> str | None:
        """The row the bars are measured against, as named on the chart."""
        return self._reference

    def contributions(self) -> dict[str, dict[str, float]]:
        """``{model: {metric: contribution}}`` as drawn."""
        return {m: dict(zip(self._metrics, vals)) for m, vals in self._rows}

    def draw(self, p: QPainter, fm: QFontMetrics, pal: QPalette) -> None:
        legend_h = fm.height() + 6
        x = 4.0
        if self._reference:
            head = f"points against {self._reference}:"
            p.setPen(pal.windowText().color())
            p.drawText(QPointF(x, 4 + fm.ascent() - 1), head)
            x += 8 + fm.horizontalAdvance(head)
        for k, metric in enumerate(self._metrics):
            p.fillRect(QRectF(x, 4, 10, 10), color(k))
            p.setPen(pal.windowText().color())
            p.drawText(QPointF(x + 14, 4 + fm.ascent() - 1), metric)
            x += 24 + fm.horizontalAdvance(metric)
        label_w = min(self.width() // 4, max(fm.horizontalAdvance(m) for m, _ in self._rows) + 8)
        total_w = max(fm.horizontalAdvance(f"{sum(v):.1f}") for _, v in self._rows) + 8
        pos = max(sum(c for c in v if c > 0) for _, v in self._rows)
        neg = max(-sum(c for c in v if c < 0) for _, v in self._rows)
        span = (pos + neg) or 1.0
        avail = max(10.0, self.width() - label_w - total_w - 12)
        zero = label_w + 6 + avail * neg / span
        row_h = max(fm.height() + 6, (self.height() - legend_h - 4) / len(self._rows))
        for i, (model, vals) in enumerate(self._rows):
            y = legend_h + i * row_h
            p.setPen(pal.windowText().color())
            p.drawText(QRectF(0, y, label_w, row_h), Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight,
                       fm.elidedText(model, Qt.TextElideMode.ElideRight, label_w - 4))
            right, left = zero, zero
            bar_h = min(row_h - 4, fm.height() + 2)
            for k, v in enumerate(vals):
                w = avail * abs(v) / span
                if v >= 0:
                    p.fillRect(QRectF(right, y + (row_h - bar_h) / 2, w, bar_h), color(k))
                    right += w
                else:
                    left -= w
                    p.fillRect(QRectF(left, y + (row_h - bar_h) / 2, w, bar_h), color(k))
            p.setPen(pal.windowText().color())
            p.drawText(QRectF(right + 4, y, total_w, row_h), Qt.AlignmentFlag.AlignVCenter, f"{sum(vals):.1f}")
        p.setPen(QPen(pal.mid().color(), 1))
        p.drawLine(QPointF(zero, legend_h), QPointF(zero, legend_h + row_h * len(self._rows)))


class IntervalChart(_ModelRowsChart):
    """Error bars: one row per model and test set, the task metric's value (a dot) with its 95% bootstrap interval
    (a bar) on 0-100; a row marked "≈" is tied with the next (no test set tells them apart)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._rows: list[tuple[str, str, float, float, float, bool]] = []

    def set_data(self, rows: Sequence[tuple[str, str, float, float, float, bool]]) -> None:
        """``rows``: ``(model, dataset, value, low, high, tied with next)``."""
        self._rows = [(str(m), str(d), float(v), float(lo), float(hi), bool(t)) for m, d, v, lo, hi, t in rows]
        self.updateGeometry()
        self.update()

    def bars(self) -> dict[tuple[str, str], tuple[float, float, float]]:
        """``{(model, dataset): (value, low, high)}`` as drawn."""
        return {(m, d): (v, lo, hi) for m, d, v, lo, hi, _ in self._rows}

    def draw(self, p: QPainter, fm: QFontMetrics, pal: QPalette) -> None:
        labels = [f"{'≈ ' if t else ''}{m} · {d}" for m, d, _, _, _, t in self._rows]
        label_w = min(self.width() // 2, max(fm.horizontalAdvance(s) for s in labels) + 8)
        x0, x1 = label_w + 12, self.width() - 60
        row_h = max(fm.height() + 4, (self.height() - fm.height() - 10) / len(self._rows))

        def x(v: float) -> float:
            return x0 + (x1 - x0) * max(0.0, min(100.0, v)) / 100.0

        p.setPen(pal.placeholderText().color())
        for tick in (0, 50, 100):
            p.drawText(QPointF(x(tick) - fm.horizontalAdvance(str(tick)) / 2, 4 + fm.ascent()), str(tick))
        models = list(dict.fromkeys(m for m, *_ in self._rows))
        for i, ((model, _d, v, lo, hi, _t), label) in enumerate(zip(self._rows, labels)):
            y = fm.height() + 8 + i * row_h + row_h / 2
            p.setPen(pal.windowText().color())
            p.drawText(QRectF(0, y - row_h / 2, label_w, row_h),
                       Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight,
                       fm.elidedText(label, Qt.TextElideMode.ElideRight, label_w - 4))
            c = color(models.index(model))
            p.setPen(QPen(c, 2))
            p.drawLine(QPointF(x(lo), y), QPointF(x(hi), y))
            for end in (lo, hi):
                p.drawLine(QPointF(x(end), y - 4), QPointF(x(end), y + 4))
            p.setBrush(c)
            p.drawEllipse(QPointF(x(v), y), 3, 3)
            p.setPen(pal.windowText().color())
            p.drawText(QPointF(x1 + 6, y + fm.ascent() / 2 - 1), f"{lo:.1f}–{hi:.1f}")
