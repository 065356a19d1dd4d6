"""Companies (`companies`): created and merged with the match keys their columns derive. The
one writer of the table: seeding, /v1, actions runs and exports call these functions."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from emulator.platform.keys import company_keys
from emulator.platform.sql import (
    any_differs_from_row,
    assignments,
    assignments_from_row,
    values_clause,
)
from emulator.store.many_rows import many_rows


def insert(conn: sqlite3.Connection, values: dict[str, Any], now: str) -> int:
    """A new company of these columns (their match keys added); answers its id."""
    row = {**values, **company_keys(values), "createdAt": now, "updatedAt": now}
    cursor = conn.execute(f"INSERT INTO companies{values_clause(row)}", tuple(row.values()))
    return int(cursor.lastrowid or 0)


def insert_rows(conn: sqlite3.Connection, rows: Iterable[Sequence[Any]]) -> None:
    """Whole rows in the column order of the schema (seeding: `bulk.insert_companies`)."""
    conn.executemany(
        "INSERT INTO companies VALUES "
        "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )


def update(
    conn: sqlite3.Connection,
    company_id: int,
    stored: dict[str, Any],
    updates: dict[str, Any],
    now: str,
) -> None:
    """Change these columns of a company whose key sources were `stored`; its match keys are
    derived again from the merged values; updatedAt becomes `now`."""
    row = {**updates, **company_keys(stored | updates)}
    conn.execute(
        f"UPDATE companies SET {assignments(row)}, updatedAt = ? WHERE id = ?",
        (*row.values(), now, company_id),
    )


def set_columns(conn: sqlite3.Connection, company_id: int, columns: dict[str, Any]) -> None:
    """These columns as they are (the caller derived keys and updatedAt)."""
    conn.execute(
        f"UPDATE companies SET {assignments(columns)} WHERE id = ?", (*columns.values(), company_id)
    )


def write_synced(
    conn: sqlite3.Connection, columns: Sequence[str], rows: Sequence[Sequence[Any]]
) -> None:
    """Rows of (id, updatedAt, *values), each id once: the columns set, and updatedAt moved,
    only where a value differs. Many rows a statement (`many_rows`): one statement per row
    paid its start and its thread taking the GIL back, each time."""
    many_rows(
        conn,
        f"UPDATE companies SET {assignments_from_row(columns, 3)}, updatedAt = v.column2"
        " FROM (VALUES ",
        rows,
        f") AS v WHERE companies.id = v.column1 AND ({any_differs_from_row('companies', columns, 3)})",
    )


def write_one_column(conn: sqlite3.Connection, column: str, values: str, now: str) -> None:
    """`write_synced` of one column (an export's CRM ids): `values` a JSON object of id ->
    value. One statement for the whole batch, its values one JSON text (no row of
    parameters to bind)."""
    conn.execute(
        f"UPDATE companies SET {column} = t.value, updatedAt = ? FROM json_each(?) t"
        f" WHERE companies.id = CAST(t.key AS INTEGER) AND companies.{column} IS NOT t.value",
        (now, values),
    )
