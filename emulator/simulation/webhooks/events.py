"""Webhook events: new rows of `events` become queued deliveries, and manual redelivery.

An event of one of the 8 webhook types goes to every enabled subscription that lists its
type and whose `campaignIds` are empty or hold the event's campaign: one queued attempt per
subscription, due at the event's `occurredAt`, with the payload of decisions.md §2 built
when the event is read. The cursor (meta `webhooks.cursor`, the last event id read) makes
every event count once, across advances and restarts.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from emulator.errors import NotFound
from emulator.event_types import WEBHOOK_EVENTS
from emulator.simulation.webhooks import delivery
from emulator.simulation.webhooks.queue import WEBHOOK, enqueue
from emulator.store.db import Store, read_meta, write_meta
from emulator.wire import decode, encode

CURSOR = "webhooks.cursor"
_CHUNK = 5_000
# New events a skip on the event loop's thread may walk (`_skip_unheard`): ~1 ms at most.
BRIEF_SKIP = 20_000


def _skip(conn: sqlite3.Connection, cursor: int, horizon: str) -> None:
    """Nobody listens: move the cursor past the events up to `horizon` without reading them
    (not past one still to happen: an injected event may lie ahead of the clock)."""
    future = conn.execute(
        "SELECT MIN(id) FROM events WHERE id > ? AND occurredAt > ?", (cursor, horizon)
    ).fetchone()[0]
    last = conn.execute(
        "SELECT MAX(id) FROM events WHERE id > ? AND id < ?", (cursor, future or 2**62)
    ).fetchone()[0]
    if last is not None:
        write_meta(conn, CURSOR, str(last))


def _skip_unheard(conn: sqlite3.Connection, horizon: str) -> bool:
    """With no enabled subscription and at most BRIEF_SKIP new events, skip them: True.
    False (nothing written) otherwise: `_enqueue_chunk` on the database thread does it."""
    cursor = int(read_meta(conn, CURSOR) or 0)
    newest = conn.execute("SELECT MAX(id) FROM events").fetchone()[0] or 0
    if newest - cursor > BRIEF_SKIP or any(
        s.enabled for s in delivery.all_subscriptions(conn).values()
    ):
        return False
    _skip(conn, cursor, horizon)
    return True


def _enqueue_chunk(conn: sqlite3.Connection, horizon: str) -> bool:
    """Queue the deliveries of up to one chunk of new events; True when more may follow."""
    cursor = int(read_meta(conn, CURSOR) or 0)
    subs = [s for s in delivery.all_subscriptions(conn).values() if s.enabled]
    if not subs:  # nobody listens: skip the events without reading them
        _skip(conn, cursor, horizon)
        return False
    rows = conn.execute(
        "SELECT id, type, contactId, campaignId, occurredAt, data FROM events"
        " WHERE id > ? ORDER BY id LIMIT ?",
        (cursor, _CHUNK),
    ).fetchall()
    queued: list[tuple[Any, ...]] = []
    payloads = delivery.Payloads(conn)
    last = cursor
    for event_id, kind, contact_id, campaign_id, occurred, data in rows:
        if occurred > horizon:  # not happened yet: wait for the clock
            break
        last = event_id
        if kind not in WEBHOOK_EVENTS:
            continue
        fields: dict[str, Any] | None = None
        for sub in subs:
            if kind not in sub.events or (sub.campaignIds and campaign_id not in sub.campaignIds):
                continue
            if fields is None:
                fields = decode(data or "{}")
            payload = payloads.event(
                sub.customFields, kind, occurred, contact_id, campaign_id, fields
            )
            queued.append(
                (occurred, WEBHOOK, event_id, sub.id, 1, kind, None, encode(payload).decode())
            )
    enqueue(conn, queued)
    if last != cursor:
        write_meta(conn, CURSOR, str(last))
    return len(rows) == _CHUNK and last == rows[-1][0]


async def enqueue_events(store: Store, horizon: str) -> None:
    """Queue a delivery per matching subscription for every new event up to `horizon`.

    Most advances have nobody listening and a few thousand new events at most: a brief write
    on this thread skips them, not a hop to the database thread and back."""
    if await store.write(lambda conn: _skip_unheard(conn, horizon), brief=True):
        return
    while await store.write(lambda conn: _enqueue_chunk(conn, horizon)):
        pass


async def redeliver(
    store: Store,
    delivery_id: int,
    now: Callable[[], str],
    *,
    timeout: float = delivery.TIMEOUT_SECONDS,
) -> delivery.DeliveryAttempt:
    """Send the payload of logged attempt `delivery_id` once more, now, as a new attempt.

    The new attempt's number follows the highest one of the same payload to the same
    subscription; a failure is logged but not retried (a manual resend is one attempt).
    """
    row = await store.fetchone(
        "SELECT webhookId, payload FROM webhook_deliveries WHERE id = ?", (delivery_id,)
    )
    if row is None:
        raise NotFound(f"Delivery {delivery_id} not found")
    webhook_id, payload = row
    sub = await delivery.load_subscription(store, webhook_id)
    if sub is None:
        raise NotFound(f"Webhook {webhook_id} of delivery {delivery_id} no longer exists")
    last = await store.fetchone(
        "SELECT MAX(attemptNumber) FROM webhook_deliveries WHERE webhookId = ? AND payload = ?",
        (webhook_id, payload),
    )
    attempt = int(last[0] if last and last[0] is not None else 0) + 1
    return await delivery.deliver_once(store, sub, decode(payload), attempt, now, timeout=timeout)
