"""The campaign engine's tables have one writer: emulator/platform/campaign_tables.py (the
engine, the fixture seeder and the exporter call it). tests/platform/test_sole_writer.py
holds the same rule for the platform's own tables."""

from __future__ import annotations

import re
from pathlib import Path

import emulator

PACKAGE = Path(emulator.__file__).parent
OWNER = PACKAGE / "platform" / "campaign_tables.py"
TABLES = (
    "campaigns",
    "conversations",
    "messages",
    "events",
    "simulation_campaigns",
    "simulation_members",
)
WRITE = re.compile(
    r"\b(?:INSERT(?:\s+OR\s+\w+)?\s+INTO|REPLACE\s+INTO|UPDATE(?:\s+OR\s+\w+)?|DELETE\s+FROM)"
    r"\s+[\"`\[]?(" + "|".join(TABLES) + r")\b",
    re.IGNORECASE,
)


def writers(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Table -> the modules (relative paths) holding a write statement of it."""
    found: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        for match in WRITE.finditer(path.read_text(encoding="utf-8")):
            found.setdefault(match.group(1).lower(), set()).add(str(path.relative_to(root)))
    return found


def test_each_engine_table_is_written_by_campaign_tables_only() -> None:
    owner = str(OWNER.relative_to(PACKAGE))
    assert writers() == {table: {owner} for table in TABLES}


def test_the_check_sees_a_second_writer(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text('SQL = "UPDATE messages SET crmActivityId = ?"\n')
    (tmp_path / "b.py").write_text("X = 'insert or replace into \"events\"(type) VALUES (?)'\n")
    assert writers(tmp_path) == {"messages": {"a.py"}, "events": {"b.py"}}
