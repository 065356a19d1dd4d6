"""bulk_load: what it takes apart to fill fast comes back whole, the store's watch included."""

from __future__ import annotations

import sqlite3

from emulator.store import contact_changes
from emulator.store.db import Indexes, bulk_load, open_sync

INDEXES = "SELECT name, sql FROM sqlite_master WHERE type = 'index' ORDER BY name"
WATCH = "SELECT name FROM sqlite_temp_master WHERE type = 'trigger' ORDER BY name"


def test_indexes_and_the_contact_watch_are_whole_after_a_bulk_load() -> None:
    # Seeding without a seed cache runs on the store's own connection, whose TEMP triggers
    # note every contact write for the page cache: a seed that lost them (a dropped and
    # remade table drops its triggers) would let cached pages hide every later write.
    conn = open_sync(None)
    contact_changes.install(conn)
    indexes, watch = conn.execute(INDEXES).fetchall(), conn.execute(WATCH).fetchall()

    def fill(conn: sqlite3.Connection, _: Indexes) -> None:
        conn.execute("INSERT INTO contacts(id, createdAt, updatedAt) VALUES (5, 'x', 'x')")

    conn.execute("BEGIN")
    bulk_load(conn, fill)
    conn.execute("COMMIT")
    assert conn.execute(INDEXES).fetchall() == indexes
    assert conn.execute(WATCH).fetchall() == watch
    contact_changes.collect(conn)
    conn.execute("UPDATE contacts SET firstName = 'n' WHERE id = 5")
    assert contact_changes.collect(conn) == (5, 0)
