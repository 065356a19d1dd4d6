"""The delivery queue: attempts due on the virtual clock, made in a fixed order, with retries.

Every queued attempt has a due time; `process_due` makes all attempts due at or before a
horizon, stamps each log row with its due time (not the wall clock) and queues the retry of a
failed one 30 s, 5 min and 50 min after it (4 attempts in all, decisions.md §2).

Determinism: attempts are taken in key order (dueAt, kind, sourceId, targetId) in windows
shorter than the first backoff, so a retry is never due before an attempt of the window that
caused it. Log ids therefore follow the key order whether the clock moved in one step or in
many, and attempts of one window are sent concurrently.
"""

from __future__ import annotations

import asyncio
import functools
import sqlite3
import ssl
from collections.abc import Sequence
from datetime import timedelta
from typing import Any, NamedTuple

import httpx

from emulator.public_api import webhook_delivery as delivery
from emulator.public_api.outbound import TIMEOUT_SECONDS, Outcome, call
from emulator.store.db import Store
from emulator.wire import decode, now_iso, parse_iso

RETRY_AFTER = (
    timedelta(seconds=30), timedelta(minutes=5), timedelta(minutes=50),
)
ATTEMPTS = len(RETRY_AFTER) + 1
CONCURRENCY = 32
BATCH = 2_000

WEBHOOK = 0  # kinds of queued attempts
ACTIONS = 1

QUEUE_INSERT = (
    "INSERT OR REPLACE INTO delivery_queue(dueAt, kind, sourceId, targetId, attempt, eventType,"
    " url, payload) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
_JSON_HEADERS = {"Content-Type": "application/json", "Accept": "application/json"}


class Due(NamedTuple):
    dueAt: str
    kind: int
    sourceId: int  # event id (WEBHOOK) or run id (ACTIONS)
    targetId: int  # webhook id (WEBHOOK) or contact position in the run (ACTIONS)
    attempt: int
    eventType: str
    url: str | None
    payload: str


@functools.cache
def _tls() -> ssl.SSLContext:
    """Loading the CA bundle takes ~0.1 s: once per process, not once per client."""
    return httpx.create_ssl_context()


def shared_client() -> httpx.AsyncClient:
    """One client for a whole pass: its pool keeps connections to the receivers open."""
    limits = httpx.Limits(max_connections=CONCURRENCY, max_keepalive_connections=CONCURRENCY)
    return httpx.AsyncClient(timeout=TIMEOUT_SECONDS, limits=limits, verify=_tls())


async def any_due(store: Store, horizon: str) -> bool:
    row = await store.fetchone("SELECT MIN(dueAt) FROM delivery_queue")
    return row is not None and row[0] is not None and row[0] <= horizon


def _take(
    conn: sqlite3.Connection, horizon: str
) -> tuple[list[Due], dict[int, delivery.Subscription]]:
    first = conn.execute("SELECT MIN(dueAt) FROM delivery_queue").fetchone()[0]
    if first is None or first > horizon:
        return [], {}
    # Strictly before first + 30 s: no retry made in this window can be due inside it.
    window_end = now_iso(parse_iso(first) + RETRY_AFTER[0] - timedelta(milliseconds=1))
    rows = conn.execute(
        "SELECT dueAt, kind, sourceId, targetId, attempt, eventType, url, payload"
        " FROM delivery_queue WHERE dueAt <= ? ORDER BY dueAt, kind, sourceId, targetId"
        " LIMIT ?",
        (min(horizon, window_end), BATCH),
    ).fetchall()
    subs = delivery.all_subscriptions(conn) if any(r[1] == WEBHOOK for r in rows) else {}
    return [Due(*row) for row in rows], subs


async def _attempt(
    item: Due,
    subs: dict[int, delivery.Subscription],
    client: httpx.AsyncClient,
    gate: asyncio.Semaphore,
) -> Outcome | None:
    """Send one attempt; None when its subscription is gone or disabled (it is dropped)."""
    body = item.payload.encode()
    if item.kind == WEBHOOK:
        sub = subs.get(item.targetId)
        if sub is None or not sub.enabled:
            return None
        async with gate:
            return await delivery.send(sub, body, client=client)
    assert item.url is not None
    async with gate:
        return await call("POST", item.url, headers=_JSON_HEADERS, content=body, client=client)


def _record(
    conn: sqlite3.Connection, batch: Sequence[Due], outcomes: Sequence[Outcome | None]
) -> int:
    """Log every attempt in key order, queue the retries, drop the batch from the queue."""
    conn.executemany(
        "DELETE FROM delivery_queue WHERE dueAt = ? AND kind = ? AND sourceId = ?"
        " AND targetId = ?",
        [item[:4] for item in batch],
    )
    hook_rows: list[tuple[Any, ...]] = []
    run_rows: list[tuple[Any, ...]] = []
    retries: list[tuple[Any, ...]] = []
    for item, outcome in zip(batch, outcomes, strict=True):
        if outcome is None:
            continue
        retry_at = None
        if not outcome.ok and item.attempt < ATTEMPTS:
            retry_at = now_iso(parse_iso(item.dueAt) + RETRY_AFTER[item.attempt - 1])
            retries.append((retry_at, *item[1:4], item.attempt + 1, *item[5:]))
        if item.kind == WEBHOOK:
            hook_rows.append(delivery.attempt_row(
                item.targetId, item.eventType, item.payload.encode(), outcome, item.attempt,
                item.dueAt, retry_at,
            ))
        else:
            run_rows.append((
                item.sourceId, _contact_of(item.payload), item.url, item.payload,
                outcome.statusCode, outcome.errorMessage, item.attempt, outcome.durationMs,
                item.dueAt,
            ))
    conn.executemany(delivery.INSERT_ATTEMPT, hook_rows)
    conn.executemany(
        "INSERT INTO actions_deliveries(runId, contactId, url, payload, statusCode, errorMessage,"
        " attemptNumber, durationMs, createdAt) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        run_rows,
    )
    conn.executemany(QUEUE_INSERT, retries)
    return len(hook_rows) + len(run_rows)


def _contact_of(payload: str) -> int:
    data: dict[str, Any] = decode(payload)
    return int(data["data"]["contactId"])


async def process_due(store: Store, horizon: str, client: httpx.AsyncClient) -> int:
    """Make every attempt due at or before `horizon`; answers how many were made."""
    made = 0
    gate = asyncio.Semaphore(CONCURRENCY)
    while True:
        batch, subs = await store.read(lambda conn: _take(conn, horizon))
        if not batch:
            return made
        outcomes = await asyncio.gather(*(_attempt(i, subs, client, gate) for i in batch))
        made += await store.write(lambda conn: _record(conn, batch, outcomes))
