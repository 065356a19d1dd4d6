"""Contacts' updatedAt written on a second thread while the chunk's own thread applies its
events: sqlite3 lets go of the GIL while SQLite steps the one UPDATE, so on a second core it
costs the chunk next to nothing (~4 us a contact otherwise, a tenth of the bench's time).

Every due item makes exactly one event at its time, so each contact's updatedAt after the
chunk is known before any event is applied: the time of its last due item. A chunk of fewer
members than its item limit starts a first Touches earlier, for the contacts of its first
members, while it draws the other members' timelines (engine.py: only with the times of
items the chunk surely processes, `ahead_of`); a contact touched then with its final time is
left out of the second.

The UPDATE runs on the store's connection, inside the chunk's transaction (so the page
cache's TEMP triggers note it as any write). Meanwhile the chunk's thread reads nothing
(engine.prefetch read it up front; a read would wait for the UPDATE, as SQLite serializes
the calls on one connection, and would not read `contacts`); `wait` joins the thread before
anything else writes, and before the transaction commits or rolls back.
"""

from __future__ import annotations

import sqlite3
import threading

from emulator.platform import contacts as platform_contacts


class Touches:
    """One `platform.contacts.touch` of these rows, running from construction on."""

    def __init__(self, conn: sqlite3.Connection, rows: list[tuple[str, int]]) -> None:
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        if rows and sqlite3.threadsafety != 3:  # SQLite not built serialized: no sharing
            self._run(conn, rows)
        elif rows:
            self._thread = threading.Thread(
                target=self._run, args=(conn, rows), name="simulation-touches", daemon=True
            )
            self._thread.start()

    def _run(self, conn: sqlite3.Connection, rows: list[tuple[str, int]]) -> None:
        try:
            platform_contacts.touch(conn, rows)
        except BaseException as exc:  # raised again by wait(), on the chunk's thread
            self._error = exc

    def join(self) -> None:
        """Until the UPDATE is done (or there was nothing to do)."""
        if self._thread is not None:
            self._thread.join()

    def wait(self) -> None:
        """`join`, then raise the UPDATE's error if it failed."""
        self.join()
        if self._error is not None:
            raise self._error
