"""An in-memory database in a buffer this process owns: SQLite's memdb over a reserved region.

A plain `:memory:` database lives in SQLite's page cache, so the cache is the whole database:
every COMMIT scans it (SQLite 3.40's pcache1TruncateUnsafe, a cost that grows with the
store), and a warm start copies the whole seeded image into it. `sqlite3_deserialize`
without SQLITE_DESERIALIZE_RESIZEABLE instead uses the caller's buffer in place and lets the
database grow up to the buffer's size (memdb.c: memdbWrite enlarges only resizeable buffers,
so no 1 GiB cap), and with `PRAGMA mmap_size` > 0 reads point into the buffer
(memdbFetch): the page cache stays at its default size.

The buffer is an anonymous MAP_NORESERVE reservation of RESERVE_BYTES (address space only:
pages cost memory when written), with a seeded image mapped copy-on-write over its front on
a warm start: its pages come from the OS's file cache as they are read, and only the pages
written are copied. A database that outgrows the reservation fails its write with SQLite's
"database or disk is full" (SQLITE_FULL), its transaction rolled back.

Reaching `sqlite3_deserialize` needs the connection's `sqlite3*`, which the stdlib keeps
private: the first field after the object header of `pysqlite_Connection` in CPython 3.11 to
3.13. `handle` reads it only on those versions and checks it before any use (the pointed-to
`sqlite3` starts with its VFS, which must be the default one); anything unexpected answers
None and the caller keeps the plain `:memory:` connection, copied into as before.
"""

from __future__ import annotations

import ctypes
import functools
import mmap
import os
import sqlite3
import sys
import threading
from pathlib import Path

# Address space reserved for one in-memory database: 16 GiB, ~17x the seeded image of
# 1,000,000 contacts. Only the pages written take memory (MAP_NORESERVE); 50 workspaces
# reserve 800 GiB of the 128 TiB a 64-bit process can address.
RESERVE_BYTES = 16 << 30

_MAP_FIXED = 0x10  # Linux; not in the mmap module
_MAP_NORESERVE = 0x4000
_MAP_FAILED = ctypes.c_void_p(-1).value
_MADV_POPULATE_READ = 22
_POPULATE_STEP = 64 << 20
_LAYOUT_VERSIONS = ((3, 11), (3, 12), (3, 13))  # `sqlite3 *db` right after PyObject_HEAD


class MemdbUnavailable(Exception):
    """Why this process keeps plain `:memory:` connections (the fallback)."""


class _Native:
    """libc's mmap/munmap and the SQLite library the sqlite3 module is linked with."""

    def __init__(self) -> None:
        if sys.platform != "linux" or sys.implementation.name != "cpython":
            raise MemdbUnavailable("not CPython on Linux")
        if sys.version_info[:2] not in _LAYOUT_VERSIONS or hasattr(sys, "gettotalrefcount"):
            raise MemdbUnavailable(f"sqlite3.Connection's layout unknown on {sys.version}")
        if not hasattr(sqlite3.Connection, "deserialize"):
            raise MemdbUnavailable("SQLite built without sqlite3_deserialize")
        import _sqlite3

        # dlsym on the extension's own handle finds the library it links, whatever its path.
        lib = ctypes.CDLL(_sqlite3.__file__)
        lib.sqlite3_libversion.restype = ctypes.c_char_p
        if lib.sqlite3_libversion().decode() != sqlite3.sqlite_version:
            raise MemdbUnavailable("the SQLite library found is not the one sqlite3 uses")
        lib.sqlite3_vfs_find.restype = ctypes.c_void_p
        lib.sqlite3_vfs_find.argtypes = [ctypes.c_char_p]
        lib.sqlite3_deserialize.restype = ctypes.c_int
        lib.sqlite3_deserialize.argtypes = [
            ctypes.c_void_p,
            ctypes.c_char_p,
            ctypes.c_void_p,
            ctypes.c_int64,
            ctypes.c_int64,
            ctypes.c_uint,
        ]
        self.sqlite = lib
        self.default_vfs = lib.sqlite3_vfs_find(None)
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [
            ctypes.c_void_p,
            ctypes.c_size_t,
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_long,
        ]
        libc.madvise.restype = ctypes.c_int
        libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        libc.munmap.restype = ctypes.c_int
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        self.libc = libc


@functools.cache  # looked up once a process
def _lookup() -> _Native | MemdbUnavailable:
    try:
        return _Native()
    except (MemdbUnavailable, OSError, AttributeError) as exc:
        return MemdbUnavailable(str(exc))


def native() -> _Native:
    """The native calls; raises MemdbUnavailable where they do not hold."""
    found = _lookup()
    if isinstance(found, MemdbUnavailable):
        raise found
    return found


