"""The app tests' fixtures."""

from __future__ import annotations

import pytest
from support.gui import make_window


@pytest.fixture
def gui(require_qt, qtbot, tmp_path):
    """The main window on a fresh workspace: ``(services, window)``. Files that need a seeded workspace define
    their own ``gui``."""
    services, window = make_window(qtbot, tmp_path)
    yield services, window
    window.close()
    services.close()
