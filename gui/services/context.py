"""Builds the set of services the window and its pages share: one typed attribute per service."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from dynadesk.gui.services.data import DataService
from dynadesk.gui.services.settings import AppSettings
from dynadesk.gui.services.status import StatusService
from dynadesk.gui.services.workspace import WorkspaceService

if TYPE_CHECKING:
    from dynadesk.gui.services.annotation import AnnotationService
    from dynadesk.gui.services.audit import AuditService
    from dynadesk.gui.services.bundles import BundlesService
    from dynadesk.gui.services.evaluation import EvaluationService
    from dynadesk.gui.services.hub import HubService
    from dynadesk.gui.services.leaderboard import LeaderboardService
    from dynadesk.gui.services.models import ModelsService
    from dynadesk.gui.services.training import TrainingService

# made on first use (their pages are opened later, if at all): closed only when they were made
LAZY = ("evaluation", "models", "leaderboard", "hub")


@dataclass
class Services:
    """What pages are handed: typed services, never looked up by a string key."""

    ws: WorkspaceService
    settings: AppSettings
    data: DataService
    status: StatusService
    annotation: AnnotationService
    training: TrainingService
    bundles: BundlesService
    audit: AuditService

    @cached_property
    def evaluation(self) -> EvaluationService:
        from dynadesk.gui.services.evaluation import EvaluationService

        return EvaluationService(self.ws)

    @cached_property
    def models(self) -> ModelsService:
        from dynadesk.gui.services.models import ModelsService

        return ModelsService(self.ws)

    @cached_property
    def leaderboard(self) -> LeaderboardService:
        from dynadesk.gui.services.leaderboard import LeaderboardService

        return LeaderboardService(self.ws)

    @cached_property
    def hub(self) -> HubService:
        from dynadesk.gui.services.hub import HubService

        return HubService(self.ws)

    def close(self) -> None:
        self.status.stop()
        made = [self.annotation, self.training, self.bundles, self.audit] + \
            [self.__dict__[name] for name in LAZY if name in self.__dict__]
        for svc in made:
            closer = getattr(svc, "close", None)
            if callable(closer):
                closer()
        self.ws.close()


def build_services(home: str | Path | None = None, settings_path: str | Path | None = None) -> Services:
    # the area services are imported here, so the window module stays light
    from dynadesk.gui.services.annotation import AnnotationService
    from dynadesk.gui.services.audit import AuditService
    from dynadesk.gui.services.bundles import BundlesService
    from dynadesk.gui.services.training import TrainingService

    settings = AppSettings(settings_path)
    home = home or settings.get("workspace") or None
    ws = WorkspaceService(home)
    bundles = BundlesService(ws)
    services = Services(ws=ws, settings=settings, data=DataService(ws), status=StatusService(ws),
                        annotation=AnnotationService(ws), training=TrainingService(ws), bundles=bundles,
                        audit=AuditService(ws))
    bundles.queueChanged.connect(services.status.refresh_queue)
    return services
