"""Contacts (`contacts`): created and merged with the match keys their columns derive. The
one writer of the table: seeding, /v1, actions runs and exports call these functions."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from emulator.platform.keys import contact_keys
from emulator.platform.sql import (
    any_differs_from_row,
    assignments,
    assignments_from_row,
    values_clause,
)
from emulator.store.many_rows import many_rows
from emulator.wire import encode


def insert(conn: sqlite3.Connection, values: dict[str, Any], now: str) -> int:
    """A new contact of these columns (their match keys added); answers its id."""
    row = {**values, **contact_keys(values), "createdAt": now, "updatedAt": now}
    cursor = conn.execute(f"INSERT INTO contacts{values_clause(row)}", tuple(row.values()))
    return int(cursor.lastrowid or 0)


# `insert_rows`' statement (the contacts worker runs it on its own file through apsw).
INSERT_ROWS = "INSERT INTO contacts VALUES (" + ", ".join("?" * 23) + ")"


def insert_rows(conn: sqlite3.Connection, rows: Iterable[Sequence[Any]]) -> None:
    """Whole rows in the column order of the schema (seeding: `bulk.contact_rows`)."""
    conn.executemany(INSERT_ROWS, rows)


def copy_from(conn: sqlite3.Connection, schema: str) -> None:
    """Every row of the attached database `schema`'s contacts into the empty main table
    (SQLite's transfer: records and index entries as they are, no value decoded)."""
    conn.execute(f"INSERT INTO main.contacts SELECT * FROM {schema}.contacts")


def update(conn: sqlite3.Connection, contact_id: int, updates: dict[str, Any], now: str) -> None:
    """Change these columns, with the match keys they move; updatedAt becomes `now`."""
    row = {**updates, **contact_keys(updates)}
    conn.execute(
        f"UPDATE contacts SET {assignments(row)}, updatedAt = ? WHERE id = ?",
        (*row.values(), now, contact_id),
    )


def set_columns(conn: sqlite3.Connection, contact_id: int, columns: dict[str, Any]) -> None:
    """These columns as they are (the caller derived keys and updatedAt)."""
    conn.execute(
        f"UPDATE contacts SET {assignments(columns)} WHERE id = ?", (*columns.values(), contact_id)
    )


def write_synced(
    conn: sqlite3.Connection, columns: Sequence[str], rows: Sequence[Sequence[Any]]
) -> None:
    """Rows of (id, updatedAt, *values), each id once: the columns set, and updatedAt moved,
    only where a value differs. Many rows a statement (`many_rows`): one statement per row
    paid its start and its thread taking the GIL back, each time."""
    many_rows(
        conn,
        f"UPDATE contacts SET {assignments_from_row(columns, 3)}, updatedAt = v.column2"
        " FROM (VALUES ",
        rows,
        f") AS v WHERE contacts.id = v.column1 AND ({any_differs_from_row('contacts', columns, 3)})",
    )


def write_one_column(conn: sqlite3.Connection, column: str, values: str, now: str) -> None:
    """`write_synced` of one column (an export's CRM ids): `values` a JSON object of id ->
    value. One statement for the whole batch, its values one JSON text (no row of
    parameters to bind)."""
    conn.execute(
        f"UPDATE contacts SET {column} = t.value, updatedAt = ? FROM json_each(?) t"
        f" WHERE contacts.id = CAST(t.key AS INTEGER) AND contacts.{column} IS NOT t.value",
        (now, values),
    )


def touch(conn: sqlite3.Connection, rows: Sequence[tuple[str, int]]) -> None:
    """(time, contact id), one row per contact: something happened to the contact then;
    updatedAt never goes back."""
    if rows:
        touch_text(conn, touches_text({contact: at for at, contact in rows}))


def touches_text(times: Mapping[int, str]) -> str:
    """What `touch_text` takes: a JSON object of contact id -> time, in the mapping's order
    (made by a caller before it hands the statement to another thread)."""
    return encode(times).decode()


def touch_text(conn: sqlite3.Connection, text: str) -> None:
    """`touch` of the contacts of a `touches_text`. One statement over a JSON object (a
    trigger watches contacts: one statement per row pays its start each time, ~6.5 instead
    of ~4 us a row; and a thread running it takes the GIL back once, not once per row).
    Keyed by id: SQLite reads each key and value off json_each's row, where an array of
    pairs took two `->>` extractions a row (~3.6 instead of ~4.5 us a row)."""
    conn.execute(
        "UPDATE contacts SET updatedAt = max(updatedAt, t.value) FROM json_each(?) t"
        " WHERE contacts.id = CAST(t.key AS INTEGER)",
        (text,),
    )
