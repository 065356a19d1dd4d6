"""The workspace's accounts: API keys (`api_keys`), users (`users`) and sender identities
(`identities`). Fixtures alone create them; this module is their one writer (seeding calls it)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any


def insert_api_keys(conn: sqlite3.Connection, rows: Iterable[tuple[Any, ...]]) -> None:
    """(key, name, scopes as JSON)."""
    conn.executemany("INSERT INTO api_keys VALUES (?, ?, ?)", rows)


def insert_users(conn: sqlite3.Connection, rows: Iterable[tuple[Any, ...]]) -> None:
    """(id, name, email)."""
    conn.executemany("INSERT INTO users VALUES (?, ?, ?)", rows)


def insert_identities(conn: sqlite3.Connection, rows: Iterable[tuple[Any, ...]]) -> None:
    """(id, name, firstName, lastName, jobTitle, email, networkUrl, timezone, companyName,
    createdAt)."""
    conn.executemany("INSERT INTO identities VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
