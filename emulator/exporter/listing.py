"""A phase's selection listed once into a TEMP table, so that a page of it costs the same
whatever the selection's size.

A selection passed to every page read as one JSON array (`platform.sql.only`) made each page
parse and index the whole array again, and for activities and tasks sort every matching row
left, so a phase cost pages x selection. A phase that has a selection (auto-sync's contacts, an
actions run's records) lists the ids of the rows it may read once, under a key of its own; its
pages then read the next ids of that listing by its primary key, in id order, and join the rows.

The table is TEMP on the store's connection, the one every `store.read` runs on: rows there
are no change of the platform's state, so they are written by a read (a write would drop the
cached pages of /v1 for nothing).
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

from emulator.store.db import Store

TABLE = "temp.export_listed"  # its writes below spell it out (tests/platform/test_sole_writer.py)

_keys = itertools.count(1)  # one listing per phase; keys unique in this process


def fill(conn: sqlite3.Connection, listing: int, ids_sql: str, params: tuple[Any, ...]) -> int:
    """List under `listing` the ids `ids_sql` selects (its one column); answers how many."""
    conn.execute(
        "CREATE TEMP TABLE IF NOT EXISTS export_listed (listing INTEGER NOT NULL,"
        " item INTEGER NOT NULL, PRIMARY KEY (listing, item)) WITHOUT ROWID"
    )
    cursor = conn.execute(
        "INSERT OR IGNORE INTO temp.export_listed(listing, item)"
        f" SELECT ?, ids.id FROM ({ids_sql}) ids",
        (listing, *params),
    )
    return cursor.rowcount


def forget(conn: sqlite3.Connection, listing: int) -> None:
    conn.execute("DELETE FROM temp.export_listed WHERE listing = ?", (listing,))


@asynccontextmanager
async def listed(
    store: Store,
    lister: Callable[[sqlite3.Connection, int, Sequence[int]], object],
    selection: Sequence[int] | None,
) -> AsyncIterator[int | None]:
    """The key of the rows `lister(conn, listing, selection)` lists, forgotten when the block
    ends; None when there is no selection (the pages read the whole table)."""
    if selection is None:
        yield None
        return
    key = next(_keys)
    try:
        await store.read(lambda conn: lister(conn, key, selection))
        yield key
    finally:
        if not store.closed:  # a closed store's TEMP rows went with its connection
            await store.read(partial(forget, listing=key))


def page_source(table: str, alias: str, listing: int | None) -> tuple[str, str, str]:
    """(FROM head, WHERE head taking (listing?, after), ORDER BY column) of a page of `table`
    read by id: the table's own ids from `after` (listing None), else the listing's next ids,
    its rows joined by primary key (CROSS JOIN: the listing stays the outer loop, so the
    page comes in the listing's order with no sort)."""
    if listing is None:
        return f"{table} {alias}", f"{alias}.id > ?", f"{alias}.id"
    return (
        f"{TABLE} s CROSS JOIN {table} {alias} ON {alias}.id = s.item",
        "s.listing = ? AND s.item > ?",
        "s.item",
    )


def page_params(listing: int | None, after: int) -> tuple[int, ...]:
    return (after,) if listing is None else (listing, after)
