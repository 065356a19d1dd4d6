"""The delivery queue: whether a pass has anything to make (an attempt due at or before the
horizon), the order it logs attempts in, and how many it holds at once."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from itertools import accumulate
from typing import cast

import pytest

from emulator.outbound.calls import Outcome
from emulator.simulation.webhooks import queue
from emulator.simulation.webhooks.sender import Sender
from emulator.store.db import Store
from emulator.wire import now_iso

pytestmark = pytest.mark.anyio
DUE = "2026-01-01T00:10:00.000Z"


async def test_an_attempt_is_due_from_its_due_time_on() -> None:
    store = await Store.open()
    try:
        async with Sender() as sender:
            assert await queue.process_due(store, DUE, sender) == 0  # an empty queue
        row = (DUE, queue.WEBHOOK, 1, 1, 1, "EMAIL_SENT", None, "{}")
        await store.write(lambda conn: queue.enqueue(conn, [row]))
        assert not await store.read(lambda conn: queue.any_due(conn, "2026-01-01T00:09:59.999Z"))
        assert await store.read(lambda conn: queue.any_due(conn, DUE))
        assert await store.read(lambda conn: queue.any_due(conn, "2026-01-02T00:00:00.000Z"))
    finally:
        await store.close()


T0 = datetime(2026, 1, 1, tzinfo=UTC)
OFFSETS = (timedelta(0), *accumulate(queue.RETRY_AFTER))  # of attempts 1-4 after the first


class Refused:
    """A sender whose every POST fails, as to a receiver that refuses the connection: every
    attempt is made 4 times."""

    def __init__(self) -> None:
        self.posts = 0

    async def post(self, url: str, headers: object, body: bytes) -> Outcome:
        self.posts += 1
        await asyncio.sleep(0)
        return Outcome(ok=False, statusCode=None, errorMessage="refused", durationMs=0)


def body(i: int) -> tuple[str, None, str]:
    return "EMAIL_SENT", None, f'{{"n": {i}}}'


async def failing_pass(events: int, gap: int) -> tuple[list[tuple[int, int, str]], int]:
    """`events` events `gap` s apart, each for 2 subscriptions, every attempt failing, in one
    pass: the log (webhookId, attempt, createdAt) in id order, and the pass's peak."""
    store = await Store.open()
    try:
        await store.executemany(
            "INSERT INTO webhooks(id, name, url, events, createdAt, updatedAt)"
            " VALUES (?, 'h', 'http://127.0.0.1:9/h', '[\"EMAIL_SENT\"]', ?, ?)",
            [(hook, now_iso(T0), now_iso(T0)) for hook in (1, 2)],
        )
        rows = [
            (now_iso(T0 + timedelta(seconds=i * gap)), queue.WEBHOOK, i + 1, hook, 1, *body(i))
            for i in range(events)
            for hook in (1, 2)
        ]
        await store.write(lambda conn: queue.enqueue(conn, rows))
        sender = Refused()
        horizon = now_iso(T0 + timedelta(seconds=events * gap, hours=1))
        run = queue._Pass(store, horizon, cast(Sender, sender))
        assert await run.run() == sender.posts == 4 * len(rows)
        log = await store.fetchall(
            "SELECT webhookId, attemptNumber, createdAt FROM webhook_deliveries ORDER BY id"
        )
        assert not await store.fetchall("SELECT * FROM delivery_queue")  # every attempt made
        return [tuple(row) for row in log], run.peak
    finally:
        await store.close()


@pytest.mark.parametrize("gap", [1, 7, 400])  # retries 30 s, 5 and 50 min after: interleaved
async def test_a_pass_logs_in_key_order_holding_a_bounded_number_of_attempts(
    monkeypatch: pytest.MonkeyPatch, gap: int
) -> None:
    monkeypatch.setattr(queue, "BATCH", 8)
    monkeypatch.setattr(queue, "CONCURRENCY", 2)
    monkeypatch.setattr(queue, "HELD", 8)
    monkeypatch.setattr(queue, "WRITE_EVERY", 8)
    for events in (50, 400):
        log, peak = await failing_pass(events, gap)
        # every attempt of every (event, subscription), in the order of their keys
        expected = sorted(
            (T0 + timedelta(seconds=i * gap) + OFFSETS[n], i + 1, hook, n + 1)
            for i in range(events)
            for hook in (1, 2)
            for n in range(queue.ATTEMPTS)
        )
        assert log == [(hook, n, now_iso(due)) for due, _, hook, n in expected]
        # HELD retries after the rows read; a batch read and the attempts in flight, each with
        # up to 3 retries due within the rows read; the attempts not yet written: however many
        # attempts the pass makes
        assert peak <= 8 + 4 * (8 + 4 * 2) + 8 < len(log)
