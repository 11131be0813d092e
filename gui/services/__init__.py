"""Service objects: the only path from widgets to the core library.

Each service is a small ``QObject`` that calls ``dynadesk`` functions and
announces changes with signals; pages hold a reference to the services they
need and never import ``dynadesk.store`` or Docker themselves.
"""

from dynadesk.gui.services.context import Services, build_services

__all__ = ["Services", "build_services"]
