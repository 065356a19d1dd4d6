"""The delivery queue: attempts due on the virtual clock, made in a fixed order, with retries.

Every queued attempt has a due time; `process_due` makes all attempts due at or before a
horizon, stamps each log row with its due time (not the wall clock) and queues the retry of a
failed one 30 s, 5 min and 50 min after it (4 attempts in all, decisions.md §2).

Determinism: attempts launch in key order (dueAt, kind, sourceId, targetId), concurrently
only while no attempt in flight could fail into a retry due before the next one (see
`_Pass`); results are logged in launch order. Log ids therefore follow the key order
whether the clock moved in one step or in many.
"""

from __future__ import annotations

import asyncio
import heapq
import sqlite3
from collections import deque
from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import Any, NamedTuple

from emulator.outbound.calls import Outcome
from emulator.simulation.webhooks import delivery
from emulator.simulation.webhooks.sender import Sender
from emulator.store.db import Store
from emulator.wire import decode, now_iso, parse_iso

RETRY_AFTER = (
    timedelta(seconds=30),
    timedelta(minutes=5),
    timedelta(minutes=50),
)
ATTEMPTS = len(RETRY_AFTER) + 1
CONCURRENCY = 32
BATCH = 2_000
WRITE_EVERY = 500  # attempts made: their log rows and retries are written then
HELD = 20_000  # retries a pass holds beyond the rows it read (_Pass): the rest wait in the table

WEBHOOK = 0  # kinds of queued attempts
ACTIONS = 1

