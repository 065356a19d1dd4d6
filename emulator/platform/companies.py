"""Companies (`companies`): created and merged with the match keys their columns derive."""

from __future__ import annotations

import sqlite3
from typing import Any

from emulator.platform.keys import company_keys
from emulator.platform.sql import insert_row


def insert(conn: sqlite3.Connection, values: dict[str, Any], now: str) -> int:
    """A new company of these columns (their match keys added); answers its id."""
    return insert_row(
        conn, "companies", {**values, **company_keys(values), "createdAt": now, "updatedAt": now}
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
        f"UPDATE companies SET {', '.join(f'{col} = ?' for col in row)}, updatedAt = ? WHERE id = ?",
        (*row.values(), now, company_id),
    )
