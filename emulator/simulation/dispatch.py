"""The simulation listener of webhooks and actions runs (registered after each clock advance)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import datetime

from emulator.simulation.actions.runs import step_runs
from emulator.simulation.webhooks.events import enqueue_events
from emulator.simulation.webhooks.queue import Sender, process_due
from emulator.state import Emulator
from emulator.wire import now_iso

log = logging.getLogger(__name__)
LAST_ERROR = "deliveries.lastError"


class DeliveryListener:
    """`await listener(target)`: queue what happened up to `target`, then make every attempt
    due by then. Errors are logged and kept in meta `deliveries.lastError`, never raised."""

    def __init__(
        self,
        emulator: Emulator,
        exports: Callable[[datetime], Awaitable[None]] | None = None,
    ) -> None:
        self.emulator = emulator
        self.exports = exports  # actions runs' EXPORT_TO_CRM, before their completions go
        self.made = 0  # attempts made since start (benchmarks read it)

    async def __call__(self, target: datetime) -> None:
        store = self.emulator.db
        try:
            horizon = now_iso(target)
            await enqueue_events(store, horizon)
            await step_runs(store, target)
            if self.exports is not None:
                await self.exports(target)
            async with Sender(
                self.emulator.settings.outgoingDeadline
            ) as sender:  # opens a client only when something is due
                self.made += await process_due(store, horizon, sender)
        except Exception as exc:
            log.exception("webhook/actions deliveries up to %s failed", target)
            await store.set_meta(LAST_ERROR, f"{now_iso(target)}: {type(exc).__name__}: {exc}")
