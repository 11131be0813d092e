"""The version is kept once: ``dynadesk.__version__``. pyproject.toml declares it dynamic and reads that attribute,
the installed metadata carries it, and the changelog's newest released heading names it."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib

from support import REPO

import dynadesk


def test_pyproject_reads_the_version_from_the_package():
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"], "a second copy of the version in [project]"
    assert "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "dynadesk.__version__"}


def test_the_installed_metadata_and_the_package_agree():
    assert importlib.metadata.version("dynadesk") == dynadesk.__version__


def test_the_changelog_names_the_version():
    text = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    released = re.findall(r"^## \[(\d[^\]]*)\]", text, re.M)
    assert released and released[0] == dynadesk.__version__, released
    assert text.index("## [Unreleased]") < text.index(f"## [{released[0]}]")
