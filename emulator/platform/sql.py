"""Small SQL helpers the platform's readers and writers share."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
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
