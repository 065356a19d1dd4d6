"""Statements of many rows: `INSERT ... VALUES (...), (...)` (or an `UPDATE ... FROM (VALUES
...)`) over a batch, in place of one row a statement. Shared by every writer of rows: the
platform's tables, the simulation's and the reference CRM's."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from itertools import chain
from typing import Any

# Rows per statement of `many_rows`, largest first: a handful of distinct statements, so each
# stays in the connection's statement cache. Not more than 128: SQLite parses a statement
# afresh the first time, after a reset or restore and when the cache let it go (a 512-row
# insert of messages ~1.9 ms, of events ~0.7; 128 rows ~0.15 and ~0.1), and a row costs the
# same in a statement of 128 rows as of 512 (~0.7 us an event, ~1.1 a message).
_SIZES = (128, 32, 8, 1)


# Statements made ahead of running them: (sql, the parameters of each executemany run).
Statements = list[tuple[str, Sequence[Sequence[Any]]]]


def many_rows(
    conn: sqlite3.Connection, head: str, rows: Sequence[Sequence[Any]], tail: str = ""
) -> None:
    """Run `head VALUES (?, ...), (?, ...) ... tail` over every row in a few statements of up
    to 128 rows each: one statement per row costs SQLite a program start (and each trigger's
    frame) per row, ~0.5-3 us more a row than one statement for many rows. Rows in order."""
    run_statements(conn, many_rows_statements(head, rows, tail))


def many_rows_statements(head: str, rows: Sequence[Sequence[Any]], tail: str = "") -> Statements:
    """The statements `many_rows` runs, made without a connection (so a caller can make them
    while the connection is busy with something else)."""
    out: Statements = []
    if not rows:
        return out
    one = f"({', '.join('?' * len(rows[0]))})"
    done, n = 0, len(rows)
    for size in _SIZES:
        count = (n - done) // size
        if not count:
            continue
        sql = f"{head}{', '.join([one] * size)}{tail}"
        out.append(
            (
                sql,
                [
                    list(chain.from_iterable(rows[start : start + size]))
                    for start in range(done, done + count * size, size)
                ],
            )
        )
        done += count * size
    return out


def run_statements(conn: sqlite3.Connection, statements: Statements) -> None:
    """Run statements made ahead (`many_rows_statements`), in order."""
    for sql, params in statements:
        conn.executemany(sql, params)
