"""Bundled resources: task definitions, data recipes, icons."""

from pathlib import Path

RESOURCES_DIR = Path(__file__).resolve().parent
TASKS_DIR = RESOURCES_DIR / "tasks"
RECIPES_DIR = RESOURCES_DIR / "recipes"