class Region:
    """RESERVE_BYTES of address space, `image`'s bytes mapped copy-on-write over its front.

    An image is mapped, not read: the cache renames new images into place and unlinks old
    ones, never writing a file in place, so the mapped inode stays as it was.
    """

    def __init__(self, image: Path | None = None, size: int = RESERVE_BYTES) -> None:
        calls = native().libc
        self.used = 0 if image is None else image.stat().st_size
        self.size = max(size, _round_up(self.used) * 2)
        flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_NORESERVE
        rw = mmap.PROT_READ | mmap.PROT_WRITE
        address = calls.mmap(None, self.size, rw, flags, -1, 0)
        if address in (None, _MAP_FAILED):  # no overcommit allowed, say: keep `:memory:`
            raise MemdbUnavailable(f"cannot reserve {self.size} bytes: errno {ctypes.get_errno()}")
        self.address: int | None = address
        if image is None or not self.used:
            return
        try:
            fd = os.open(image, os.O_RDONLY)
            try:
                if os.fstat(fd).st_size != self.used:
                    raise OSError(f"{image} changed while it was mapped")
                over = calls.mmap(
                    address, _round_up(self.used), rw, mmap.MAP_PRIVATE | _MAP_FIXED, fd, 0
                )
                if over != address:
                    raise OSError(ctypes.get_errno(), f"cannot map {image}")
            finally:
                os.close(fd)
            _as_rollback_journal(address, self.used)
        except BaseException:
            self.release()
            raise

    def populate_later(self) -> None:
        """Map the image's pages into the page tables on a thread (MADV_POPULATE_READ, Linux
        5.14 on; read-only, so nothing is copied): a request then finds them there rather
        than faulting them in one by one on its first visit."""
        threading.Thread(target=self._populate, daemon=True).start()

    def _populate(self) -> None:
        end = _round_up(self.used)
        for offset in range(0, end, _POPULATE_STEP):
            address = self.address
            if address is None:  # released meanwhile
                return
            length = min(_POPULATE_STEP, end - offset)
            # A range unmapped meanwhile answers an error, never a fault.
            if native().libc.madvise(address + offset, length, _MADV_POPULATE_READ):
                return  # an older kernel (EINVAL), or released: pages fault in as before

    def release(self) -> None:
        """Unmapped: only once SQLite no longer uses it (its connection closed or moved to
        another buffer)."""
        if self.address is not None:
            native().libc.munmap(self.address, self.size)
            self.address = None


def _as_rollback_journal(address: int, used: int) -> None:
    """A WAL-mode database says so in bytes 18-19 of its header, which memdb cannot open:
    marked as a rollback-journal one in this process's copy of the page."""
    if used >= 20 and ctypes.string_at(address + 18, 2) == b"\x02\x02":
        ctypes.memmove(address + 18, b"\x01\x01", 2)


def _round_up(size: int) -> int:
    return -(-size // mmap.PAGESIZE) * mmap.PAGESIZE


class MemdbConnection(sqlite3.Connection):
    """A connection whose main database may live in a `Region` it owns: the region is
    released after the connection closes, never before. One dropped without `close()` keeps
    its region mapped for good (no `__del__`: SQLite closes it after its attributes go, and a
    finalizer in Python would swallow a Ctrl-C that lands in it); the store closes its own."""

    region: Region | None = None

    def close(self) -> None:
        super().close()
        region, self.region = self.region, None
        if region is not None:
            region.release()


def handle(conn: sqlite3.Connection) -> int:
    """`conn`'s `sqlite3*`, checked: raises MemdbUnavailable rather than guess."""
    calls = native()
    pointer_size = ctypes.sizeof(ctypes.c_void_p)
    head = object.__basicsize__  # PyObject_HEAD
    if type(conn).__basicsize__ < head + pointer_size:
        raise MemdbUnavailable("sqlite3.Connection is smaller than expected")
    pointer = ctypes.c_void_p.from_address(id(conn) + head).value
    if not pointer:
        raise MemdbUnavailable("the connection is closed")
    # The `sqlite3` struct starts with its `sqlite3_vfs*`: read through /proc/self/mem,
    # which answers an error for an address that is not mapped where a read would crash.
    try:
        fd = os.open("/proc/self/mem", os.O_RDONLY)
        try:
            first = os.pread(fd, pointer_size, pointer)
        finally:
            os.close(fd)
    except OSError as exc:
        raise MemdbUnavailable(f"the connection's handle is not readable: {exc}") from exc
    if int.from_bytes(first, sys.byteorder) != calls.default_vfs:
        raise MemdbUnavailable("the connection's handle does not look like an sqlite3")
    return pointer


def _deserialize(conn: MemdbConnection, region: Region) -> None:
    """Make `region` (its first `region.used` bytes a database, or none) the main database
    of `conn`, a connection nothing ran on yet, which then owns it.

    Only a new connection: sqlite3_deserialize (3.40) frees the old schema of `main` but
    leaves pointers into it where the statements before put them (the TEMP triggers on its
    tables, an eponymous table such as json_each), which crash the next statement that
    reaches them. A restore into a live connection copies instead (emulator.store.db)."""
    rc = native().sqlite.sqlite3_deserialize(
        handle(conn), b"main", region.address, region.used, region.size, 0
    )
    if rc:
        raise sqlite3.OperationalError(f"sqlite3_deserialize failed ({rc})")
    conn.region = region
    # Reads point into the region instead of copying pages into the cache; every value
    # > 0 does (memdbFetch answers any page below the database's size).
    conn.execute(f"PRAGMA mmap_size={RESERVE_BYTES}")


def connect(image: Path | None = None, reserve: int = RESERVE_BYTES) -> MemdbConnection | None:
    """A connection on a new region holding `image` (or an empty database), or None where
    memdb cannot be used here (the caller opens a plain `:memory:` one)."""
    conn = sqlite3.connect(
        ":memory:", isolation_level=None, check_same_thread=False, factory=MemdbConnection
    )
    try:
        region = Region(image, reserve)
    except MemdbUnavailable:
        conn.close()
        return None
    except OSError as exc:  # as sqlite3 says it of an image it cannot read
        conn.close()
        raise sqlite3.OperationalError(f"unable to open database file {image}: {exc}") from exc
    except BaseException:
        conn.close()
        raise
    try:
        _deserialize(conn, region)
    except (MemdbUnavailable, sqlite3.Error):
        region.release()
        conn.close()
        return None
    if image is not None:
        region.populate_later()
    return conn
