"""Contacts (`contacts`): created and merged with the match keys their columns derive."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from emulator.platform.keys import contact_keys
from emulator.platform.sql import insert_row
from emulator.wire import encode


def insert(conn: sqlite3.Connection, values: dict[str, Any], now: str) -> int:
    """A new contact of these columns (their match keys added); answers its id."""
    return insert_row(
        conn, "contacts", {**values, **contact_keys(values), "createdAt": now, "updatedAt": now}
    )


def update(conn: sqlite3.Connection, contact_id: int, updates: dict[str, Any], now: str) -> None:
    """Change these columns, with the match keys they move; updatedAt becomes `now`."""
    row = {**updates, **contact_keys(updates)}
    conn.execute(
        f"UPDATE contacts SET {', '.join(f'{col} = ?' for col in row)}, updatedAt = ? WHERE id = ?",
        (*row.values(), now, contact_id),
    )


def touch(conn: sqlite3.Connection, rows: Sequence[tuple[str, int]]) -> None:
    """(time, contact id), one row per contact: something happened to the contact then;
    updatedAt never goes back. One statement over a JSON array (a trigger watches contacts:
    one statement per row pays its start each time, ~6.5 instead of ~4 us a row; and a
    thread running it takes the GIL back once, not once per row). A JSON object keyed by id:
    SQLite reads each key and value off json_each's row, where an array of pairs took two
    `->>` extractions a row (~3.6 instead of ~4.5 us a row)."""
    if rows:
        conn.execute(
            "UPDATE contacts SET updatedAt = max(updatedAt, t.value) FROM json_each(?) t"
            " WHERE contacts.id = CAST(t.key AS INTEGER)",
            (encode({contact: at for at, contact in rows}).decode(),),
        )
