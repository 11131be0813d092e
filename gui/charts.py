"""Small charts drawn with QPainter (no matplotlib: fast start, crisp at any DPI).

* :class:`BarChart` — horizontal labelled bars (label distributions, probabilities, MER).
* :class:`RadarChart` — several series over shared axes on 0–1 (model comparison).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from PySide6.QtCore import QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFontMetrics, QPainter, QPainterPath, QPen, QPolygonF
from PySide6.QtWidgets import QSizePolicy, QWidget

PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
           "#bab0ac"]


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

    def sizeHint(self) -> QSize:
        h = QFontMetrics(self.font()).height() + 8
        return QSize(320, max(40, h * max(1, len(self._rows)) + 8))

    def paintEvent(self, _event) -> None:
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
            c = color(i)
            if self._highlight and value == top and value > 0:
                c = QColor("#2e7d32")
            elif self._highlight:
                c = QColor("#90a4ae")
            p.fillRect(QRectF(x0, y + (row_h - bar_h) / 2, w, bar_h), c)
            p.setPen(text_color)
            p.drawText(QRectF(x0 + w + 4, y, value_w, row_h), Qt.AlignmentFlag.AlignVCenter, self._fmt.format(value))


class RadarChart(QWidget):
    """Series (name -> values on 0..1, one per axis) drawn over shared axes."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._axes: list[str] = []
        self._series: list[tuple[str, list[float]]] = []
        self.setMinimumSize(260, 220)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)

    def set_data(self, axes: Sequence[str], series: Sequence[tuple[str, Sequence[float]]]) -> None:
        self._axes = list(axes)
        self._series = [(n, [max(0.0, min(1.0, float(v))) for v in vals]) for n, vals in series]
        self.update()

    def series_names(self) -> list[str]:
        return [n for n, _ in self._series]

    def series(self) -> dict[str, dict[str, float]]:
        """``{series: {axis: value on 0..1}}`` as drawn."""
        return {n: dict(zip(self._axes, vals)) for n, vals in self._series}

    def paintEvent(self, _event) -> None:
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
        for i, name in enumerate(self._axes):
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
