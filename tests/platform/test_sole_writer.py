"""Every table of the schema is written from exactly one module (issue 12, extended by issue 24).

The tables come from the schema itself (the store's DDL applied to an empty database), the
writers from a scan of every module under emulator/: each SQL statement in a string literal
(docstrings and comments aside) that inserts into, replaces into, updates or deletes from a
table. A write whose table the scan cannot read (a table name computed at run time) fails
too: each statement names its table, so the owner of every row is found by reading the code.
"""

from __future__ import annotations

import ast
import functools
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import emulator
from emulator.store.ddl import schema_sql

PACKAGE = Path(emulator.__file__).parent
# The platform's state (issue 12): tables whose one writer sits in emulator/platform/.
PLATFORM_TABLES = frozenset(
    {
        "api_keys",
        "users",
        "identities",
        "saved_views",
        "contacts",
        "companies",
        "campaign_members",
        "platform_tasks",
        "crm_connection",
        "lists",
        "list_members",
        "webhooks",
        "actions_runs",
        "campaigns",
        "conversations",
        "messages",
        "events",
        "simulation_campaigns",
        "simulation_members",
        "simulation_moving",
    }
)
# A write statement and the table it writes, in any spelling SQLite accepts. "DO UPDATE SET"
# (an upsert's other half) and a trigger's "AFTER UPDATE ON t" write nothing of their own.
WRITE = re.compile(
    r"(?<![\w.])(?<!DO )(?<!AFTER )(?<!BEFORE )(?<!OF )"
    r"(?P<verb>INSERT(?:\s+OR\s+\w+)?\s+INTO|REPLACE\s+INTO|UPDATE(?:\s+OR\s+\w+)?|DELETE\s+FROM)"
    r"(?:\s+(?:(?:main|temp)\.)?[\"`\[]?(?P<table>\w+)|(?P<computed>\s*\{|\s+$))",
    re.IGNORECASE,
)
NOT_TABLES = frozenset({"on", "of", "set"})  # "UPDATE OF col ON" in a trigger's head


def schema_tables() -> frozenset[str]:
    """Every table the store creates."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.executescript(schema_sql())
        rows = conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
        return frozenset(name for (name,) in rows)
    finally:
        conn.close()


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def string_literals(source: str) -> Iterator[tuple[int, str]]:
    """(line, text) of each string literal but docstrings; an f-string's replacement fields
    read as "{}"."""
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    inside_fstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            parts = []
            for value in node.values:
                inside_fstrings.add(id(value))
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    parts.append(value.value)
                else:
                    parts.append("{}")
            yield node.lineno, "".join(parts)
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and id(node) not in inside_fstrings
        ):
            yield node.lineno, node.value


def module_of(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


class Scan:
    """Who writes what under `root` (a package directory)."""

    def __init__(self, root: Path = PACKAGE) -> None:
        self.writers: dict[str, set[str]] = {}  # table -> modules
        self.computed: list[str] = []  # "module:line: statement" of unreadable tables
        for path in sorted(root.rglob("*.py")):
            module = module_of(path, root)
            for line, text in string_literals(path.read_text(encoding="utf-8")):
                for match in WRITE.finditer(text):
                    if match.group("computed") is not None:
                        if not match.group("verb").isupper():
                            continue  # prose ("Update {kind}"): SQL here is upper case
                        self.computed.append(f"{module}:{line}: {match.group(0).strip()}")
                    elif (table := match.group("table").lower()) not in NOT_TABLES:
                        self.writers.setdefault(table, set()).add(module)


@functools.cache
def package_scan() -> Scan:
    """The scan of the package, made once for the module's tests (each read it)."""
    return Scan()


def ownership_problems(scan: Scan, tables: frozenset[str]) -> list[str]:
    """One line per table without exactly one writing module, naming the modules."""
    problems = []
    for table in sorted(tables):
        modules = sorted(scan.writers.get(table, ()))
        if len(modules) != 1:
            problems.append(f"{table}: written from {len(modules)} modules: {', '.join(modules)}")
    return problems


def test_every_table_is_written_from_exactly_one_module() -> None:
    assert ownership_problems(package_scan(), schema_tables()) == []


def test_the_platform_package_owns_the_platform_tables() -> None:
    scan = package_scan()
    owners = {table: sorted(scan.writers.get(table, ())) for table in sorted(PLATFORM_TABLES)}
    elsewhere = {
        table: modules
        for table, modules in owners.items()
        if not all(m.startswith("emulator.platform.") for m in modules)
    }
    assert elsewhere == {}


# Modules whose computed writes reach only TEMP bookkeeping tables of their own, named after
# a schema table (`contacts_updated_hours`): SQLite forbids the `temp.` qualifier inside the
# TEMP triggers that keep them, so the name cannot be spelled as a literal `temp.` write.
TEMP_BOOKKEEPING = frozenset({"emulator.store.updated_counts"})


def test_every_write_names_its_table() -> None:
    computed = [c for c in package_scan().computed if c.split(":", 1)[0] not in TEMP_BOOKKEEPING]
    assert computed == []


def test_temp_bookkeeping_writes_only_its_own_temp_tables() -> None:
    from emulator.store import updated_counts

    for table in updated_counts.TABLES:
        for sql in updated_counts.start_sql(table):
            for match in WRITE.finditer(sql):
                assert match.group("table") in {f"{table}_updated_hours", f"{table}_updated_mark"}


def test_the_check_finds_a_second_writer_and_a_computed_table(tmp_path: Path) -> None:
    root = tmp_path / "emulator"
    (root / "platform").mkdir(parents=True)
    (root / "platform" / "contacts.py").write_text(
        'SQL = "UPDATE contacts SET updatedAt = ?"\n'
        'UPSERT = "INSERT INTO lists VALUES (?) ON CONFLICT(id) DO UPDATE SET name = ?"\n',
        encoding="utf-8",
    )
    (root / "elsewhere.py").write_text(
        '"""Docstrings may say: UPDATE lists SET name, and DELETE FROM lists."""\n'
        "# so may comments: INSERT INTO lists\n"
        "TABLE = 'contacts'\n"
        'OTHER = "insert or ignore into platform_tasks(id) VALUES (?)"\n'
        'STRAY = ("UPDATE main.contacts"\n'
        '         " SET updatedAt = ?")\n'
        'COMPUTED = f"DELETE FROM {TABLE} WHERE id = ?"\n'
        'GLUED = "INSERT INTO " + TABLE\n'
        'TRIGGER = "CREATE TRIGGER t AFTER UPDATE ON companies BEGIN SELECT 1; END"\n',
        encoding="utf-8",
    )
    scan = Scan(root)
    assert scan.writers == {
        "contacts": {"emulator.platform.contacts", "emulator.elsewhere"},
        "lists": {"emulator.platform.contacts"},
        "platform_tasks": {"emulator.elsewhere"},
    }
    assert scan.computed == [
        "emulator.elsewhere:7: DELETE FROM {",
        "emulator.elsewhere:8: INSERT INTO",
    ]
    assert ownership_problems(scan, frozenset({"contacts", "lists", "companies"})) == [
        "companies: written from 0 modules: ",
        "contacts: written from 2 modules: emulator.elsewhere, emulator.platform.contacts",
    ]
