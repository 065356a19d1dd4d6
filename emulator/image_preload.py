"""A start's seeded image, made the in-memory database before the store opens.

The image is mapped copy-on-write as the database's buffer (SQLite's memdb over memory this
process owns: emulator/store/memdb.py), so a start reads none of its ~950 MB at 1,000,000
contacts: pages come from the OS's file cache as requests touch them. Where that cannot be
had the image is copied into a `:memory:` database instead (SQLite's backup: about a second
at that size, most of it the kernel handing out pages). `emulator serve` opens it on its
main thread, before the event loop runs, and the store adopts that connection when it
opens: the statements are those of `Store.open` then `Store.restore_path`
(`emulator.store.db.open_restored`), only elsewhere. The main thread because glibc grows its
heap in large steps, where a thread's heap grows one mprotect call per page SQLite allocates
(~0.4 s more for a copy at 1,000,000 contacts). On a warm start (the image cached, the
files' digest remembered: no seeding process) the server's modules import on another thread
meanwhile: a map takes no time, and sqlite3 lets go of the GIL while a copy runs.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

from emulator.fixtures.image_cache import ImageCache, remembered_digest
from emulator.store.db import open_restored


class ImagePreload:
    """The seeded image at `image`, to be opened as a new in-memory connection (`load`)
    and then taken by the store (`connection`)."""

    def __init__(self, image: Path) -> None:
        self.image = image
        self._conn: sqlite3.Connection | None = None
        self._error: sqlite3.Error | OSError | None = None

    @classmethod
    def find(cls, directory: str | Path, cache: str | Path) -> ImagePreload | None:
        """The image of `directory`'s files in `cache`, or None: none there, or their digest
        not remembered (files changed since: hashed again, and seeded if need be, by the
        seeding process)."""
        digest = remembered_digest(directory, cache)
        image = None if digest is None else ImageCache(cache).find(digest)
        return None if image is None else cls(image)

    def load(self, meanwhile: Callable[[], object] | None = None) -> None:
        """Open the image on this thread, `meanwhile` running on another one until both are
        done (what it raises is dropped: it only warms up). An open that fails is raised by
        `connection()`, where the store opens and its errors are reported."""
        helper = None
        if meanwhile is not None:
            helper = threading.Thread(target=_quietly, args=(meanwhile,), daemon=True)
            helper.start()
        try:
            self._conn = open_restored(self.image)
        except (sqlite3.Error, OSError) as exc:
            self._error = exc
        finally:
            if helper is not None:
                helper.join()

    def connection(self) -> sqlite3.Connection:
        """The connection holding the image (the caller owns it from then on); raises what
        the copy raised (an unreadable image)."""
        if self._error is not None:
            raise self._error
        conn, self._conn = self._conn, None
        if conn is None:
            raise RuntimeError("the seeded image was not loaded, or was taken already")
        return conn

    def close(self) -> None:
        """The connection closed unless it was taken (a start that ended before its store
        opened)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def _quietly(work: Callable[[], object]) -> None:
    try:
        work()
    except Exception:  # the same work is done again where it is needed, and fails there
        return
