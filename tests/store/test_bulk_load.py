"""bulk_load: what it takes apart to fill fast (indexes, VIRTUAL columns) comes back whole."""

from __future__ import annotations

import sqlite3

from emulator.store import contact_changes
from emulator.store.db import Indexes, bulk_load, open_sync


def test_the_contact_watch_survives_a_bulk_load_on_the_stores_own_connection() -> None:
    # Seeding without a seed cache runs on the store's connection, whose TEMP triggers note
    # every contact write for the page cache; dropping `contacts` to defer its VIRTUAL `doc`
    # column drops them too, and then no write would ever reach a cached page.
    conn = open_sync(None)
    contact_changes.install(conn)
    watch = "SELECT name FROM sqlite_temp_master WHERE type = 'trigger' ORDER BY name"
    before = conn.execute(watch).fetchall()

    def fill(conn: sqlite3.Connection, indexes: Indexes) -> None:
        conn.execute("INSERT INTO contacts(id, createdAt, updatedAt) VALUES (5, 'x', 'x')")

    conn.execute("BEGIN")
    bulk_load(conn, fill)
    conn.execute("COMMIT")
    assert conn.execute(watch).fetchall() == before
    contact_changes.collect(conn)
    conn.execute("UPDATE contacts SET firstName = 'n' WHERE id = 5")
    assert contact_changes.collect(conn) == 5
    assert conn.execute("SELECT doc IS NOT NULL FROM contacts").fetchone() == (1,)
