"""Whether a delivery pass has anything to make: an attempt due at or before the horizon."""

from __future__ import annotations

import pytest

from emulator.simulation.webhooks import queue
from emulator.simulation.webhooks.sender import Sender
from emulator.store.db import Store

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
