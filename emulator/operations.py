"""One state-changing control operation at a time on one store (reset, fixtures, restore,
snapshot, clock advance, export run): the next one waits a moment, then is refused as Busy.

Waiting briefly covers the realtime clock's ticks and quick operations; a long advance or
export makes the caller retry instead of holding an HTTP request open for minutes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

WAIT_SECONDS = 2.0


class Busy(Exception):
    """Another control operation holds the store: `running` names it."""

    def __init__(self, wanted: str, running: str, seconds: float) -> None:
        self.wanted, self.running = wanted, running
        super().__init__(
            f"busy: {running} is running (for {seconds:.1f} s); retry the {wanted} when it ends"
        )


class Operations:
    """The guard of one Emulator's state; `running` is the operation that holds it."""

    def __init__(self, wait_seconds: float = WAIT_SECONDS) -> None:
        self.wait_seconds = wait_seconds
        self.running: str | None = None
        self._since = 0.0
        self._lock = asyncio.Lock()

    async def acquire(
        self, name: str, wanted: str | None = None, wait: float | None = None
    ) -> None:
        """Hold the guard as `name`; Busy after `wait` seconds (default: wait_seconds)."""
        wait = self.wait_seconds if wait is None else wait
        if not self._lock.locked():
            await self._lock.acquire()  # free: taken at once (wait_for(..., 0) would not)
        elif wait <= 0:
            raise self._busy(wanted or name)
        else:
            try:
                await asyncio.wait_for(self._lock.acquire(), wait)
            except TimeoutError:
                raise self._busy(wanted or name) from None
        self.running, self._since = name, time.monotonic()

    def release(self) -> None:
        """Let the next operation in (an export run releases from its own task)."""
        self.running = None
        self._lock.release()

    @asynccontextmanager
    async def exclusive(
        self, name: str, wanted: str | None = None, wait: float | None = None
    ) -> AsyncIterator[None]:
        await self.acquire(name, wanted, wait)
        try:
            yield
        finally:
            self.release()

    def _busy(self, wanted: str) -> Busy:
        return Busy(wanted, self.running or "another operation", time.monotonic() - self._since)
