"""Factory for the Settings page (kept apart so the page module stays import-light)."""

from PySide6.QtWidgets import QWidget

from dynadesk.gui.pages.settings import SettingsPage


def make(services, parent: QWidget | None = None) -> SettingsPage:
    return SettingsPage(services.settings, services.ws, services.extra["bundles"], parent=parent)
