"""The schema's SQL text, importable without the async store (a seeding worker needs it)."""

from __future__ import annotations

from importlib import resources


def schema_sql() -> str:
    """Every schema file of every area, in name order."""
    folder = resources.files("emulator.store") / "schema"
    files = sorted((f for f in folder.iterdir() if f.name.endswith(".sql")), key=lambda f: f.name)
    return "\n".join(f.read_text() for f in files)
