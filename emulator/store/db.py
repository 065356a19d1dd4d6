"""The one SQLite database behind every surface, reached through aiosqlite.

All statements run on aiosqlite's single worker thread, in order. `read` and `write`
run a whole synchronous function there in one hop, so a multi-statement change is
atomic with respect to every other request and costs one thread round trip. A brief call
(`read` or `write` with `brief=True`: a page's contacts, a served create) runs on the event
loop's own thread instead once the worker has nothing queued or running: the same order,
without the hop.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

import aiosqlite

import emulator.store.binding  # noqa: F401 (for its effect: None binds as NULL at C speed)
from emulator.store import contact_changes, memdb, table_changes
from emulator.store.contact_changes import ALL, ChangeLog
from emulator.store.ddl import schema_sql

T = TypeVar("T")


def open_sync(path: str | Path | None) -> sqlite3.Connection:
    """A plain sqlite3 connection with the schema applied (also used for pristine copies)."""
    conn = connect_sync(path)
    configure(conn, on_disk=path is not None)
    return conn


def connect_sync(path: str | Path | None, image: Path | None = None) -> sqlite3.Connection:
    """The connection of the database file at `path`, else of an in-memory database (empty,
    or holding the database file `image`): SQLite's memdb in memory this process owns where
    it can be (emulator/store/memdb.py; its page cache then stays small, and an image is
    mapped rather than copied), else `:memory:` (an image then copied in)."""
    in_region = memdb.connect(image) if path is None else None
    if in_region is not None:
        return in_region
    conn = sqlite3.connect(
        ":memory:" if path is None else str(path), isolation_level=None, check_same_thread=False
    )
    if path is None and image is not None:
        try:
            restore_file(conn, image)
        except BaseException:
            conn.close()
            raise
    return conn


# Pages of a database file kept in memory: the state of `--db` stays on disk, its resident
# memory bounded (no memory-mapped reads, whose pages would count as the process's own).
DISK_CACHE_KIB = 64 * 1024


def configure(
    conn: sqlite3.Connection,
    on_disk: bool,
    cache_kib: int = DISK_CACHE_KIB,
    checkpoint_pages: int | None = None,
) -> None:
    # The TEMP tables (the triggers' notes of every write, the search index) live as long as
    # the connection, so a crash loses them whatever their journal: kept in memory, it saves
    # each transaction that writes them a journal file created and deleted (~40 us a create).
    conn.execute("PRAGMA temp.journal_mode=MEMORY")
    if on_disk:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute(f"PRAGMA cache_size=-{int(cache_kib)}")
        conn.execute("PRAGMA mmap_size=0")
        if checkpoint_pages is not None:
            conn.execute(f"PRAGMA wal_autocheckpoint={int(checkpoint_pages)}")
    conn.execute("PRAGMA foreign_keys=OFF")  # fixture loads insert in dependency-free order
    conn.executescript(schema_sql())


class Indexes:
    """The indexes `bulk_load` dropped. `build_later(table)` rebuilds one table's on a thread
    (CREATE INDEX lets go of the GIL while SQLite scans and sorts), so the caller can decode
    and check records meanwhile, as long as it leaves the connection alone until `wait()`."""

    def __init__(self, conn: sqlite3.Connection, indexes: list[tuple[str, str, str]]) -> None:
        self._conn = conn
        self._pending = indexes  # (name, table, sql)
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def build_later(self, table: str) -> None:
        self.wait()
        mine = [sql for _, on, sql in self._pending if on == table]
        self._pending = [index for index in self._pending if index[1] != table]
        self._thread = threading.Thread(target=self._build, args=(mine,), daemon=True)
        self._thread.start()

    def _build(self, statements: list[str]) -> None:
        try:
            for sql in statements:
                self._conn.execute(sql)
        except BaseException as exc:  # raised again by wait(), on the caller's thread
            self._error = exc

    def join(self) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def wait(self) -> None:
        self.join()
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def build_except(self, tables: tuple[str, ...]) -> None:
        """Build now the indexes of every table but `tables` (those still to be written)."""
        self.wait()
        for _, on, sql in self._pending:
            if on not in tables:
                self._conn.execute(sql)
        self._pending = [index for index in self._pending if index[1] in tables]

    def build_rest(self) -> None:
        self.wait()
        for _, _, sql in self._pending:
            self._conn.execute(sql)
        self._pending = []


def bulk_load(
    conn: sqlite3.Connection, fill: Callable[[sqlite3.Connection, Indexes], None]
) -> None:
    """Run `fill` with the indexes dropped and rebuild them after (bulk inserts go 2x faster)."""
    dropped = conn.execute(
        "SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
    ).fetchall()
    for name, _, _ in dropped:
        conn.execute(f'DROP INDEX "{name}"')
    indexes = Indexes(conn, dropped)
    try:
        fill(conn, indexes)
    finally:
        indexes.join()  # no thread may use the connection once this returns
    indexes.build_rest()


def collect_changes(conn: sqlite3.Connection) -> tuple[tuple[int | None, int], list[str]]:
    """contact_changes.collect and table_changes.collect of the writing transaction, in as
    few statements as what was noted allows: most writes (the CRM's tables, the export
    journal, a simulation's events) touch no watched table, and one statement reads that."""
    low, added, contacts, companies, tables = conn.execute(NOTED_SQL).fetchone()
    noted = (low, added, contacts, companies)
    changes = contact_changes.collect(conn, noted) if any(noted) else (None, 0)
    return changes, table_changes.collect(conn) if tables else []


# contact_changes.NOTED_SQL, and whether table_watch holds a row.
NOTED_SQL = f"{contact_changes.NOTED_SQL}, EXISTS (SELECT 1 FROM temp.table_watch)"


def read_meta(conn: sqlite3.Connection, key: str) -> str | None:
    """A `meta` value, inside a read or write function (Store.get_meta from async code)."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def write_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO meta(key, value) VALUES (?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def select_page(
    conn: sqlite3.Connection,
    table: str,
    columns: str,
    clauses: Sequence[str],
    params: Sequence[Any],
    page: int,
    size: int,
    order: str = "id",
) -> tuple[int, list[tuple[Any, ...]]]:
    """(total, rows of one page) of `table` where every clause holds, read in one go."""
    where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    (total,) = conn.execute(f"SELECT count(*) FROM {table}{where}", params).fetchone()
    offset = (page - 1) * size
    if offset >= total:  # past the end (also pages whose offset no SQLite integer holds)
        return int(total), []
    rows = conn.execute(
        f"SELECT {columns} FROM {table}{where} ORDER BY {order} LIMIT ? OFFSET ?",
        [*params, size, offset],
    ).fetchall()
    return int(total), rows


def restore_into(conn: sqlite3.Connection, image: bytes) -> None:
    """Overwrite the database of `conn` with a serialized database image."""
    if image[18:20] == b"\x02\x02":
        # The image of a WAL-mode file says WAL in its header (bytes 18-19), which an
        # in-memory database cannot open: mark it as a rollback-journal database.
        image = image[:18] + b"\x01\x01" + image[20:]
    source = sqlite3.connect(":memory:")
    try:
        source.deserialize(image)
        source.backup(conn)
    finally:
        source.close()


def restore_file(conn: sqlite3.Connection, path: Path) -> None:
    """Overwrite the database of `conn` with the database file at `path` (read only)."""
    source = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        source.backup(conn)
    finally:
        source.close()


def open_restored(image: Path) -> sqlite3.Connection:
    """An in-memory connection as `Store.open(None)` makes it, then holding the database
    file `image` as `Store.restore_path` puts it: the same statements, on any thread (a
    warm start reads its image while the server's modules import: emulator/image_preload.py).
    """
    conn = connect_sync(None, image)
    try:
        configure(conn, on_disk=False)  # the image's schema already: adds nothing to it
        contact_changes.install(conn)
        table_changes.install(conn)
    except BaseException:
        conn.close()
        raise
    return conn


# How long a background step waits at most for the database thread to be free of requests.
IDLE_WAIT = 0.5


class Store:
    """Async facade over the database; `version` grows on every write (cache invalidation),
    and `contacts` logs the lowest contact id each write touched (finer page caches)."""

    def __init__(self, db: aiosqlite.Connection, path: str | None) -> None:
        self._db = db
        self.path = path
        self.closed = False
        self.version = 0
        self.contacts = ChangeLog()
        self._tables: dict[str, int] = {}  # watched table -> the version of its last write
        self._restored = 0  # the version of the last restore of the whole database
        self._asking = 0  # calls waiting for the database thread, other than background steps
        self._unasked: asyncio.Future[None] | None = None  # set when `_asking` drops to 0
        self._queued = 0  # calls sent to the database thread and not yet answered
        self._idle: asyncio.Future[None] | None = None  # set when `_queued` drops to 0
        self._briefs = 0  # brief calls waiting for the database thread to be idle
        self._briefs_gone: asyncio.Future[None] | None = None  # set when `_briefs` drops to 0

    @classmethod
    async def open(
        cls,
        path: str | Path | None = None,
        cache_kib: int = DISK_CACHE_KIB,
        checkpoint_pages: int | None = None,
    ) -> Store:
        """Open (and create) the database: in memory by default, a WAL file with `path`
        whose pages SQLite keeps `cache_kib` KiB of in memory, and whose log a commit copies
        into the file once it holds `checkpoint_pages` pages (None: SQLite's default)."""
        # Not only from its worker thread: a simulation chunk touches contacts from a second
        # thread inside its transaction (simulation/campaigns/touches.py); SQLite serializes the calls.
        connecting = aiosqlite.Connection(lambda: connect_sync(path), iter_chunk_size=64)
        try:
            db = await connecting
        except BaseException:
            # Cut short (Ctrl-C): aiosqlite stops its thread without waiting, and the thread
            # then answers into this loop, which may be closed by then (a traceback).
            await asyncio.to_thread(connecting._thread.join)
            raise
        store = cls(db, None if path is None else str(path))
        try:
            await store.read(
                lambda conn: configure(conn, path is not None, cache_kib, checkpoint_pages)
            )
            await store.read(contact_changes.install)
            await store.read(table_changes.install)
        except BaseException:  # not a database, read-only...: its thread must not outlive it
            await db.close()
            raise
        return store

    @classmethod
    async def adopt(cls, conn: sqlite3.Connection) -> Store:
        """An in-memory store on `conn`, one `open_restored` made (a whole database
        restored into it, as `restore_path` counts it); the store owns it from then on."""
        db = await aiosqlite.Connection(lambda: conn, iter_chunk_size=64)
        store = cls(db, None)
        store._bump(ALL, None)
        return store

    async def close(self) -> None:
        self.closed = True  # background builders stopped by it say nothing
        await self._db.close()

    async def fetchall(
        self, sql: str, params: Sequence[Any] = (), *, brief: bool = False
    ) -> list[tuple[Any, ...]]:
        rows = await self.read(lambda conn: conn.execute(sql, params).fetchall(), brief=brief)
        return list(cast("Iterable[tuple[Any, ...]]", rows))  # sqlite3's rows are plain tuples

    async def fetchone(
        self, sql: str, params: Sequence[Any] = (), *, brief: bool = False
    ) -> tuple[Any, ...] | None:
        for row in await self.fetchall(sql, params, brief=brief):
            return row
        return None

    async def read(self, fn: Callable[[sqlite3.Connection], T], *, brief: bool = False) -> T:
        """Run `fn(conn)` on the database thread; for reads that take several statements.

        `brief`: `fn` takes a millisecond at most (a page of contacts: ~0.4 ms). It then runs
        on the calling (event loop's) thread once the database thread is idle, ahead of the
        calls asked after it (nothing else uses the connection then): on the database thread,
        SQLite lets go of the GIL at every row and statement, and each waited for it again
        while the loop served other requests."""
        if brief:
            await self._until_idle()
            if not self.closed:
                return fn(self._db._conn)
        self._asking += 1
        try:
            return await self._run(fn)
        finally:
            self._asked()

    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        # aiosqlite runs queued callables on its worker thread; `_execute` is how it does so
        # for its own methods, and the only way to run several statements in one hop.
        while self._briefs:  # brief calls waiting for the thread to be idle go first
            if self._briefs_gone is None:
                self._briefs_gone = asyncio.get_running_loop().create_future()
            await asyncio.shield(self._briefs_gone)
        self._queued += 1
        try:
            return await self._db._execute(fn, self._db._conn)  # type: ignore[no-any-return]
        finally:
            self._queued -= 1
            if not self._queued and self._idle is not None:
                idle, self._idle = self._idle, None
                idle.set_result(None)

    async def _until_idle(self) -> None:
        """Wait until nothing is queued or running on the database thread. Calls asked
        meanwhile wait too (`_run`): only what runs or is queued now comes first, so the
        wait is bounded by it."""
        if not self._queued:
            return
        loop = asyncio.get_running_loop()
        self._briefs += 1
        self._asking += 1  # background steps give way to it, as to a queued call
        try:
            while self._queued:
                if self._idle is None:
                    self._idle = loop.create_future()
                await asyncio.shield(self._idle)
        finally:
            self._asked()
            self._briefs -= 1
            if not self._briefs and self._briefs_gone is not None:
                gone, self._briefs_gone = self._briefs_gone, None
                gone.set_result(None)

    def _asked(self) -> None:
        """One call fewer asking for the database thread; background steps waiting for none
        to ask go once none does."""
        self._asking -= 1
        if not self._asking and self._unasked is not None:
            unasked, self._unasked = self._unasked, None
            unasked.set_result(None)

    async def read_in_background(
        self, fn: Callable[[sqlite3.Connection], T], *, brief: bool = False
    ) -> T:
        """`read` for a step of background work (an index built in chunks): it waits until no
        request waits for the database thread, so requests do not queue behind its steps,
        but at most IDLE_WAIT seconds (a load that never pauses still lets it go on).

        `brief`: a step of a few milliseconds at most, run on the calling (event loop's)
        thread when the database thread is idle, as a brief `write` is: on the database
        thread, a step waits for the GIL before each statement while the loop is busy, and
        brief writes would wait for it all that time.

        The wait is woken when the last request asking is answered, not polled: a poll every
        2 ms woke the event loop all through a long write (a simulation chunk: ~60 times over
        the bench's second and third one-day advances), and each time the write's thread
        handed it the GIL and waited to get it back."""
        if self._asking:
            loop = asyncio.get_running_loop()
            ends = loop.time() + IDLE_WAIT
            try:
                async with asyncio.timeout_at(ends):
                    while self._asking:
                        if self._unasked is None:
                            self._unasked = loop.create_future()
                        await asyncio.shield(self._unasked)
            except TimeoutError:
                pass  # a load that never pauses: go on after all
        if brief and not self._queued and not self.closed:
            return fn(self._db._conn)
        return await self._run(fn)

    async def write(self, fn: Callable[[sqlite3.Connection], T], *, brief: bool = False) -> T:
        """Run `fn(conn)` in one transaction on the database thread; roll back if it raises.

        `brief`: `fn` is a few statements on indexed rows (~100 us). It then runs on the
        calling (event loop's) thread as soon as the database thread has nothing to do, ahead
        of the calls asked after it: the hop there costs more than the write (the worker
        waits for the GIL before each statement while the loop serves other requests, a
        switch interval each time), and creates queued behind one another would keep the
        worker busy, so that each next create queued too.
        """

        # Unknown until the transaction commits: a write cancelled on the way counts as all.
        touched: int | None = ALL
        added = 0
        tables: list[str] | None = None

        def in_transaction(conn: sqlite3.Connection) -> T:
            nonlocal touched, added, tables
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = fn(conn)
                (low, count), written = collect_changes(conn)
            except BaseException:
                conn.execute("ROLLBACK")
                touched, tables = None, []  # the triggers' notes are rolled back with the rest
                raise
            conn.execute("COMMIT")
            touched, added, tables = low, count, written
            return result

        try:
            return await self.read(in_transaction, brief=brief)
        finally:
            self._bump(touched, tables, added)

    def _bump(self, touched: int | None, tables: list[str] | None, added: int = 0) -> None:
        """One more version: `touched` the lowest contact id, `tables` the watched tables
        it wrote (None: any of them), `added` the contacts it added less those it deleted."""
        self.version += 1
        self.contacts.note(self.version, touched, added)
        if tables is None:
            self._restored = self.version
        else:
            for table in tables:
                self._tables[table] = self.version

    @property
    def restored(self) -> int:
        """The version of the last restore of the whole database (0: none since opened)."""
        return self._restored

    def changed(self, table: str) -> int:
        """The version of the last write to `table`, one of table_changes.WATCHED."""
        return max(self._tables.get(table, 0), self._restored)

    async def page(
        self,
        table: str,
        columns: str,
        clauses: Sequence[str],
        params: Sequence[Any],
        page: int,
        size: int,
    ) -> tuple[int, list[tuple[Any, ...]]]:
        """`select_page` in one db-thread hop (count and rows agree: no write comes between)."""
        return await self.read(
            lambda conn: select_page(conn, table, columns, clauses, params, page, size)
        )

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """One writing statement in its own transaction; answers lastrowid."""
        return await self.write(lambda conn: conn.execute(sql, params).lastrowid or 0)

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        await self.write(lambda conn: conn.executemany(sql, rows))

    async def get_meta(self, key: str) -> str | None:
        return await self.read(lambda conn: read_meta(conn, key))

    async def set_meta(self, key: str, value: str) -> None:
        await self.write(lambda conn: write_meta(conn, key, value))

    async def restore(self, image: bytes) -> None:
        """Overwrite the whole database with a serialized image (see `serialize`)."""
        await self.read(lambda conn: restore_into(conn, image))
        self._bump(ALL, None)

    async def restore_path(self, path: Path) -> None:
        """Overwrite the whole database with the database file at `path`."""
        await self.read(lambda conn: restore_file(conn, path))
        self._bump(ALL, None)

    async def serialize(self) -> bytes:
        """The whole database as bytes (a snapshot)."""
        return await self.read(lambda conn: conn.serialize())
