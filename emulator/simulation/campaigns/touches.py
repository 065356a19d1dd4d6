"""SQLite work of a chunk run on a second thread while the chunk's own thread runs Python:
sqlite3 lets go of the GIL while SQLite steps a statement, so on a second core that work
costs the chunk next to nothing (a contact's touch ~4 us otherwise, a tenth of the bench).

What runs there (engine.py): the read of the due members' conversations while their
timelines are drawn (and of their names, in a full chunk), and the contacts' updatedAt.
Every due item makes exactly one event at its time, so each contact's updatedAt after the
chunk is known before any event is applied: the time of its last due item. A chunk of fewer
members than its item limit touches some contacts of its first members early, while it draws
the other members' timelines: those whose every item the chunk surely processes (`ahead_of`),
with their final time; the later touch leaves them out.

The work runs on the store's connection, inside the chunk's transaction (so the page
cache's TEMP triggers note a touch as any write). Meanwhile the chunk's thread reads
nothing (a read would wait for the statement, as SQLite serializes the calls on one
connection); it waits for every job before anything else writes, and before the
transaction commits or rolls back.

The thread is kept between chunks (a `Worker` per simulation; it ends after IDLE_SECONDS
without a job and starts again with the next one): starting a thread for each job cost the
chunk's thread a wait for the new one to run first, twice a chunk. The statement's JSON text
is made on the chunk's thread before the job is handed over, and a job answers one row: the
worker takes the GIL only to start, bind and step a statement and to end (a thread that
waits for the GIL while the other runs Python gets it after a switch interval, 5 ms, each
time: a read of one row per conversation, or a job picked up without the handover of
`submit`, lost the overlap).
"""

from __future__ import annotations

import queue
import sqlite3
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")
IDLE_SECONDS = 30.0  # a worker's thread ends after this long without a job


class Job(Generic[T]):
    """One call run on a Worker's thread; `wait` answers its result or raises its error."""

    def __init__(self, call: Callable[[], T]) -> None:
        self._call = call
        self._result: T | None = None
        self._error: BaseException | None = None
        self._done = threading.Lock()
        self._done.acquire()  # released once the call has run
        self.started = threading.Lock()
        self.started.acquire()  # released as the call starts

    def run(self) -> None:
        self.started.release()
        try:
            self._result = self._call()
        except BaseException as exc:  # raised again by wait(), on the caller's thread
            self._error = exc
        finally:
            self._done.release()

    def join(self) -> None:
        """Until the call has run (at once if it has)."""
        self._done.acquire()
        self._done.release()

    def wait(self) -> T:
        """`join`, then the call's result, or its error raised."""
        self.join()
        if self._error is not None:
            raise self._error
        return self._result  # type: ignore[return-value]


class Worker:
    """A thread that runs submitted calls one at a time, in the order submitted."""

    def __init__(self, idle: float = IDLE_SECONDS) -> None:
        self._idle = idle
        self._jobs: queue.SimpleQueue[Job[object]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def submit(self, call: Callable[[], T]) -> Job[T]:
        """Run `call` on the worker's thread after the calls submitted before it; with an
        SQLite not built serialized (connections not to be shared), here and now."""
        job: Job[T] = Job(call)
        if sqlite3.threadsafety != 3:
            job.run()
            return job
        with self._lock:
            # the thread before the job: one that fails to start leaves no job queued
            if self._thread is None:
                thread = threading.Thread(target=self._loop, name="simulation-worker", daemon=True)
                thread.start()
                self._thread = thread
            self._jobs.put(job)  # type: ignore[arg-type]
        # Until the worker has taken it (after the jobs submitted before it): this thread lets
        # go of the GIL meanwhile, so the worker runs at once up to its statement's step
        # (where it lets go of the GIL in turn), rather than after this thread's switch
        # interval (5 ms) of Python.
        job.started.acquire()
        return job

    def _loop(self) -> None:
        while True:
            try:
                job = self._jobs.get(timeout=self._idle)
            except queue.Empty:
                with self._lock:  # a submit puts its job and looks at the thread under it
                    if self._jobs.empty():
                        self._thread = None
                        return
                continue
            job.run()
