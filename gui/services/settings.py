"""User preferences in ``QSettings`` with typed accessors and defaults."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QSettings, Signal

DEFAULTS: dict[str, Any] = {
    "workspace": "",
    "server_url": "http://127.0.0.1:8765",
    "annotator": "",
    "limits/timeout_s": 1800,
    "limits/memory_gib": 4.0,
    "limits/cpus": 2.0,
    "limits/batch_size": 16,
    "runner": "docker",
    "gpu": False,
}


class AppSettings(QObject):
    """Wraps ``QSettings``; ``path`` gives an INI file (tests, portable installs)."""

    changed = Signal(str)  # key

    def __init__(self, path: str | Path | None = None, parent: QObject | None = None):
        super().__init__(parent)
        if path is not None:
            self._qs = QSettings(str(path), QSettings.Format.IniFormat)
        else:
            self._qs = QSettings("DynaDesk", "DynaDesk")

    def get(self, key: str) -> Any:
        default = DEFAULTS.get(key)
        value = self._qs.value(key, default)
        if value is None:
            return default
        if isinstance(default, bool):
            return value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes")
        if isinstance(default, int):
            try:
                return int(value)  # type: ignore[call-overload]
            except (TypeError, ValueError):
                return default
        if isinstance(default, float):
            try:
                return float(value)  # type: ignore[arg-type]
            except (TypeError, ValueError):
                return default
        return str(value)

    def set(self, key: str, value: Any) -> None:
        if self.get(key) == value and self._qs.contains(key):
            return
        self._qs.setValue(key, value)
        self._qs.sync()
        self.changed.emit(key)

    def limits(self) -> dict[str, Any]:
        return {k.split("/", 1)[1]: self.get(k) for k in DEFAULTS if k.startswith("limits/")}

    @property
    def file_name(self) -> str:
        return self._qs.fileName()
