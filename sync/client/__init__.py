"""The offline sync client, over the board's rules and the bundle format: make signed bundles from stored runs
(``create``) and upload the queue with retries, idempotently (``upload``). Never imports the server.
"""
