"""Entry script frozen by PyInstaller: the desktop app (``--smoke`` for a headless self-test)."""

import sys

from dynadesk.gui.app import main

if __name__ == "__main__":
    sys.exit(main())
