"""DynaDesk: offline-first evaluation appliance for NLP models.

Kept deliberately light: importing ``dynadesk`` must not pull in torch, Qt,
docker or the server. Import the submodule you need.
"""

__version__ = "0.1.0"
