"""The LAN hub (issue 37): annotators join the lead's workspace from a browser on the local network.

``identity`` (invites, sessions, CSRF; no web stack), ``batcher`` (one micro-batching queue per model),
``service`` (what a signed-in person may do, over :mod:`dynadesk.annotation`), ``overview`` (the lead's
view), ``app`` (the FastAPI routes and the page) and ``server`` (uvicorn). Importing this package loads
no web stack: ``dynadesk hub invite`` stays light.
"""
