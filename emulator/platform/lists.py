"""Lists (`lists`), their members (`list_members`) and saved views (`saved_views`): the one
writer of these tables (seeding and /v1 call these functions)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any


def insert_lists(conn: sqlite3.Connection, rows: Iterable[tuple[Any, ...]]) -> None:
    """Whole rows: (id, name, description, type, folderId, createdBy, createdAt)."""
    conn.executemany("INSERT INTO lists VALUES (?, ?, ?, ?, ?, ?, ?)", rows)


def create_list(
    conn: sqlite3.Connection,
    name: str,
    description: str | None,
    type: str,
    folder_id: int | None,
    created_by: int,
    now: str,
) -> int:
    """A new list; answers its id."""
    cursor = conn.execute(
        "INSERT INTO lists(name, description, type, folderId, createdBy, createdAt)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (name, description, type, folder_id, created_by, now),
    )
    return cursor.lastrowid or 0


def add_members(conn: sqlite3.Connection, rows: Iterable[tuple[int, int]]) -> None:
    """(listId, entityId) pairs; a member already there stays as it is."""
    conn.executemany("INSERT OR IGNORE INTO list_members(listId, entityId) VALUES (?, ?)", rows)


def insert_saved_views(conn: sqlite3.Connection, rows: Iterable[tuple[Any, ...]]) -> None:
    """(id, name, type, view as JSON, createdBy, createdAt, updatedAt)."""
    conn.executemany("INSERT INTO saved_views VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
