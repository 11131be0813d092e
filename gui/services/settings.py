"""User preferences in ``QSettings`` with typed accessors and defaults."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QSettings, Signal

from dynadesk import defaults

DEFAULTS: dict[str, Any] = {  # the evaluation and server defaults come from the one source the CLI uses
    "workspace": "",
    "server_url": defaults.SERVER_URL,
    "annotator": "",
    "limits/timeout_s": int(defaults.TIMEOUT_S),
    "limits/memory_gib": defaults.MEMORY_GIB,
    "limits/cpus": defaults.cpus(),
    "limits/batch_size": defaults.BATCH_SIZE,
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
