"""Writes of a chunk that run on a second thread while the chunk's own thread applies its
events: sqlite3 lets go of the GIL while SQLite steps a statement, so on a second core they
cost the chunk next to nothing.

First the contacts' updatedAt (~4 us a contact otherwise, a tenth of the bench's time): every
due item makes exactly one event at its time, so each contact's updatedAt after the chunk is
known before any event is applied (the time of its last due item). Then, in order, the rows
the applying thread hands over as it goes (`add`: the conversations, messages, tasks and
events of the items applied so far, ~3 us an event otherwise), so most of them are written
by the time the last item is applied. Everything runs on the store's connection, inside the
chunk's transaction (so the page cache's TEMP triggers note it as any write), in the order it
was handed over (events take their ids in insertion order). Meanwhile the applying thread
reads nothing (engine.prefetch read it up front; a read would wait for a statement, as
SQLite serializes the calls on one connection, and would see rows of its own chunk);
`wait` joins the thread before anything else writes, and before the transaction commits or
rolls back.
"""

from __future__ import annotations

import queue
import sqlite3
import threading
from collections.abc import Callable

from emulator.platform import contacts as platform_contacts

Write = Callable[[sqlite3.Connection], None]


class Touches:
    """One `platform.contacts.touch` of these rows, running from construction on, then the
    writes handed over by `add`, one after another."""

    def __init__(self, conn: sqlite3.Connection, rows: list[tuple[str, int]]) -> None:
        self._conn = conn
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._writes: queue.SimpleQueue[Write | None] = queue.SimpleQueue()
        if sqlite3.threadsafety != 3:  # SQLite not built serialized: no sharing
            self._inline = True
            if rows:
                self._run_one(lambda c: platform_contacts.touch(c, rows))
            return
        self._inline = False
        if rows:
            self.add(lambda c: platform_contacts.touch(c, rows))

    def add(self, write: Write) -> None:
        """Run `write(conn)` after those handed over before (inline without a second
        thread); after a failed write, nothing more runs and `wait` raises its error."""
        if self._inline:
            self._run_one(write)
            return
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="simulation-touches", daemon=True
            )
            self._thread.start()
        self._writes.put(write)

    def _run_one(self, write: Write) -> None:
        if self._error is None:
            try:
                write(self._conn)
            except BaseException as exc:  # raised again by wait(), on the chunk's thread
                self._error = exc

    def _run(self) -> None:
        while (write := self._writes.get()) is not None:
            self._run_one(write)

    def join(self) -> None:
        """Until every write handed over is done (or skipped after an error)."""
        if self._thread is not None:
            self._writes.put(None)
            self._thread.join()
            self._thread = None

    def wait(self) -> None:
        """`join`, then raise the first write's error if one failed."""
        self.join()
        if self._error is not None:
            raise self._error
