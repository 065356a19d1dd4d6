"""The in-memory store in a region the process owns (SQLite's memdb): the same database as a
`:memory:` one, an image mapped without ever being written, a database that outgrows its
region refused whole, and the plain `:memory:` connection wherever the region cannot be had."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from emulator.store import db, memdb
from emulator.store.db import Store, open_restored, open_sync

pytestmark = pytest.mark.anyio


def _image(path: Path, rows: int = 2_000) -> Path:
    conn = open_sync(path)
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.executemany(
        "INSERT INTO meta(key, value) VALUES (?, ?)", ((f"k{i}", "v" * 200) for i in range(rows))
    )
    conn.close()
    return path


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def no_memdb(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on a Python whose sqlite3.Connection layout is not known."""

    def unknown(conn: sqlite3.Connection) -> int:
        raise memdb.MemdbUnavailable("layout unknown")

    monkeypatch.setattr(memdb, "handle", unknown)


def test_a_new_in_memory_database_lives_in_a_region() -> None:
    conn = open_sync(None)
    assert isinstance(conn, memdb.MemdbConnection) and conn.region is not None
    conn.execute("INSERT INTO meta(key, value) VALUES ('a', 'b')")
    copy = sqlite3.connect(":memory:")
    copy.deserialize(conn.serialize())
    assert copy.execute("SELECT value FROM meta WHERE key = 'a'").fetchall() == [("b",)]
    region = conn.region
    conn.close()
    assert region.address is None  # released once the connection is closed, not before


def test_an_image_is_mapped_and_never_written(tmp_path: Path) -> None:
    image = _image(tmp_path / "image.sqlite")
    before = _digest(image)
    conn = open_restored(image)
    assert isinstance(conn, memdb.MemdbConnection) and conn.region is not None
    assert conn.region.used == image.stat().st_size
    conn.execute("UPDATE meta SET value = 'changed'")
    conn.execute("INSERT INTO meta(key, value) VALUES ('new', 'row')")
    assert conn.execute("SELECT count(*) FROM meta WHERE value = 'changed'").fetchone() == (2_000,)
    conn.close()
    assert _digest(image) == before


def test_a_database_that_outgrows_its_region_is_refused_whole() -> None:
    conn = memdb.connect(reserve=1 << 20)
    assert conn is not None
    db.configure(conn, on_disk=False)
    conn.execute("INSERT INTO meta(key, value) VALUES ('kept', 'yes')")
    with pytest.raises(sqlite3.OperationalError, match="full"):
        conn.execute("BEGIN")
        conn.executemany(
            "INSERT INTO meta(key, value) VALUES (?, ?)",
            ((f"k{i}", "v" * 1000) for i in range(1_000)),
        )
        conn.execute("COMMIT")
    if conn.in_transaction:
        conn.execute("ROLLBACK")
    assert conn.execute("SELECT key FROM meta").fetchall() == [("kept",)]
    conn.close()


@pytest.mark.usefixtures("no_memdb")
async def test_without_a_region_the_store_is_a_plain_in_memory_one(tmp_path: Path) -> None:
    image = _image(tmp_path / "image.sqlite")
    conn = open_restored(image)
    assert type(conn) is sqlite3.Connection
    assert conn.execute("SELECT count(*) FROM meta").fetchone() == (2_000,)
    conn.close()
    store = await Store.open()
    try:
        assert type(store._db._conn) is sqlite3.Connection
        await store.restore_path(image)
        assert await store.fetchone("SELECT count(*) FROM meta") == (2_000,)
    finally:
        await store.close()


async def test_a_store_restores_into_its_region(tmp_path: Path) -> None:
    image = _image(tmp_path / "image.sqlite")
    store = await Store.open()
    try:
        assert isinstance(store._db._conn, memdb.MemdbConnection)
        await store.restore_path(image)
        snapshot = await store.serialize()
        await store.execute("DELETE FROM meta")
        await store.restore(snapshot)
        assert await store.fetchone("SELECT count(*) FROM meta") == (2_000,)
    finally:
        await store.close()


def test_a_handle_is_checked_before_use() -> None:
    conn = sqlite3.connect(":memory:")
    assert memdb.handle(conn)  # the sqlite3 it points at starts with the default VFS
    conn.close()
    with pytest.raises(memdb.MemdbUnavailable):
        memdb.handle(conn)  # closed: its pointer is gone
