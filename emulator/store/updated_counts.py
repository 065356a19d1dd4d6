"""How many rows of contacts and of companies were updated in each hour, so the total of an
`updatedAtFrom`/`updatedAtTo` listing is a sum of a few thousand hours, not a count of every
row in the range (half a million index entries at 1,000,000 contacts: ~50 ms).

A bucket is the first BUCKET characters of `updatedAt` (the hour, "2026-05-01T13"). For any
bound `lo`, a row whose bucket sorts after lo's bucket is after lo, one whose bucket sorts
before is before (strings compare by their first differing character): the total of a
range is the sum of the buckets strictly inside it plus the rows of its one or two edge
buckets, counted through the `updatedAt` index over that bucket alone. Exact for any text
a column holds, whatever its form.

Like the contact search's index (store/contact_search.py), the tables and the TEMP triggers
that keep them live on the store's own connection, in `temp`: nothing at seed time. `warm()`
builds them in the background, CHUNK rows per database hop in updatedAt order: the triggers
come first and count a write only below the build's mark (rows above it are counted when
the build gets there, as they are then), so no write is counted twice or missed. A restore
of the whole database (which replaces `main` under them) makes them stale until the next
warm(), which a listing calls.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import weakref
from collections.abc import Callable
from functools import partial
from typing import Any

from emulator.store.db import Store

log = logging.getLogger(__name__)

BUCKET = 13  # characters of an ISO timestamp: the hour
TABLES = ("contacts", "companies")


CHUNK = 20_000  # rows counted per database hop (~10 ms): other requests wait at most that


def counts_table(table: str) -> str:
    return f"temp.{table}_updated_hours"


def _counted(table: str, value: str, by: int) -> str:
    """SQL: the row (hour of `value`, `by`) if the build has counted that far (a row above the
    mark is counted when the build reaches it, with the value it has then), else none."""
    return (
        f"SELECT substr({value}, 1, {BUCKET}), {by} FROM {table}_updated_mark"
        f" WHERE done OR {value} < upto"
    )


def _bump(table: str, value: str, by: int) -> str:
    """SQL: add `by` to the hour of `value` (`_counted`)."""
    return (
        f"INSERT INTO {table}_updated_hours(hour, n) {_counted(table, value, by)}"
        f" ON CONFLICT(hour) DO UPDATE SET n = n + {by};"
    )


def _move(table: str) -> str:
    """SQL: `_bump` of OLD.updatedAt by -1 and of NEW.updatedAt by +1 in one statement (one
    statement in the trigger's program rather than two: ~0.3 us less a row moved, the
    simulation's touch of ~4.5 us a contact included). Two rows of one hour add up: the
    upsert takes them one after the other."""
    old, new = _counted(table, "OLD.updatedAt", -1), _counted(table, "NEW.updatedAt", 1)
    # `WHERE true`: an upsert's SELECT must end in a clause before ON CONFLICT
    return (
        f"INSERT INTO {table}_updated_hours(hour, n) SELECT * FROM ({old} UNION ALL {new})"
        " WHERE true ON CONFLICT(hour) DO UPDATE SET n = n + excluded.n;"
    )


def start_sql(table: str) -> list[str]:
    """The statements that (re)create `table`'s empty hour counts, its mark (rows below
    `upto` are counted; all once `done`) and the triggers that keep them."""
    hours = counts_table(table)
    return [
        f"DROP TRIGGER IF EXISTS temp.{table}_hours_insert",
        f"DROP TRIGGER IF EXISTS temp.{table}_hours_update",
        f"DROP TRIGGER IF EXISTS temp.{table}_hours_delete",
        f"DROP TABLE IF EXISTS {hours}",
        f"DROP TABLE IF EXISTS temp.{table}_updated_mark",
        f"CREATE TABLE {hours}(hour TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID",
        f"CREATE TABLE temp.{table}_updated_mark(done INTEGER NOT NULL, upto TEXT NOT NULL)",
        f"INSERT INTO temp.{table}_updated_mark VALUES (0, '')",
        f"CREATE TEMP TRIGGER {table}_hours_insert AFTER INSERT ON main.{table} BEGIN"
        f" {_bump(table, 'NEW.updatedAt', 1)} END",
        # A move within one hour changes no count once the build is done; during it, such a
        # move may cross the build's mark (counted below it, not yet above it), so it counts.
        f"CREATE TEMP TRIGGER {table}_hours_update AFTER UPDATE OF updatedAt ON main.{table}"
        f" WHEN substr(OLD.updatedAt, 1, {BUCKET}) IS NOT substr(NEW.updatedAt, 1, {BUCKET})"
        f" OR NOT (SELECT done FROM {table}_updated_mark)"
        f" BEGIN {_move(table)} END",
        f"CREATE TEMP TRIGGER {table}_hours_delete AFTER DELETE ON main.{table} BEGIN"
        f" {_bump(table, 'OLD.updatedAt', -1)} END",
    ]


def _transaction(conn: sqlite3.Connection, work: Callable[[], None]) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        work()
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def start(conn: sqlite3.Connection) -> None:
    """Every table's empty hour counts, marks and triggers: one transaction."""

    def create() -> None:
        for table in TABLES:
            for sql in start_sql(table):
                conn.execute(sql)

    _transaction(conn, create)


