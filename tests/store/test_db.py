"""Store: background steps give way to requests waiting for the database thread."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from emulator.platform.seed import seed
from emulator.settings import Settings
from emulator.state import Emulator
from emulator.store import db
from emulator.store.db import Store

pytestmark = pytest.mark.anyio


async def test_a_background_step_lets_a_request_asked_after_it_go_first() -> None:
    store = await Store.open()
    ran: list[str] = []

    def slow(conn: sqlite3.Connection) -> None:
        time.sleep(0.05)
        ran.append("first request")

    def note(name: str) -> Callable[[sqlite3.Connection], None]:
        return lambda conn: ran.append(name)

    try:
        first = asyncio.ensure_future(store.read(slow))
        await asyncio.sleep(0)
        step = asyncio.ensure_future(store.read_in_background(note("background step")))
        await asyncio.sleep(0)
        later = asyncio.ensure_future(store.read(note("later request")))
        await asyncio.gather(first, step, later)
        assert ran == ["first request", "later request", "background step"]
    finally:
        await store.close()


async def test_a_background_step_still_runs_under_a_load_that_never_pauses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(db, "IDLE_WAIT", 0.1)
    store = await Store.open()
    stop = False

    async def load() -> None:
        ends = time.perf_counter() + 10  # without the bound, the step would run only then
        while not stop and time.perf_counter() < ends:
            await store.fetchall("SELECT 1")

    try:
        loads = [asyncio.ensure_future(load()) for _ in range(4)]
        began = time.perf_counter()
        assert await store.read_in_background(lambda conn: 7) == 7
        assert time.perf_counter() - began < 5  # waited its bound, not for the load to end
        stop = True
        await asyncio.gather(*loads)
    finally:
        await store.close()


async def test_a_background_step_waits_for_a_long_request_without_waking_the_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """It is woken when the request is answered: a loop woken every few milliseconds takes
    the GIL from the request's thread each time (a simulation chunk's)."""
    store = await Store.open()
    ran: list[str] = []
    naps: list[float] = []
    sleep = asyncio.sleep

    async def counted(delay: float, *args: object) -> object:
        naps.append(delay)
        return await sleep(delay, *args)

    def slow(conn: sqlite3.Connection) -> None:
        time.sleep(0.1)
        ran.append("request")

    try:
        request = asyncio.ensure_future(store.read(slow))
        await asyncio.sleep(0)
        monkeypatch.setattr(asyncio, "sleep", counted)
        step = store.read_in_background(lambda conn: ran.append("background step"), brief=True)
        await asyncio.gather(request, step)
        assert ran == ["request", "background step"]
        assert naps == []
    finally:
        monkeypatch.undo()
        await store.close()


async def test_a_db_file_keeps_the_pages_it_was_opened_with_in_memory(tmp_path: Path) -> None:
    """PRAGMA cache_size in KiB is negative: the bound the process's resident memory gets."""
    default = await Store.open(tmp_path / "default.db")
    small = await Store.open(tmp_path / "small.db", cache_kib=2048)
    try:
        assert await default.fetchall("PRAGMA cache_size") == [(-db.DISK_CACHE_KIB,)]
        assert await small.fetchall("PRAGMA cache_size") == [(-2048,)]
        assert await small.fetchall("PRAGMA mmap_size") == [(0,)]
    finally:
        await default.close()
        await small.close()


async def test_an_emulator_opens_its_db_file_with_the_settings_cache(tmp_path: Path) -> None:
    emulator = Emulator(Settings(db=str(tmp_path / "state.db"), dbCacheKib=4096), seeders=[seed])
    await emulator.start()
    try:
        assert await emulator.db.fetchall("PRAGMA cache_size") == [(-4096,)]
    finally:
        await emulator.close()


async def test_a_db_file_copies_its_log_in_after_the_pages_it_was_opened_with(
    tmp_path: Path,
) -> None:
    """PRAGMA wal_autocheckpoint: SQLite's 1,000 pages unless the opener says otherwise."""
    default = await Store.open(tmp_path / "default.db")
    longer = await Store.open(tmp_path / "longer.db", checkpoint_pages=16_000)
    try:
        assert await default.fetchall("PRAGMA wal_autocheckpoint") == [(1000,)]
        assert await longer.fetchall("PRAGMA wal_autocheckpoint") == [(16_000,)]
    finally:
        await default.close()
        await longer.close()


async def test_an_emulator_opens_its_db_file_with_the_settings_checkpoint(tmp_path: Path) -> None:
    settings = Settings(db=str(tmp_path / "state.db"), dbCheckpointPages=5000)
    emulator = Emulator(settings, seeders=[seed])
    await emulator.start()
    try:
        assert await emulator.db.fetchall("PRAGMA wal_autocheckpoint") == [(5000,)]
    finally:
        await emulator.close()


