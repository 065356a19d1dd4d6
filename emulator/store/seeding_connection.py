"""The connection a new image is seeded through: apsw, behind the sqlite3 module's face.

The seeders write through the few calls of the sqlite3 module's `Connection` they use
(`execute` and its cursor's `fetchone`, `fetchall`, `rowcount`, `lastrowid`; `executemany`,
`executescript`, `total_changes`). apsw (its own SQLite, already the contacts worker's) binds
a row's parameters for about half the sqlite3 module's CPU (docs/performance.md), and a cold
start at 1,000,000 contacts writes ~10 million rows. The file it writes is a SQLite database
like any other: the server maps it and reads it with the sqlite3 module.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from typing import cast

import apsw


class _Cursor(apsw.Cursor):
    """An apsw cursor with the sqlite3 module's counts of the statement just run."""

    @property
    def rowcount(self) -> int:
        return self.connection.changes()

    @property
    def lastrowid(self) -> int:
        return self.connection.last_insert_rowid()


class _Connection(apsw.Connection):
    """apsw's connection answering the sqlite3 module's calls the seeders make. Autocommit
    until an explicit BEGIN, as a sqlite3 connection with `isolation_level=None`."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.cursor_factory = _Cursor

    def executescript(self, sql: str) -> None:
        self.execute(sql).fetchall()  # apsw runs every statement of the string

    @property
    def total_changes(self) -> int:  # type: ignore[override]  # sqlite3's is an attribute
        return apsw.Connection.total_changes(self)


def open_seeding(path: str) -> sqlite3.Connection:
    """A connection to the database file `path` for seeding, typed as the sqlite3 module's:
    only the calls above may be made on it (the seeders', the index builds' and the
    copies'); one thread at a time (apsw refuses two at once)."""
    return cast(sqlite3.Connection, _Connection(path))


@contextlib.contextmanager
def sqlite3_errors() -> Iterator[None]:
    """apsw's errors raised as the sqlite3 module's (an unwritable or full cache is met as
    `sqlite3.Error` above the store: the start then seeds in memory)."""
    try:
        yield
    except apsw.Error as exc:
        raise sqlite3.OperationalError(f"{type(exc).__name__}: {exc}") from exc
