"""One exporter at a time per `--db` file, across processes: an flock on `<db>.export-lock`.

Two exporters over one store would both see the same records as new and send them twice;
the second one is refused before it sends anything.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager


class ExportLocked(Exception):
    """Another export holds the lock of this store; the message names the lock file."""


def lock_path(db: str) -> str:
    return f"{db}.export-lock"


class ExportLock:
    """Held from `acquire` to `release` (an export run in the server spans several calls)."""

    def __init__(self, db: str) -> None:
        self.path = lock_path(db)
        self._fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise ExportLocked(
                f"another export (pid {holder}) is running on this --db: {self.path} is locked"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


@contextmanager
def export_lock(db: str | None) -> Iterator[None]:
    """Hold the export lock of `db` (nothing to hold for an in-memory store)."""
    if db is None:
        yield
        return
    lock = ExportLock(db)
    lock.acquire()
    try:
        yield
    finally:
        lock.release()
