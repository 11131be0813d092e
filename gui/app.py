"""Entry point of ``dynadesk-gui`` (and ``dynadesk gui``).

``--smoke`` opens the workspace and the window, loads a model, predicts once
and exits 0 (non-zero with the reason otherwise): a headless end-to-end check
for packaging. Without a display, Qt would abort, so ``QT_QPA_PLATFORM``
defaults to ``offscreen`` when neither ``DISPLAY`` nor ``WAYLAND_DISPLAY`` is set.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

T0 = time.perf_counter()


def _parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="dynadesk-gui", description="DynaDesk desktop app")
    ap.add_argument("--home", help="workspace folder (default: last used, $DYNADESK_HOME, ~/.local/share/dynadesk)")
    ap.add_argument("--settings", help="INI file for settings instead of the user's QSettings")
    ap.add_argument("--page", help="page to open first (tasks_data, models, annotate, …)")
    ap.add_argument("--smoke", action="store_true", help="open, load a model, predict once, exit")
    ap.add_argument("--model", help="model for --smoke (default: the first registered)")
    ap.add_argument("--quit-after-paint", action="store_true", help=argparse.SUPPRESS)  # used by bench/bench_gui.py
    return ap.parse_args(argv)


def ensure_platform() -> None:
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def create_window(home: str | None = None, settings: str | None = None):
    """QApplication (reused if one exists), services and the main window, all at once."""
    from dynadesk.gui.services import build_services

    app = _application()
    from dynadesk.gui.main_window import MainWindow

    services = build_services(home, settings)
    return app, services, MainWindow(services)


def _application():
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("DynaDesk")
    app.setOrganizationName("DynaDesk")
    return app


def after_first_paint(window, callback) -> None:
    """Run ``callback`` once, right after the window's first paint."""
    from PySide6.QtCore import QEvent, QObject, QTimer

    class _Watch(QObject):
        seen = False

        def eventFilter(self, obj, event):
            if event.type() == QEvent.Type.Paint and not self.seen:
                self.seen = True
                obj.removeEventFilter(self)
                QTimer.singleShot(0, callback)
            return False

    window._first_paint_watch = _Watch(window)
    window.sidebar.viewport().installEventFilter(window._first_paint_watch)


def smoke(services, model: str | None) -> int:
    """Load a model through the live predictor and predict once; print the result as JSON."""
    from dynadesk.errors import DynaDeskError
    from dynadesk.models import predict_live

    store = services.ws.store
    models = store.models.list()
    if model:
        models = [m for m in models if m.name == model]
    if not models:
        print(f"smoke: no model {'named ' + repr(model) + ' ' if model else ''}registered in {services.ws.home}; "
              "register one with 'dynadesk models add' (or 'dynadesk demo')", file=sys.stderr)
        return 3
    rec = models[0]
    task = services.data.task(rec.task)
    inputs = {}
    sample = next(iter(services.data.datasets(rec.task)), None)
    example = services.data.head(sample.name, 1)[0] if sample else {}
    for name in task.input_names:
        inputs[name] = example.get(name) or "This is a wonderful, moving film."
    try:
        t = time.perf_counter()
        result = predict_live(store, rec.name, inputs)
    except DynaDeskError as exc:
        print(f"smoke: prediction with '{rec.name}' failed: {exc}", file=sys.stderr)
        return 4
    print(json.dumps({"model": rec.name, "inputs": inputs, "prediction": result,
                      "predict_s": round(time.perf_counter() - t, 3),
                      "total_s": round(time.perf_counter() - T0, 3)}, ensure_ascii=False, default=str))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parse(sys.argv[1:] if argv is None else argv)
    ensure_platform()
    from dynadesk.errors import DynaDeskError

    app = _application()
    if args.smoke:
        try:
            _app, services, window = create_window(args.home, args.settings)
        except DynaDeskError as exc:
            print(f"dynadesk-gui: {exc}", file=sys.stderr)
            return 1
        window.show()
        app.processEvents()
        code = smoke(services, args.model)
        window.close()
        services.close()
        return code

    # Paint the window frame first, then open the workspace (sqlite-utils, numpy) and fill it in.
    from dynadesk.gui.main_window import MainWindow

    window = MainWindow()
    window.show()
    state: dict = {}

    def open_workspace() -> None:
        if args.quit_after_paint:
            print(f"first-paint-s {time.perf_counter() - T0:.4f}", flush=True)
        from dynadesk.gui.services import build_services

        try:
            services = build_services(args.home, args.settings)
        except DynaDeskError as exc:
            from PySide6.QtWidgets import QMessageBox

            QMessageBox.critical(window, "DynaDesk", f"Cannot open the workspace:\n\n{exc}")
            app.exit(1)
            return
        state["services"] = services
        window.attach(services)
        if args.page:
            window.show_page(args.page)
        services.status.start(delay_ms=800)
        if args.quit_after_paint:
            app.processEvents()
            print(f"ready-s {time.perf_counter() - T0:.4f}", flush=True)
            app.quit()

    after_first_paint(window, open_workspace)
    from dynadesk.gui.collector import GuiThreadCollector

    collector = GuiThreadCollector(app).start()  # cycles (Qt objects among them) freed on this thread only
    code = app.exec()
    if "services" in state:
        state["services"].close()
    collector.stop()
    return code


if __name__ == "__main__":
    sys.exit(main())
