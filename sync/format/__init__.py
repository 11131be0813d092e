"""The bundle format: envelope, canonical form, payload schema, Merkle tree, transparency log, tolerances.

It stands alone: these modules import only :mod:`dynadesk.errors`, each other, the standard
library, ``cryptography`` and ``rfc8785`` (``tests/test_sync_layers.py`` checks it), so the
client, the server and the audit all read bundles with the same code and none of them is
needed to read one.
"""
