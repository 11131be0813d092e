"""The annotation tests' fixtures."""

from __future__ import annotations

import pytest
from support.annotation import build_tiny_models


@pytest.fixture(scope="session")
def models(tmp_path_factory):
    """Tiny random BERT folders (sentiment x2, NLI, QA), built once a session: tests register them, never edit them."""
    return build_tiny_models(tmp_path_factory.mktemp("tiny"))
