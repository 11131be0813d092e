"""Maps the top-level folders to subpackages: gui/ -> dynadesk.gui, evaluator/ ->
dynadesk.evaluator, sync/ -> dynadesk.sync, resources/ -> dynadesk.resources,
so nothing generic like ``gui`` lands in site-packages. Metadata is in pyproject.toml.
"""

from setuptools import find_packages, setup

MAPPED = {"dynadesk.gui": "gui", "dynadesk.evaluator": "evaluator", "dynadesk.sync": "sync",
          "dynadesk.resources": "resources"}

packages = ["dynadesk"] + [f"dynadesk.{p}" for p in find_packages("dynadesk")]
for name, folder in MAPPED.items():
    packages += [name] + [f"{name}.{p}" for p in find_packages(folder)]

setup(packages=packages, package_dir={"dynadesk": "dynadesk", **MAPPED})
