"""How far a running clock advance has got, told to its caller after each write chunk.

`Simulation.advance_to(..., progress=callback)` calls `callback(AdvanceProgress)` on the event
loop after each chunk is written and the clock moved to it (cheap: no I/O in the callback).
The callback may raise AdvanceStopped to end the advance there: the chunks written stand, the
clock stays where they took it, the listeners run for that moment, and the AdvanceResult says
so (`now` is the moment reached).
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec


class AdvanceProgress(msgspec.Struct, kw_only=True):
    previous: str  # ISO 8601: the clock when the advance started
    target: str  # ISO 8601: where it is going
    reached: str  # ISO 8601: the simulated time done so far
    events: int  # events written so far


class AdvanceStopped(Exception):
    """Raised by a progress callback: stop the advance after the chunk just written."""


Progress = Callable[[AdvanceProgress], None]


def report(progress: Progress, previous: str, target: str, reached: str, events: int) -> bool:
    """Tell `progress` how far the advance got; False when it asked to stop there."""
    try:
        progress(AdvanceProgress(previous=previous, target=target, reached=reached, events=events))
    except AdvanceStopped:
        return False
    return True
