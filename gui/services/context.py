"""Builds the set of services the window and its pages share."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dynadesk.gui.services.data import DataService
from dynadesk.gui.services.settings import AppSettings
from dynadesk.gui.services.status import StatusService
from dynadesk.gui.services.workspace import WorkspaceService


@dataclass
class Services:
    ws: WorkspaceService
    settings: AppSettings
    data: DataService
    status: StatusService
    extra: dict[str, Any] = field(default_factory=dict)  # area services, by name, some made on first use

    def close(self) -> None:
        self.status.stop()
        for svc in self.extra.values():
            closer = getattr(svc, "close", None)
            if callable(closer):
                closer()
        self.ws.close()


def build_services(home: str | Path | None = None, settings_path: str | Path | None = None) -> Services:
    settings = AppSettings(settings_path)
    home = home or settings.get("workspace") or None
    ws = WorkspaceService(home)
    services = Services(ws=ws, settings=settings, data=DataService(ws), status=StatusService(ws))
    _add_area_services(services)
    return services


def _add_area_services(services: Services) -> None:
    """The annotation, bundles and audit services (imported here so the window module stays light)."""
    from dynadesk.gui.services.annotation import AnnotationService
    from dynadesk.gui.services.audit import AuditService
    from dynadesk.gui.services.bundles import BundlesService
    from dynadesk.gui.services.training import TrainingService

    services.extra["annotation"] = AnnotationService(services.ws)
    services.extra["training"] = TrainingService(services.ws)
    bundles = services.extra["bundles"] = BundlesService(services.ws)
    bundles.queueChanged.connect(services.status.refresh_queue)
    services.extra["audit"] = AuditService(services.ws)