def fill(conn: sqlite3.Connection, table: str) -> bool:
    """Count the next CHUNK rows of `table` above its mark (by updatedAt) into the hours and
    move the mark past them, in one transaction; answers whether the table is done."""

    def step() -> None:
        done, upto = conn.execute(f"SELECT done, upto FROM temp.{table}_updated_mark").fetchone()
        if done:
            return
        (nxt,) = conn.execute(
            f"SELECT (SELECT updatedAt FROM main.{table} WHERE updatedAt >= ?"
            " ORDER BY updatedAt LIMIT 1 OFFSET ?)",
            (upto, CHUNK),
        ).fetchone()
        if nxt == upto:  # more than CHUNK rows share one value: the chunk ends past them
            (nxt,) = conn.execute(
                f"SELECT min(updatedAt) FROM main.{table} WHERE updatedAt > ?", (upto,)
            ).fetchone()
        upper, params = ("", [upto]) if nxt is None else (" AND updatedAt < ?", [upto, nxt])
        conn.execute(
            f"INSERT INTO {counts_table(table)}(hour, n)"
            f" SELECT substr(updatedAt, 1, {BUCKET}), count(*) FROM main.{table}"
            f" WHERE updatedAt >= ?{upper} GROUP BY 1"
            " ON CONFLICT(hour) DO UPDATE SET n = n + excluded.n",
            params,
        )
        conn.execute(
            f"UPDATE temp.{table}_updated_mark SET done = ?, upto = ?",
            (int(nxt is None), upto if nxt is None else nxt),
        )

    _transaction(conn, step)
    return bool(conn.execute(f"SELECT done FROM temp.{table}_updated_mark").fetchone()[0])


def build(conn: sqlite3.Connection) -> None:
    """start() and every fill() at once (tests; a server builds them hop by hop)."""
    start(conn)
    for table in TABLES:
        while not fill(conn, table):
            pass


def after_bucket(prefix: str) -> str | None:
    """The least text above every text that starts with `prefix` (None: no such text)."""
    last = ord(prefix[-1]) if prefix else 0x10FFFF
    return None if last >= 0x10FFFF else prefix[:-1] + chr(last + 1)


def range_count(conn: sqlite3.Connection, table: str, low: str | None, high: str | None) -> int:
    """Rows of `table` with low <= updatedAt <= high (an absent bound: open), by the hours."""
    if low is None and high is None:
        return int(conn.execute(f"SELECT count(*) FROM main.{table}").fetchone()[0])
    if low is not None and high is not None and low > high:  # (code point order: SQLite's)
        return 0
    lo_hour = None if low is None else low[:BUCKET]
    hi_hour = None if high is None else high[:BUCKET]
    if lo_hour is not None and lo_hour == hi_hour:  # one hour: its rows through the index
        return _count(conn, table, "updatedAt >= ? AND updatedAt <= ?", [low, high])
    inner, params = [], []
    if lo_hour is not None:
        inner.append("hour > ?")
        params.append(lo_hour)
    if hi_hour is not None:
        inner.append("hour < ?")
        params.append(hi_hour)
    sql = f"SELECT coalesce(sum(n), 0) FROM {counts_table(table)} WHERE {' AND '.join(inner)}"
    total = int(conn.execute(sql, params).fetchone()[0])
    if low is not None and lo_hour is not None:
        total += _edge(conn, table, lo_hour, "updatedAt >= ?", low)
    if high is not None and hi_hour is not None:
        total += _edge(conn, table, hi_hour, "updatedAt <= ?", high)
    return total


def _edge(conn: sqlite3.Connection, table: str, hour: str, bound: str, value: str) -> int:
    """Rows of one hour on the inner side of `bound`: the index read over that hour only."""
    clauses = [bound, f"substr(updatedAt, 1, {BUCKET}) = ?", "updatedAt >= ?"]
    params: list[Any] = [value, hour, hour]
    above = after_bucket(hour)
    if above is not None:
        clauses.append("updatedAt < ?")
        params.append(above)
    return _count(conn, table, " AND ".join(clauses), params)


def _count(conn: sqlite3.Connection, table: str, where: str, params: list[Any]) -> int:
    return int(
        conn.execute(f"SELECT count(*) FROM main.{table} WHERE {where}", params).fetchone()[0]
    )


# The restore version each store's counts are whole at (absent: never built), and the build
# under way per store.
_built: weakref.WeakKeyDictionary[Store, int] = weakref.WeakKeyDictionary()
_building: weakref.WeakKeyDictionary[Store, asyncio.Task[None]] = weakref.WeakKeyDictionary()


def ready(store: Store) -> bool:
    """Whether the store's counts are whole and no restore came since they were built."""
    return _built.get(store) == store.restored


def warm(store: Store) -> None:
    """Start building the store's counts in the background unless ready or on their way."""
    if ready(store):
        return
    running = _building.get(store)
    if running is not None and not running.done():
        return
    _building[store] = asyncio.ensure_future(_build(store))


async def ensure(store: Store) -> None:
    """Wait until the store's counts are ready (building them if need be)."""
    while not ready(store):
        warm(store)
        await asyncio.shield(_building[store])


async def _build(store: Store) -> None:
    restored = store.restored
    try:
        await store.read(start)
        for table in TABLES:
            while not await store.read_in_background(partial(fill, table=table)):
                if store.restored != restored:  # replaced under it: the next warm() again
                    return
        if store.restored == restored:
            _built[store] = restored
    except sqlite3.Error:
        if store.closed:  # a server stopping: nothing went wrong
            _built.pop(store, None)
            return
        log.exception("the updatedAt counts could not be built: such totals count every row")
        _built.pop(store, None)
    except Exception:  # the store closed under it (a server stopping)
        _built.pop(store, None)
