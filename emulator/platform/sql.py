"""Small SQL helpers the platform's readers and writers share."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from emulator.wire import decode, encode


def only(column: str, ids: Sequence[int] | None) -> tuple[str, tuple[Any, ...]]:
    """An extra WHERE clause keeping `column` among `ids` (None: no limit); one JSON parameter
    whatever the number of ids, so no SQLite variable limit applies."""
    if ids is None:
        return "", ()
    return f" AND {column} IN (SELECT value FROM json_each(?))", (encode(list(ids)).decode(),)


def steps(sequence: str) -> list[dict[str, Any]]:
    """A campaign's stored sequence (JSON list of steps)."""
    return decode(sequence, list[dict[str, Any]])


def insert_row(conn: sqlite3.Connection, table: str, row: dict[str, Any]) -> int:
    """INSERT one row of these columns; answers its id."""
    cursor = conn.execute(
        f"INSERT INTO {table}({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
        tuple(row.values()),
    )
    return int(cursor.lastrowid or 0)
