"""Factory for the Settings page (kept apart so the page module stays import-light)."""

from dynadesk.gui.pages.settings import SettingsPage


def make(services) -> SettingsPage:
    return SettingsPage(services.settings, services.ws, services.extra.get("keys"))
