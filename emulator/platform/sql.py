"""Small SQL helpers the platform's readers and writers share."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from itertools import chain
from typing import Any

from emulator.wire import decode, encode


def only(column: str, ids: Sequence[int] | None) -> tuple[str, tuple[Any, ...]]:
    """An extra WHERE clause keeping `column` among `ids` (None: no limit); one JSON parameter
    whatever the number of ids, so no SQLite variable limit applies."""
    if ids is None:
        return "", ()
    return f" AND {column} IN (SELECT value FROM json_each(?))", (id_array(ids),)


def id_array(ids: Sequence[int]) -> str:
    """`ids` as a JSON array: one parameter for a statement's json_each."""
    return encode(list(ids)).decode()


def steps(sequence: str) -> list[dict[str, Any]]:
    """A campaign's stored sequence (JSON list of steps)."""
    return decode(sequence, list[dict[str, Any]])


def values_clause(columns: Iterable[str]) -> str:
    """`(a, b) VALUES (?, ?)`: what follows `INSERT INTO table` for a row of these columns."""
    names = list(columns)
    return f"({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"


def assignments(columns: Iterable[str]) -> str:
    """`a = ?, b = ?`: what follows `UPDATE table SET` for these columns."""
    return ", ".join(f"{name} = ?" for name in columns)


def assignments_from_row(columns: Iterable[str], first: int) -> str:
    """`a = v.column3, b = v.column4` (first = 3): what follows `UPDATE table SET` for these
    columns taken from the row `v` of an `UPDATE ... FROM (VALUES ...) AS v`."""
    return ", ".join(f"{name} = v.column{first + i}" for i, name in enumerate(columns))


def any_differs_from_row(table: str, columns: Iterable[str], first: int) -> str:
    """`table.a IS NOT v.column3 OR ...`: true where the table's row holds other values than
    the row `v` (see above)."""
    return " OR ".join(
        f"{table}.{name} IS NOT v.column{first + i}" for i, name in enumerate(columns)
    )


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
