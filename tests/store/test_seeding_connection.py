"""The connection a new image is seeded through (apsw) answers the sqlite3 module's calls the
seeders make as a sqlite3 connection answers them, and raises SQLite's errors as its."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from emulator.fixtures.image_cache import ImageCache
from emulator.store.seeding_connection import open_seeding

SCHEMA = """
CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, flag INTEGER);
CREATE TABLE u(key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;
"""


def _calls(conn: sqlite3.Connection) -> list[Any]:
    """What the seeders ask of a connection, each answer kept."""
    answers: list[Any] = []
    conn.executescript(SCHEMA)
    conn.execute("BEGIN")
    answers.append(conn.execute("INSERT INTO t(name, flag) VALUES (?, ?)", ("a", True)).lastrowid)
    conn.executemany(
        "INSERT INTO t(name, flag) VALUES (?, ?)", ((f"n{i}", i % 2) for i in range(5))
    )
    conn.executemany("INSERT INTO u VALUES (:k, :v)", [{"k": "x", "v": "1"}, {"k": "y", "v": None}])
    before = conn.total_changes
    answers.append(conn.execute("UPDATE t SET flag = 1 - flag WHERE id > ?", (2,)).rowcount)
    answers.append(conn.total_changes - before)
    answers.append(conn.execute("DELETE FROM t WHERE name = 'nothing'").rowcount)
    answers.append(conn.execute("SELECT count(*), sum(flag) FROM t").fetchone())
    answers.append(conn.execute("SELECT * FROM t WHERE id > 99").fetchone())
    answers.append(conn.execute("SELECT * FROM u ORDER BY key").fetchall())
    answers.append(list(conn.execute("SELECT id, name, flag FROM t ORDER BY id")))
    answers.append(conn.execute("SELECT value FROM json_each(?)", ("[1, 2]",)).fetchall())
    conn.execute("COMMIT")
    return answers


def test_the_seeders_calls_are_answered_as_the_sqlite3_module_answers_them(tmp_path: Path) -> None:
    plain = sqlite3.connect(tmp_path / "plain.sqlite", isolation_level=None)
    seeding = open_seeding(str(tmp_path / "seeding.sqlite"))
    try:
        assert _calls(seeding) == _calls(plain)
    finally:
        plain.close()
        seeding.close()
    reread = sqlite3.connect(tmp_path / "seeding.sqlite")  # the server reads it with sqlite3
    try:
        assert reread.execute("SELECT count(*) FROM t").fetchone() == (6,)
        assert reread.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        reread.close()


@pytest.mark.parametrize(
    "failing",
    [
        lambda conn: conn.execute("INSERT INTO no_such_table VALUES (1)"),
        lambda conn: conn.execute("INSERT INTO meta(key, value) VALUES ('k', 1), ('k', 2)"),
    ],
)
def test_an_image_seeding_that_fails_in_sqlite_raises_sqlite3_errors_and_keeps_nothing(
    tmp_path: Path, failing: Callable[[sqlite3.Connection], Any]
) -> None:
    # the start meets an unwritable or full cache as sqlite3.Error, and then seeds in memory
    images = ImageCache(tmp_path / "cache")
    with pytest.raises(sqlite3.Error):
        images.build("0" * 64, failing)
    assert list(images.directory.iterdir()) == []
