"""None parameters bind as SQL NULL through the adapter `emulator.store.binding` registers,
in the server and in the contacts worker alike."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys

import emulator.store.db  # noqa: F401  (registers the None adapter)
from emulator.platform.contacts_worker import package_path


def test_none_binds_as_null() -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t(a, b TEXT, c INTEGER NOT NULL DEFAULT 0)")
    conn.executemany("INSERT INTO t(a, b) VALUES (?, ?)", [(None, None), (1, "x")])
    rows = conn.execute(
        "SELECT typeof(a), typeof(b), a IS NULL, b FROM t ORDER BY rowid"
    ).fetchall()
    assert rows == [("null", "null", 1, None), ("integer", "text", 0, "x")]
    assert conn.execute("SELECT count(*) FROM t WHERE a = ?", (None,)).fetchone() == (0,)
    assert conn.execute("SELECT ? IS NULL", (None,)).fetchone() == (1,)


def test_the_contacts_worker_binds_none_through_the_adapter() -> None:
    """The worker's own process (which imports no server module) registers it too: without
    it every None its contacts bind costs a failed attribute lookup."""
    check = (
        "import sqlite3, emulator.platform.contacts_worker;"
        "print((type(None), sqlite3.PrepareProtocol) in sqlite3.adapters)"
    )
    done = subprocess.run(
        [sys.executable, "-P", "-c", check],
        env={**os.environ, "PYTHONPATH": package_path()},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout.strip()) == (0, "True"), done.stderr
