"""Each platform table has exactly one writing package: emulator/platform/ (issue 12)."""

from __future__ import annotations

import re
from pathlib import Path

import emulator

PACKAGE = Path(emulator.__file__).parent
OWNER = PACKAGE / "platform"
TABLES = ("contacts", "companies", "platform_tasks", "crm_connection", "campaign_members")
# A write statement naming one of the tables, in any spelling SQLite accepts.
WRITE = re.compile(
    r"\b(?:INSERT(?:\s+OR\s+\w+)?\s+INTO|REPLACE\s+INTO|UPDATE(?:\s+OR\s+\w+)?|DELETE\s+FROM)"
    r"\s+[\"`\[]?(" + "|".join(TABLES) + r")\b",
    re.IGNORECASE,
)


def writers_outside_platform(root: Path = PACKAGE) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        if OWNER in path.parents:
            continue
        text = path.read_text(encoding="utf-8")
        for match in WRITE.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found.append(f"{path.relative_to(root.parent)}:{line}: {match.group(0)}")
    return found


def test_only_the_platform_package_writes_platform_tables() -> None:
    assert writers_outside_platform() == []


def test_the_platform_package_writes_every_platform_table() -> None:
    text = "\n".join(p.read_text(encoding="utf-8") for p in OWNER.rglob("*.py"))
    assert {m.group(1).lower() for m in WRITE.finditer(text)} == set(TABLES)


def test_the_check_finds_a_writer_outside_the_platform(tmp_path: Path) -> None:
    stray = tmp_path / "emulator" / "elsewhere.py"
    stray.parent.mkdir()
    (stray.parent / "platform").mkdir()
    stray.write_text(
        'SQL = "UPDATE contacts SET updatedAt = ?"\n'
        'OTHER = "insert or ignore into platform_tasks(id) VALUES (?)"\n'
        'MEMBERS = "UPDATE campaign_members SET nextActionAt = ? WHERE campaignId = ?"\n'
        'FINE = "UPDATE messages SET crmActivityId = ?"\n',
        encoding="utf-8",
    )
    found = writers_outside_platform(stray.parent)
    assert [f.split(": ", 1)[1] for f in found] == [
        "UPDATE contacts",
        "insert or ignore into platform_tasks",
        "UPDATE campaign_members",
    ]
