"""DynaDesk desktop app (PySide6).

Widgets never touch SQLite or Docker: each page takes service objects from
:mod:`dynadesk.gui.services` and reacts to their Qt signals. Long work runs on a
``QThreadPool`` worker (:mod:`dynadesk.gui.workers`). Torch is imported only when
a model is loaded, so the window appears fast.
"""