async def test_a_brief_write_runs_on_the_calling_thread_when_the_database_is_idle() -> None:
    store = await Store.open()
    threads: list[int] = []

    def insert(conn: sqlite3.Connection) -> int:
        threads.append(threading.get_ident())
        return conn.execute("INSERT INTO meta(key, value) VALUES ('k', 'v')").lastrowid or 0

    try:
        version = store.version
        assert await store.write(insert, brief=True) > 0
        assert threads == [threading.get_ident()]  # no hop
        assert store.version == version + 1  # a write like any other
        assert await store.get_meta("k") == "v"
    finally:
        await store.close()


async def test_a_brief_read_runs_on_the_calling_thread_once_what_runs_has_finished() -> None:
    store = await Store.open()
    threads: list[int] = []
    ran: list[str] = []

    def slow(conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN IMMEDIATE")
        time.sleep(0.02)
        conn.execute("INSERT INTO meta(key, value) VALUES ('k', 'v')")
        ran.append("slow write")
        conn.execute("COMMIT")

    def read(conn: sqlite3.Connection) -> list[tuple[str]]:
        threads.append(threading.get_ident())
        ran.append("brief read")
        return conn.execute("SELECT value FROM meta WHERE key = 'k'").fetchall()

    try:
        first = asyncio.ensure_future(store.read(slow))
        await asyncio.sleep(0)
        _, rows = await asyncio.gather(first, store.read(read, brief=True))
        assert rows == [("v",)]  # after the write it waited for, not inside it
        assert ran == ["slow write", "brief read"]
        assert threads == [threading.get_ident()]  # no hop
        assert await store.fetchall("SELECT 1", brief=True) == [(1,)]
    finally:
        await store.close()


async def test_a_brief_write_waits_for_what_the_database_thread_runs() -> None:
    store = await Store.open()
    ran: list[str] = []

    def slow(conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN IMMEDIATE")
        time.sleep(0.02)
        ran.append("slow")
        conn.execute("COMMIT")

    try:
        first = asyncio.ensure_future(store.read(slow))
        await asyncio.sleep(0)
        # inline inside the other's transaction, its BEGIN IMMEDIATE would fail
        await asyncio.gather(first, store.write(lambda conn: ran.append("brief"), brief=True))
        assert ran == ["slow", "brief"]
    finally:
        await store.close()


async def test_a_brief_write_goes_before_calls_asked_after_it_under_a_load_that_never_pauses() -> (
    None
):
    store = await Store.open()
    stop = False
    threads: list[int] = []
    order: list[str] = []

    async def load() -> None:
        ends = time.perf_counter() + 10  # a write waiting for a pause would wait till then
        while not stop and time.perf_counter() < ends:
            await store.fetchall("SELECT 1")

    try:
        loads = [asyncio.ensure_future(load()) for _ in range(4)]
        await asyncio.sleep(0.01)
        began = time.perf_counter()

        def brief(conn: sqlite3.Connection) -> None:
            threads.append(threading.get_ident())
            order.append("brief write")

        write = asyncio.ensure_future(store.write(brief, brief=True))
        await asyncio.sleep(0)
        later = asyncio.ensure_future(store.read(lambda conn: order.append("later read")))
        await asyncio.gather(write, later)
        assert time.perf_counter() - began < 5
        assert threads == [threading.get_ident()]  # run here, once what ran had finished
        assert order == ["brief write", "later read"]
        stop = True
        await asyncio.gather(*loads)
    finally:
        await store.close()


async def test_a_brief_background_step_runs_here_when_idle_and_queues_when_not() -> None:
    store = await Store.open()
    threads: list[int] = []

    def step(conn: sqlite3.Connection) -> None:
        threads.append(threading.get_ident())

    def slow(conn: sqlite3.Connection) -> None:
        time.sleep(0.02)

    try:
        await store.read_in_background(step, brief=True)
        assert threads == [threading.get_ident()]
        busy = asyncio.ensure_future(store.read_in_background(slow))
        await asyncio.sleep(0)
        # another step is on the thread: this one goes there too, after it
        await asyncio.gather(busy, store.read_in_background(step, brief=True))
        assert len(threads) == 2 and threads[1] != threading.get_ident()
    finally:
        await store.close()


def test_an_open_cut_short_while_connecting_leaves_no_thread_to_answer_a_closed_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ctrl-C while the store connects: its thread is done before the open raises, so it
    never answers into the loop the interruption closes (a traceback on stderr)."""
    connect = db.connect_sync

    def slow_connect(path: str | Path | None, image: Path | None = None) -> sqlite3.Connection:
        time.sleep(0.3)  # the open is cancelled meanwhile
        return connect(path, image)

    monkeypatch.setattr(db, "connect_sync", slow_connect)
    errors: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: errors.append(args.exc_value))
    before = set(threading.enumerate())

    async def cut_short() -> None:
        opening = asyncio.create_task(Store.open(None))
        await asyncio.sleep(0.05)
        opening.cancel()
        with pytest.raises(asyncio.CancelledError):
            await opening

    asyncio.run(cut_short())
    for thread in set(threading.enumerate()) - before:
        thread.join(5)
    assert errors == []