_QUEUE_INSERT = (
    "INSERT OR REPLACE INTO delivery_queue(dueAt, kind, sourceId, targetId, attempt, eventType,"
    " url, payload) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)


def enqueue(conn: sqlite3.Connection, rows: Iterable[tuple[Any, ...]]) -> None:
    """Queue attempts: (dueAt, kind, sourceId, targetId, attempt, eventType, url, payload);
    the one writer of delivery_queue (webhook events and actions runs call it)."""
    conn.executemany(_QUEUE_INSERT, rows)


class Due(NamedTuple):
    dueAt: str
    kind: int
    sourceId: int  # event id (WEBHOOK) or run id (ACTIONS)
    targetId: int  # webhook id (WEBHOOK) or contact position in the run (ACTIONS)
    attempt: int
    eventType: str
    url: str | None
    payload: str


Key = tuple[str, int, int, int]


def _load(
    conn: sqlite3.Connection, horizon: str, after: Key | None
) -> tuple[list[Due], dict[int, delivery.Subscription]]:
    """The next BATCH queued attempts due by `horizon`, in key order, after key `after`."""
    sql = (
        "SELECT dueAt, kind, sourceId, targetId, attempt, eventType, url, payload"
        " FROM delivery_queue WHERE dueAt <= ?"
    )
    params: list[Any] = [horizon]
    if after is not None:
        sql += " AND (dueAt, kind, sourceId, targetId) > (?, ?, ?, ?)"
        params.extend(after)
    sql += " ORDER BY dueAt, kind, sourceId, targetId LIMIT ?"
    rows = conn.execute(sql, (*params, BATCH)).fetchall()
    return [Due(*row) for row in rows], delivery.all_subscriptions(conn)


async def _attempt(
    item: Due, subs: dict[int, delivery.Subscription], sender: Sender, gate: asyncio.Semaphore
) -> Outcome | None:
    """Send one attempt; None when its subscription is gone or disabled (it is dropped)."""
    if item.kind == WEBHOOK:
        sub = subs.get(item.targetId)
        if sub is None or not sub.enabled:
            return None
        url, headers = sub.url, delivery.delivery_headers(sub)
    else:
        assert item.url is not None
        url, headers = item.url, delivery.JSON_HEADERS
    async with gate:
        return await sender.post(url, headers, item.payload.encode())


Done = tuple[Due, Outcome | None, Due | None]  # an attempt, its outcome, its retry


def _record(conn: sqlite3.Connection, done: Sequence[Done]) -> int:
    """Log attempts in the order given, queue their retries, drop them from the queue."""
    hook_rows: list[tuple[Any, ...]] = []
    run_rows: list[tuple[Any, ...]] = []
    for item, outcome, retry in done:
        if outcome is None:
            continue
        retry_at = None if retry is None else retry.dueAt
        if item.kind == WEBHOOK:
            hook_rows.append(
                delivery.attempt_row(
                    item.targetId,
                    item.eventType,
                    item.payload.encode(),
                    outcome,
                    item.attempt,
                    item.dueAt,
                    retry_at,
                )
            )
        else:
            run_rows.append(
                (
                    item.sourceId,
                    _contact_of(item.payload),
                    item.url,
                    item.payload,
                    outcome.statusCode,
                    outcome.errorMessage,
                    item.attempt,
                    outcome.durationMs,
                    item.dueAt,
                )
            )
    # Retries first: one made and consumed within `done` is then deleted with the rest.
    enqueue(conn, [retry for _, _, retry in done if retry is not None])
    conn.executemany(
        "DELETE FROM delivery_queue WHERE dueAt = ? AND kind = ? AND sourceId = ? AND targetId = ?",
        [item[:4] for item, _, _ in done],
    )
    delivery.log_attempts(conn, hook_rows)
    conn.executemany(
        "INSERT INTO actions_deliveries(runId, contactId, url, payload, statusCode, errorMessage,"
        " attemptNumber, durationMs, createdAt) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        run_rows,
    )
    return len(hook_rows) + len(run_rows)


def _contact_of(payload: str) -> int:
    data: dict[str, Any] = decode(payload)
    record = data[
        "data"
    ]  # a contact run's completion names the contact, a company run's the company
    return int(record["contactId"] if "contactId" in record else record["companyId"])


def _retry(item: Due, outcome: Outcome | None) -> Due | None:
    if outcome is None or outcome.ok or item.attempt >= ATTEMPTS:
        return None
    due = now_iso(parse_iso(item.dueAt) + RETRY_AFTER[item.attempt - 1])
    return item._replace(dueAt=due, attempt=item.attempt + 1)


class _Pass:
    """One `process_due`: attempts launch in key order, up to CONCURRENCY at once, as long as
    no attempt still in flight could fail into a retry due before the next one (a retry comes
    >= 30 s after its attempt). So the launch order, and the log order, is the order of the
    keys of all attempts, however the clock was stepped; results are written in that order.

    What it holds is bounded, however many attempts the pass makes. The queue is read in key
    order BATCH rows at a time, after `loaded` (the last key read). A retry made in the pass
    is held in `heap` when its key is at or before `loaded` (the table is never read there
    again), or while fewer than HELD retries after `loaded` are (`ahead`: their keys, so that
    the read that reaches them skips their rows); any other waits in the table, written
    before the next read. A start's burst (at 1,000,000 contacts ~280,000 events at one
    moment, all their retries 30 s later) so holds HELD retries, not every one."""

    def __init__(self, store: Store, horizon: str, sender: Sender) -> None:
        self.store, self.horizon, self.sender = store, horizon, sender
        self.heap: list[Due] = []
        self.ahead: set[Key] = set()  # keys in `heap` after `loaded`
        self.loaded: Key | None = None  # the last key read from the queue table
        self.exhausted = False  # nothing left to read after `loaded` (until a retry waits there)
        self.spilled = False  # a retry of `done` waits in the table, not in `heap`
        self.subs: dict[int, delivery.Subscription] = {}
        self.flight: deque[tuple[Due, asyncio.Task[Outcome | None]]] = deque()
        self.done: list[Done] = []
        self.made = 0
        self.peak = 0  # the most attempts held at once (heap, flight and done)

    async def _load(self) -> None:
        if self.spilled:
            await self._flush()  # the retries waiting in the table are read back with the rest
        rows, self.subs = await self.store.read(lambda conn: _load(conn, self.horizon, self.loaded))
        self.exhausted = len(rows) < BATCH
        if rows:
            self.loaded = loaded = rows[-1][:4]
            ahead = self.ahead
            for row in rows:
                if row[:4] not in ahead:  # else a retry `heap` already holds
                    heapq.heappush(self.heap, row)
            if ahead:
                self.ahead = {key for key in ahead if key > loaded}
        self._note_peak()

    async def _next(self) -> Due | None:
        """The attempt to launch now, if one may launch."""
        if not self.exhausted and (
            not self.heap or self.loaded is None or self.heap[0][:4] > self.loaded
        ):
            await self._load()
        if not self.heap:
            return None
        if self.flight:
            oldest = parse_iso(self.flight[0][0].dueAt)
            if self.heap[0].dueAt >= now_iso(oldest + RETRY_AFTER[0]):
                return None
        return heapq.heappop(self.heap)

    def _collect(self) -> None:
        """Take finished attempts in launch order; hold their retries due in this pass, or
        leave them to the table (above)."""
        while self.flight and self.flight[0][1].done():
            item, task = self.flight.popleft()
            outcome = task.result()
            retry = _retry(item, outcome)
            if retry is not None and retry.dueAt <= self.horizon:
                key = retry[:4]
                if self.loaded is not None and key <= self.loaded:
                    heapq.heappush(self.heap, retry)
                elif len(self.ahead) < HELD:
                    self.ahead.add(key)
                    heapq.heappush(self.heap, retry)
                else:
                    self.spilled, self.exhausted = True, False
            self.done.append((item, outcome, retry))
        self._note_peak()

    def _note_peak(self) -> None:
        self.peak = max(self.peak, len(self.heap) + len(self.flight) + len(self.done))

    async def _flush(self) -> None:
        if self.done:
            done, self.done, self.spilled = self.done, [], False
            self.made += await self.store.write(lambda conn: _record(conn, done))

    async def run(self) -> int:
        gate = asyncio.Semaphore(CONCURRENCY)
        while True:
            while len(self.flight) < 4 * CONCURRENCY and (item := await self._next()):
                task = asyncio.ensure_future(_attempt(item, self.subs, self.sender, gate))
                self.flight.append((item, task))
            if not self.flight:
                break
            await asyncio.wait(
                [task for _, task in self.flight if not task.done()] or [self.flight[0][1]],
                return_when=asyncio.FIRST_COMPLETED,
            )
            self._collect()
            if len(self.done) >= WRITE_EVERY:
                await self._flush()
        await self._flush()
        return self.made


def any_due(conn: sqlite3.Connection, horizon: str) -> bool:
    """Whether an attempt is due at or before `horizon` (one seek of the queue's key)."""
    sql = "SELECT EXISTS (SELECT 1 FROM delivery_queue WHERE dueAt <= ?)"
    return bool(conn.execute(sql, (horizon,)).fetchone()[0])


async def process_due(store: Store, horizon: str, sender: Sender) -> int:
    """Make every attempt due at or before `horizon`; answers how many were made. Most
    advances find none due: a brief read on this thread tells so, not a hop to the database
    thread."""
    if not await store.read(lambda conn: any_due(conn, horizon), brief=True):
        return 0
    return await _Pass(store, horizon, sender).run()
