"""Webhook subscriptions (`webhooks`): the one writer of the table (seeding and /v1 call these
functions; the delivery log, `webhook_deliveries`, is simulation/webhooks/delivery.py's)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any

from emulator.platform.sql import assignments


def insert_webhooks(conn: sqlite3.Connection, rows: Iterable[tuple[Any, ...]]) -> None:
    """Whole rows: (id, name, url, secret, events, campaignIds, customFields, enabled,
    createdAt, updatedAt), JSON columns encoded."""
    conn.executemany("INSERT INTO webhooks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)


def create_webhook(conn: sqlite3.Connection, values: tuple[Any, ...]) -> int:
    """(name, url, secret, events, campaignIds, customFields, enabled, createdAt, updatedAt);
    answers the new subscription's id."""
    cursor = conn.execute(
        "INSERT INTO webhooks(name, url, secret, events, campaignIds, customFields, enabled,"
        " createdAt, updatedAt) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        values,
    )
    return cursor.lastrowid or 0


def update_webhook(conn: sqlite3.Connection, webhook_id: int, changes: dict[str, Any]) -> None:
    """Set these columns (stored values: JSON encoded, booleans as 0/1)."""
    conn.execute(
        f"UPDATE webhooks SET {assignments(changes)} WHERE id = ?",
        (*changes.values(), webhook_id),
    )


def delete_webhook(conn: sqlite3.Connection, webhook_id: int) -> None:
    conn.execute("DELETE FROM webhooks WHERE id = ?", (webhook_id,))
