"""Crash truth for the POSTs that log an activity or create a task (they are not idempotent).

Before a row is sent, the intent to send it is committed to the store; when its answer is
in, its CRM id (if any) is stored and the intent deleted in one write. After a crash or a
`kill -9`, the intents left in the store are exactly the rows whose POST may have reached
the CRM without the platform keeping its id: the next run that sends one of them again names
it in its report as possibly duplicated. Every other row is logged at most once.

Writes are coalesced: the intents of the calls starting while a write is on its way share the
next commit, and the completions before them ride along, so at most the calls of one batch of
concurrent calls (`in_flight`) are ever between intent and completion. A call that finds no
write on its way writes at once itself (a brief write: no turn of the event loop lost), and
the calls that start together (the slots the answers of one turn freed) write their intents
in one such write (`ahead`) before any of them is sent.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable, Iterable, Sequence
from functools import partial
from typing import Any, Literal

from emulator.exporter.report import PossibleDuplicate

SendKind = Literal["activity", "task"]
Leftover = tuple[str, str]  # (exportId, at) of an intent an earlier run left


def read_leftovers(conn: sqlite3.Connection, kind: SendKind) -> dict[int, Leftover]:
    """The intents of `kind` that no run completed: record id -> (exportId, at)."""
    return {
        rid: (export_id, at)
        for rid, export_id, at in conn.execute(
            "SELECT recordId, exportId, at FROM export_intents WHERE kind = ?", (kind,)
        )
    }


def write_intents(
    conn: sqlite3.Connection,
    kind: SendKind,
    export_id: str,
    at: str,
    intents: Iterable[int],
    done: Iterable[int],
) -> None:
    """Note the rows about to be sent; forget the rows whose answer is in (and stored)."""
    conn.executemany(
        "INSERT OR REPLACE INTO export_intents(kind, recordId, exportId, at) VALUES (?, ?, ?, ?)",
        [(kind, rid, export_id, at) for rid in intents],
    )
    conn.executemany(
        "DELETE FROM export_intents WHERE kind = ? AND recordId = ?", [(kind, rid) for rid in done]
    )


StoreIds = Callable[[sqlite3.Connection, list[tuple[str, int]]], object]
Write = Callable[[Callable[[sqlite3.Connection], Any]], Awaitable[Any]]


class SendLog:
    """The intents and completions of one phase's POSTs, written together.

    `await before(rid)` returns once the intent to send `rid` is committed; `after(rid, crm_id)`
    queues its completion (the CRM id stored when there is one, the intent deleted), written
    with the next intents or by `flush()`; `stored(n)` is told how many CRM ids each write
    stored. One write runs at a time.
    """

    def __init__(
        self,
        kind: SendKind,
        export_id: str,
        now: Callable[[], str],
        write: Write,
        store_ids: StoreIds,
        stored: Callable[[int], None],
        leftovers: dict[int, Leftover] | None = None,
    ) -> None:
        self.kind, self.export_id, self.now = kind, export_id, now
        self._write, self._store_ids, self._stored = write, store_ids, stored
        self.leftovers = leftovers or {}
        self._intents: list[int] = []
        self._done: list[int] = []
        self._ids: list[tuple[str, int]] = []
        self._next: asyncio.Future[None] | None = None  # committed with the next write
        self._writer: asyncio.Future[None] | None = None  # a writer task, or a write of _commit()
        self._error: BaseException | None = None
        self._ready: set[int] = set()  # intents committed by `ahead`, their call not started

    def resent(self, rid: int) -> PossibleDuplicate | None:
        """The earlier run's intent for `rid`, when this run sends it again."""
        left = self.leftovers.pop(rid, None)
        if left is None:
            return None
        return PossibleDuplicate(kind=self.kind, id=rid, exportId=left[0], since=left[1])

    async def ahead(self, rids: Sequence[int]) -> None:
        """Commit the intents of calls about to start together in one write; each one's
        `before` then returns at once."""
        await self._commit(list(rids))
        self._ready.update(rids)

    async def before(self, rid: int) -> None:
        if rid in self._ready:
            self._ready.discard(rid)
            return
        await self._commit([rid])

    async def _commit(self, rids: list[int]) -> None:
        if self._error is not None:
            raise self._error
        self._intents.extend(rids)
        if self._writer is None:
            await self._write_now(rids)
            return
        if self._next is None:
            self._next = asyncio.get_running_loop().create_future()
        committed = self._next
        await asyncio.shield(committed)

    async def _write_now(self, rids: list[int]) -> None:
        """Nothing on its way to the store: these calls write their intents and whatever is
        queued themselves. A brief write of an idle store runs at once, so the POSTs go out in
        this turn of the event loop instead of two turns later (a writer task's, then its
        waiters'). What comes meanwhile (if the write must wait) is written by a writer task
        after it; if this write does not happen (cancelled while it waits, or failed and rolled
        back), what it carried is queued again, less these calls' own intents (their POSTs are
        not sent)."""
        intents, done, ids = self._take()
        writing = asyncio.get_running_loop().create_future()
        self._writer = writing  # what flush() waits for, and no other writer meanwhile
        try:
            await self._write_taken(intents, done, ids)
        except BaseException as exc:
            self._intents[:0] = [i for i in intents if i not in rids]
            self._done[:0], self._ids[:0] = done, ids
            if not isinstance(exc, asyncio.CancelledError):
                self._error = exc
            raise
        finally:
            self._writer = None
            writing.set_result(None)
            if self._error is None and (self._intents or self._done):
                self._start()  # what was queued meanwhile, and its waiters
            elif self._error is not None:
                self._fail_waiting(self._error)

    def after(self, rid: int, crm_id: str | None) -> None:
        self._done.append(rid)
        if crm_id is not None:
            self._ids.append((crm_id, rid))

    async def flush(self) -> None:
        """Write what is queued; returns when every completion so far is stored."""
        if self._writer is not None:
            await asyncio.shield(self._writer)
        if self._done or self._intents:
            self._start()
            assert self._writer is not None
            await asyncio.shield(self._writer)
        if self._error is not None:
            raise self._error

    def _fail_waiting(self, exc: BaseException) -> None:
        pending, self._next = self._next, None
        if pending is not None and not pending.done():
            pending.set_exception(exc)
            pending.exception()  # retrieved: its waiters may be gone

    def _start(self) -> None:
        if self._writer is None:
            self._writer = asyncio.create_task(self._drain())

    def _both(
        self,
        conn: sqlite3.Connection,
        at: str,
        intents: list[int],
        done: list[int],
        ids: list[tuple[str, int]],
    ) -> None:
        if ids:
            self._store_ids(conn, ids)
        write_intents(conn, self.kind, self.export_id, at, intents, done)

    def _take(self) -> tuple[list[int], list[int], list[tuple[str, int]]]:
        """Everything queued (intents, completions, ids), the queues left empty."""
        taken = self._intents, self._done, self._ids
        self._intents, self._done, self._ids = [], [], []
        return taken

    async def _write_taken(
        self, intents: list[int], done: list[int], ids: list[tuple[str, int]]
    ) -> None:
        """One write of what `_take` answered; its ids counted as stored once written."""
        await self._write(partial(self._both, at=self.now(), intents=intents, done=done, ids=ids))
        if ids:
            self._stored(len(ids))

    async def _drain(self) -> None:
        try:
            while self._intents or self._done:
                intents, done, ids = self._take()
                committed, self._next = self._next, None
                try:
                    await self._write_taken(intents, done, ids)
                except BaseException as exc:
                    if committed is not None and not committed.done():
                        if isinstance(exc, asyncio.CancelledError):
                            committed.cancel()
                        else:
                            committed.set_exception(exc)
                            committed.exception()  # retrieved: its waiter may be gone
                    raise
                if committed is not None and not committed.done():
                    committed.set_result(None)
        except Exception as exc:  # kept for before() and flush() to raise
            self._error = exc
            self._fail_waiting(exc)
        finally:
            self._writer = None
