"""`insert_records` puts many rows in a statement: whatever their number (a create's batch,
the seed's thousands), each row lands whole, in order."""

from __future__ import annotations

import sqlite3

import pytest

from emulator.crm.records import (
    COMPANIES,
    CONTACTS,
    Kind,
    insert_records,
    loads,
    record_row,
)
from emulator.store.ddl import schema_sql


@pytest.mark.parametrize("kind", [CONTACTS, COMPANIES], ids=lambda k: k.name)
@pytest.mark.parametrize("count", [0, 1, 100, 300])
def test_every_row_is_stored_whole_and_in_order(kind: Kind, count: int) -> None:
    conn = sqlite3.connect(":memory:")
    conn.executescript(schema_sql())
    records = [
        {"externalId": str(i), "email": f"p{i}@example.org", "domain": f"d{i}.example"}
        for i in range(count)
    ]
    rows = [
        record_row(kind, f"{kind.prefix}{i:06d}", r, "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z")
        for i, r in enumerate(records)
    ]
    insert_records(conn, kind, iter(rows))  # any iterable, not only a list
    stored = conn.execute(f"SELECT * FROM {kind.table} ORDER BY rowid").fetchall()
    assert stored == rows
    assert [loads(row[2]) for row in stored] == records


def test_a_failing_row_fails_the_call() -> None:
    conn = sqlite3.connect(":memory:")
    conn.executescript(schema_sql())
    row = record_row(CONTACTS, "crm-ct-000001", {"externalId": "1"}, "t", "t")
    with pytest.raises(sqlite3.IntegrityError):
        insert_records(conn, CONTACTS, [row] * 101)
