"""contact_changes.collect: the lowest contact id a transaction touched and the contacts it
added less those it deleted, then nothing until the next write."""

from __future__ import annotations

from emulator.store import contact_changes
from emulator.store.db import open_sync

INSERT = "INSERT INTO contacts(id, createdAt, updatedAt) VALUES (?, 'x', 'x')"


def test_a_write_notes_its_lowest_contact_and_its_creates_less_its_deletes() -> None:
    conn = open_sync(None)
    contact_changes.install(conn)
    conn.executemany(INSERT, [(10,), (11,), (12,)])
    assert contact_changes.collect(conn) == (10, 3)
    assert contact_changes.collect(conn) == (None, 0)  # collected: nothing is left noted

    conn.execute(INSERT, (13,))
    conn.execute("DELETE FROM contacts WHERE id = 11")
    conn.execute("DELETE FROM contacts WHERE id = 13")
    assert contact_changes.collect(conn) == (11, -1)

    conn.execute("UPDATE contacts SET firstName = 'n' WHERE id = 12")  # no contact added
    conn.execute(INSERT, (14,))
    assert contact_changes.collect(conn) == (12, 1)

    conn.execute("UPDATE contacts SET firstName = 'm' WHERE id = 10")
    assert contact_changes.collect(conn) == (10, 0)
    assert contact_changes.collect(conn) == (None, 0)
