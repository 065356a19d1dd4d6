"""The incoming calls' state of one emulator: its journal and its /v1 faults, cleared together."""

from __future__ import annotations

from emulator.calls.faults import FaultBook
from emulator.calls.journal import DEFAULT_BYTES, DEFAULT_ROWS, CallJournal


class IncomingCalls:
    """Held by the app's services (one per emulator), never a module global, so that each
    emulator of a process (a scenario's own, and later each workspace) keeps its own."""

    def __init__(self, max_rows: int = DEFAULT_ROWS, max_bytes: int = DEFAULT_BYTES) -> None:
        self.journal = CallJournal(max_rows, max_bytes)
        self.faults = FaultBook()

    def clear(self) -> None:
        """On reset (and fixture loads): no call made before, no fault armed."""
        self.journal.clear()
        self.faults.clear()
