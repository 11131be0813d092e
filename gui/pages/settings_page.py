"""Factory for the Settings page (kept apart so the page module stays import-light)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtWidgets import QWidget

from dynadesk.gui.pages.settings import SettingsPage

if TYPE_CHECKING:
    from dynadesk.gui.services.context import Services


def make(services: Services, parent: QWidget | None = None) -> SettingsPage:
    return SettingsPage(services.settings, services.ws, services.bundles, parent=parent)
