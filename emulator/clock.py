"""The emulator's virtual clock: every timestamp the emulator writes comes from here.

Time is frozen by default: it only moves when the simulation advances it (POST
/_emulator/clock/advance). With `--clock realtime[:SPEED]` it also moves by itself, SPEED
virtual seconds per wall second; the app's ticker then runs the simulation up to `now()`.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from emulator.wire import now_iso, parse_iso

# The clock's range. Fixtures dated outside it are refused at load; the clock never moves
# past LATEST (an advance beyond it is refused), which leaves the simulation thousands of
# years of room before Python's datetime (year 9999) overflows, whatever it schedules.
LATEST = datetime(2999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC)
EARLIEST_ISO = "1970-01-01T00:00:00.000Z"
LATEST_ISO = "2999-12-31T23:59:59.999Z"


def wall_now() -> datetime:
    """The wall time, cut to the millisecond like every stored timestamp."""
    return parse_iso(now_iso())


def parse_clock(text: str) -> float | None:
    """`frozen` -> None; `realtime` -> 1.0; `realtime:SPEED` -> SPEED (> 0)."""
    mode, _, figure = text.strip().lower().partition(":")
    if mode == "frozen" and not figure:
        return None
    if mode != "realtime":
        raise ValueError(f"--clock: unknown mode {mode!r} (frozen, realtime[:SPEED])")
    if not figure:
        return 1.0
    try:
        speed = float(figure)
    except ValueError:
        raise ValueError(f"--clock: bad speed {figure!r}") from None
    if not 0 < speed < float("inf"):
        raise ValueError("--clock: the speed must be a positive number")
    return speed


class Clock:
    """Virtual time: a moment plus, in realtime mode, the wall seconds since it times `speed`."""

    def __init__(self, start: datetime | None = None, speed: float | None = None) -> None:
        self.start = start or wall_now()
        self.speed = speed
        self._at = self.start
        self._wall = time.monotonic()
        self._frozen_iso: tuple[datetime | None, str] = (None, "")  # (the moment, its ISO text)

    @property
    def mode(self) -> str:
        return "frozen" if self.speed is None else "realtime"

    def now(self) -> datetime:
        if self.speed is None:
            return self._at
        elapsed = (time.monotonic() - self._wall) * self.speed
        # whole milliseconds: what is stored must read back as the same moment; a fast
        # realtime clock stops at LATEST rather than overflow
        left = (LATEST - self._at) // timedelta(milliseconds=1)
        return self._at + timedelta(milliseconds=min(int(elapsed * 1000), max(left, 0)))

    def now_iso(self) -> str:
        if self.speed is not None:
            return now_iso(self.now())
        # Frozen: the same moment until the clock is set, formatted once (every record an
        # export writes and every call the CRM answers asks for it).
        at, text = self._frozen_iso
        if at is not self._at:
            text = now_iso(self._at)
            self._frozen_iso = (self._at, text)
        return text

    def set(self, moment: datetime) -> None:
        """Jump to `moment` (backwards too: reset and restore use it)."""
        moment = moment.astimezone(UTC)
        self._at = moment.replace(microsecond=moment.microsecond // 1000 * 1000)
        self._wall = time.monotonic()

    def move_to(self, moment: datetime) -> None:
        """Forward only: a realtime clock that is already past `moment` keeps running."""
        if moment > self.now():
            self.set(moment)

    def advance(self, seconds: float) -> None:
        self.set(self.now() + timedelta(seconds=seconds))

    def restart(self, start: datetime, current: datetime | None = None) -> None:
        """A new start (fixtures, reset) and the current time (a kept database)."""
        self.start = start
        self.set(current or start)
