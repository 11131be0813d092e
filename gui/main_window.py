"""The main window: a sidebar of pages, a toolbar (active annotator) and a status bar
(workspace, Docker daemon, annotator, sync queue).

Pages are built the first time they are shown, so the window paints before any
page's imports (scoring, models, torch) run. A page whose library capability has
not landed shows a "not available yet" state instead.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QStackedWidget,
    QToolBar,
    QWidget,
)

from dynadesk.gui.pages.base import NotAvailable

if TYPE_CHECKING:  # importing the services pulls in the store (sqlite-utils, numpy): not before first paint
    from dynadesk.gui.services import Services


@dataclass(frozen=True)
class PageSpec:
    key: str
    title: str
    factory: str  # "module:function" taking (services) -> QWidget


PAGES: list[PageSpec] = [
    PageSpec("start", "Start", "dynadesk.gui.pages.start:make"),
    PageSpec("tasks_data", "Tasks & data", "dynadesk.gui.pages.tasks_data:make"),
    PageSpec("models", "Models", "dynadesk.gui.pages.models:make"),
    PageSpec("annotate", "Annotate", "dynadesk.gui.pages.annotate:make"),
    PageSpec("validate", "Validate", "dynadesk.gui.pages.validate:make"),
    PageSpec("rounds", "Rounds", "dynadesk.gui.pages.rounds:make"),
    PageSpec("review", "Lead's review", "dynadesk.gui.pages.review:make"),
    PageSpec("hub", "Hub", "dynadesk.gui.pages.hub:make"),
    PageSpec("train", "Train", "dynadesk.gui.pages.train:make"),
    PageSpec("evaluate", "Evaluate", "dynadesk.gui.pages.evaluate:make"),
    PageSpec("leaderboard", "Leaderboard", "dynadesk.gui.pages.leaderboard:make"),
    PageSpec("bundles", "Bundles & sync", "dynadesk.gui.pages.bundles:make"),
    PageSpec("audit", "Audit", "dynadesk.gui.pages.audit:make"),
    PageSpec("settings", "Settings", "dynadesk.gui.pages.settings_page:make"),
]


def build_page(spec: PageSpec, services: Services, parent: QWidget | None = None) -> QWidget:
    module, attr = spec.factory.split(":")
    factory: Callable[..., QWidget] = getattr(importlib.import_module(module), attr)
    return factory(services, parent=parent)


class MainWindow(QMainWindow):
    pageShown = Signal(str)

    def __init__(self, services: Services | None = None, parent: QWidget | None = None):
        """Without ``services`` the window paints its frame at once; :meth:`attach` fills it in."""
        super().__init__(parent)
        self.services: Services | None = None
        self.setWindowTitle("DynaDesk")
        self.resize(1280, 820)
        self.pages: dict[str, QWidget] = {}
        self.pages_ready = False  # every page module imported off the GUI thread (see _prefetch_pages)

        self.sidebar = QListWidget()
        self.sidebar.setFixedWidth(170)
        self.sidebar.setObjectName("sidebar")
        for i, spec in enumerate(PAGES):
            item = QListWidgetItem(spec.title)
            item.setData(Qt.ItemDataRole.UserRole, spec.key)
            if i < 9:
                item.setToolTip(f"Alt+{i + 1}")
            self.sidebar.addItem(item)
        self.stack = QStackedWidget()
        central = QWidget()
        row = QHBoxLayout(central)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(0)
        row.addWidget(self.sidebar)
        row.addWidget(self.stack, 1)
        self.setCentralWidget(central)
        self.sidebar.currentRowChanged.connect(self._on_row)
        for i in range(min(9, len(PAGES))):
            act = QAction(self)
            act.setShortcut(QKeySequence(f"Alt+{i + 1}"))
            act.triggered.connect(lambda _=False, row=i: self.sidebar.setCurrentRow(row))
            self.addAction(act)

        self._build_statusbar()
        self.loading = QLabel("Opening the workspace…")
        self.loading.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.stack.addWidget(self.loading)
        if services is not None:
            self.attach(services)

    def attach(self, services: Services) -> None:
        """Connect the services (workspace, status, annotation) and show the first page."""
        self.services = services
        self._build_toolbar()
        self._connect_status()
        services.ws.opened.connect(self._on_workspace)
        self.stack.removeWidget(self.loading)
        self.loading.deleteLater()
        if self.sidebar.currentRow() < 0:
            self.sidebar.setCurrentRow(self._first_row())
        else:
            self._on_row(self.sidebar.currentRow())
        self._prefetch_pages()

    def _first_row(self) -> int:
        """A brand-new workspace opens on the start page (issue 47), any other on Tasks & data."""
        from dynadesk.gui.services.start import is_empty

        key = "start" if is_empty(self.services.ws.store) else "tasks_data"
        return next(i for i, s in enumerate(PAGES) if s.key == key)

    def _prefetch_pages(self) -> None:
        """Import every page's module (and what it pulls in: scoring, orchestration) on a pool thread, so that
        opening a page later builds widgets only: a first import costs 50-100 ms of compiling on the GUI thread
        otherwise (issue 47: no GUI-thread work over 100 ms). ``pages_ready`` is True once they are in."""
        from dynadesk.gui.workers import Worker, start

        def job(_ctx) -> None:
            for spec in PAGES:
                try:
                    importlib.import_module(spec.factory.split(":")[0])
                except Exception:  # noqa: BLE001 - the page shows its own failure when it is opened
                    continue

        self.pages_ready = False
        worker = Worker(job)
        worker.signals.done.connect(self._pages_imported)
        start(worker)

    def _pages_imported(self) -> None:
        self.pages_ready = True

    # ------------------------------------------------------------- chrome
    def _build_toolbar(self) -> None:
        tb = QToolBar("Annotator")
        tb.setObjectName("annotatorToolbar")
        tb.setMovable(False)
        tb.addWidget(QLabel(" Annotator: "))
        self.annotator_combo = QComboBox()
        self.annotator_combo.setMinimumWidth(160)
        self.annotator_combo.setObjectName("annotatorCombo")
        tb.addWidget(self.annotator_combo)
        self.addToolBar(tb)
        ann = self.services.annotation
        add = QAction("New annotator…", self)
        add.triggered.connect(self._new_annotator)
        tb.addAction(add)
        ann.annotatorsChanged.connect(self._fill_annotators)
        ann.activeChanged.connect(self._on_active_annotator)
        self.annotator_combo.activated.connect(
            lambda i: ann.set_active(self.annotator_combo.itemData(i)) if self.annotator_combo.itemData(i) else None)
        self._fill_annotators()

    def _new_annotator(self) -> None:
        from PySide6.QtWidgets import QInputDialog, QMessageBox

        from dynadesk.errors import DynaDeskError

        name, ok = QInputDialog.getText(self, "New annotator", "Name (letters, digits, _ . @ -):")
        if not ok or not name.strip():
            return
        ann = self.services.annotation
        try:
            ann.add_annotator(name.strip())
            ann.set_active(name.strip())
        except DynaDeskError as exc:
            QMessageBox.warning(self, "New annotator", str(exc))

    def _fill_annotators(self) -> None:
        ann = self.services.annotation
        self.annotator_combo.blockSignals(True)
        self.annotator_combo.clear()
        for name in ann.annotator_names():
            self.annotator_combo.addItem(name, name)
        idx = self.annotator_combo.findData(ann.active)
        self.annotator_combo.setCurrentIndex(idx)
        self.annotator_combo.blockSignals(False)
        self._on_active_annotator(ann.active or "")

    def _on_active_annotator(self, name: str) -> None:
        idx = self.annotator_combo.findData(name)
        if idx >= 0:
            self.annotator_combo.setCurrentIndex(idx)
        self.annotator_label.setText(f"Annotator: {name or '—'}")

    def _build_statusbar(self) -> None:
        sb = self.statusBar()
        self.workspace_label = QLabel()
        self.docker_label = QLabel("Docker: checking…")
        self.annotator_label = QLabel("Annotator: —")
        self.queue_label = QLabel("Sync queue: —")
        for w in (self.workspace_label, self.docker_label, self.annotator_label, self.queue_label):
            sb.addPermanentWidget(w)

    def _connect_status(self) -> None:
        self._on_workspace(str(self.services.ws.home))
        st = self.services.status
        st.dockerChecked.connect(self._on_docker)
        st.queueLength.connect(self._on_queue)
        if st.docker_ok is not None:
            self._on_docker(st.docker_ok, st.docker_detail)

    def _on_workspace(self, home: str) -> None:
        self.workspace_label.setText(f"Workspace: {home}")
        self.workspace_label.setToolTip(home)
        self.services.status.refresh_queue()
        page = self.stack.currentWidget()
        refresh = getattr(page, "refresh", None)
        if callable(refresh):
            refresh()

    def _on_docker(self, ok: bool, detail: str) -> None:
        self.docker_label.setText("Docker: ✔ answers" if ok else "Docker: ✘ not answering")
        self.docker_label.setStyleSheet("color:#1b5e20" if ok else "color:#b71c1c")
        self.docker_label.setToolTip(detail)

    def _on_queue(self, n: int) -> None:
        self.queue_label.setText("Sync queue: n/a" if n < 0 else f"Sync queue: {n}")
        self.queue_label.setToolTip("bundles area not available yet" if n < 0 else f"{n} bundle(s) waiting to be sent")

    # -------------------------------------------------------------- pages
    def _on_row(self, row: int) -> None:
        if row < 0 or self.services is None:
            return
        spec = PAGES[row]
        self.show_page(spec.key)

    def page(self, key: str) -> QWidget:
        """The page widget for ``key``, built on first use."""
        if key not in self.pages:
            spec = next(s for s in PAGES if s.key == key)
            try:
                widget = build_page(spec, self.services, self.stack)  # type: ignore[arg-type]
            except Exception as exc:  # noqa: BLE001 - a broken page must not take the window down; say why
                import traceback

                widget = NotAvailable(spec.title, f"This page failed to load: {exc!r}\n\n"
                                                  f"{traceback.format_exc(limit=4)}")
            msg = getattr(widget, "statusMessage", None)
            if msg is not None:
                msg.connect(lambda text: self.statusBar().showMessage(text, 5000))
            go = getattr(widget, "goTo", None)
            if go is not None:
                go.connect(self.show_page)
            self.pages[key] = widget
            self.stack.addWidget(widget)
        return self.pages[key]

    def show_page(self, key: str) -> QWidget:
        widget = self.page(key)
        row = next(i for i, s in enumerate(PAGES) if s.key == key)
        if self.sidebar.currentRow() != row:
            self.sidebar.setCurrentRow(row)  # re-enters via _on_row
            return widget
        self.stack.setCurrentWidget(widget)
        refresh = getattr(widget, "refresh", None)
        if callable(refresh) and getattr(widget, "_shown_once", False):
            refresh()
        widget._shown_once = True  # type: ignore[attr-defined]
        self.pageShown.emit(key)
        return widget

    def closeEvent(self, event) -> None:
        if self.services is None:
            super().closeEvent(event)
            return
        for widget in self.pages.values():
            closer = getattr(widget, "shutdown", None)
            if callable(closer):
                closer()
        super().closeEvent(event)
