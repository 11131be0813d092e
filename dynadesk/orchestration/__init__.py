"""Running evaluations: runners (Docker sandbox, local subprocess), the offline image
build, and :func:`evaluate`, which stores a run and its results. Import the submodule
you need; nothing heavy is imported here.
"""
