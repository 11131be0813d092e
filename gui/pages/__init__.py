"""One module per page of the main window; see :mod:`dynadesk.gui.main_window` for the list."""
