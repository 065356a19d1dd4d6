"""The emulator's clock: every timestamp the emulator writes comes from here."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from emulator.wire import now_iso


class Clock:
    """Wall-clock time shifted by an offset that `advance` grows (virtual time)."""

    def __init__(self) -> None:
        self._offset = timedelta(0)

    def now(self) -> datetime:
        return datetime.now(timezone.utc) + self._offset

    def now_iso(self) -> str:
        return now_iso(self.now())

    def advance(self, seconds: float) -> None:
        self._offset += timedelta(seconds=seconds)
