"""Reads of webhook delivery state per subscription: attempts made and attempts still queued."""

from __future__ import annotations

import sqlite3

from emulator.store.db import Store
from emulator.wire import Wire

WEBHOOK_KIND = 0  # delivery_queue.kind of webhook events (1: actions-run completions)


class DeliveryCounts(Wire):
    attempts: int = 0
    failed: int = 0  # attempts without a 2xx answer
    queued: int = 0  # attempts waiting for their due time (first tries and retries)


class QueuedAttempt(Wire):
    dueAt: str
    eventType: str
    attempt: int
    eventId: int


async def delivery_counts(store: Store) -> dict[int, DeliveryCounts]:
    """Per subscription id: attempts logged, of those failed, and attempts queued."""

    def read(conn: sqlite3.Connection) -> dict[int, DeliveryCounts]:
        counts: dict[int, DeliveryCounts] = {}
        logged = conn.execute(
            "SELECT webhookId, count(*), sum(statusCode IS NULL OR statusCode NOT BETWEEN 200 AND 299)"
            " FROM webhook_deliveries GROUP BY webhookId"
        )
        for webhook_id, attempts, failed in logged:
            counts[webhook_id] = DeliveryCounts(attempts=attempts, failed=failed or 0)
        queued = conn.execute(
            "SELECT targetId, count(*) FROM delivery_queue WHERE kind = ? GROUP BY targetId",
            (WEBHOOK_KIND,),
        )
        for webhook_id, n in queued:
            counts.setdefault(webhook_id, DeliveryCounts()).queued = n
        return counts

    return await store.read(read)


async def queued_attempts(store: Store, webhook_id: int, limit: int) -> list[QueuedAttempt]:
    """The next attempts queued for one subscription, soonest first."""
    rows = await store.fetchall(
        "SELECT dueAt, eventType, attempt, sourceId FROM delivery_queue"
        " WHERE kind = ? AND targetId = ? ORDER BY dueAt, sourceId LIMIT ?",
        (WEBHOOK_KIND, webhook_id, limit),
    )
    return [QueuedAttempt(dueAt=r[0], eventType=r[1], attempt=r[2], eventId=r[3]) for r in rows]
