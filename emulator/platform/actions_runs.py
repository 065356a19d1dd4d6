"""Actions runs (`actions_runs`): the one writer of the table. Seeding and /v1 create runs, the
simulation (simulation/actions/runs.py) stores each run's status as its clock moves."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any


def insert_runs(conn: sqlite3.Connection, rows: Iterable[tuple[Any, ...]]) -> None:
    """Whole rows: (id, entity, actions, contactIds, webhookUrl, overallStatus, statusCounts,
    createdAt), JSON columns encoded."""
    conn.executemany("INSERT INTO actions_runs VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)


def create_run(
    conn: sqlite3.Connection,
    entity: str,
    actions: str,
    record_ids: str,
    webhook_url: str | None,
    status_counts: str,
    now: str,
) -> int:
    """A new QUEUED run (JSON columns encoded); answers its id."""
    cursor = conn.execute(
        "INSERT INTO actions_runs(entity, actions, contactIds, webhookUrl, overallStatus,"
        " statusCounts, createdAt) VALUES (?, ?, ?, ?, 'QUEUED', ?, ?)",
        (entity, actions, record_ids, webhook_url, status_counts, now),
    )
    return cursor.lastrowid or 0


def set_status(conn: sqlite3.Connection, run_id: int, overall: str, counts: str) -> None:
    """A run's stored overallStatus and statusCounts (JSON)."""
    conn.execute(
        "UPDATE actions_runs SET overallStatus = ?, statusCounts = ? WHERE id = ?",
        (overall, counts, run_id),
    )
