"""Ordered id lists of list queries, kept until the next write, so any page is one slice.

OFFSET over 100,000 rows costs milliseconds per request; a cached id list turns a page
into `ids[start:end]` plus one `WHERE id IN (...)` lookup, and `total` into `len(ids)`.
"""

from __future__ import annotations

import asyncio
import sqlite3
from array import array
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable, Sequence
from functools import partial
from typing import Any, NamedTuple

from emulator.store.db import Store

ASKED_MAX = 4096  # first asks remembered between two writes
FEW = 20_000  # a total up to which a first page is read through the filter's own index


class FirstAsk(NamedTuple):
    """How a query's first ask is answered: `count_sql` counts what it matches (same WHERE);
    `few_sql` (if any) is the query ordered so that SQLite reads it through the WHERE's index
    and sorts what it found, used for a total up to FEW (ordered by id, SQLite would walk the
    whole table in id order to find a few rows)."""

    count_sql: str
    few_sql: str | None = None
    # counts what count_sql counts, another way (store/updated_counts.py), when set
    counter: Callable[[sqlite3.Connection], int] | None = None
    # of a query of `contacts` alone: counts what count_sql counts among the contacts above
    # an id, so a total kept from before creates is patched by testing only what they added
    grown: Callable[[sqlite3.Connection, int], int] | None = None


def first_page(
    sql: str,
    params: Sequence[Any],
    page: int,
    page_size: int,
    first: FirstAsk,
    conn: sqlite3.Connection,
) -> tuple[int, list[int]]:
    """(total, ids of the page) of `sql` (ordered, without LIMIT), in one read."""
    if first.counter is not None:
        total = first.counter(conn)
    else:
        (total,) = conn.execute(first.count_sql, params).fetchone()
    return int(total), page_of(sql, params, page, page_size, first, int(total), conn)


def page_of(
    sql: str,
    params: Sequence[Any],
    page: int,
    page_size: int,
    first: FirstAsk,
    total: int,
    conn: sqlite3.Connection,
) -> list[int]:
    """The ids of a page of `sql`, whose matches number `total`."""
    offset = (page - 1) * page_size
    if offset >= total:  # past the end (also pages whose offset no SQLite integer holds)
        return []
    query = first.few_sql if first.few_sql is not None and total <= FEW else sql
    rows = conn.execute(f"{query} LIMIT ? OFFSET ?", [*params, page_size, offset])
    return [row[0] for row in rows]


TOP_CONTACT = "SELECT coalesce(max(id), -9223372036854775808) FROM main.contacts"


def grown_page(
    sql: str,
    params: Sequence[Any],
    page: int,
    page_size: int,
    first: FirstAsk,
    kept: tuple[int, int] | None,
    conn: sqlite3.Connection,
) -> tuple[int, list[int], int]:
    """`first_page` of a query with `first.grown`, and the highest contact id it counted up
    to: from `kept` (total, highest id) of before, when no write since touched a contact at
    or below that id, the total is that one plus the matches above it (one range of ids
    read, not every match counted again)."""
    (top,) = conn.execute(TOP_CONTACT).fetchone()
    if kept is None:
        total, ids = first_page(sql, params, page, page_size, first, conn)
        return total, ids, int(top)
    assert first.grown is not None
    total = kept[0] + first.grown(conn, kept[1])
    ids = page_of(sql, params, page, page_size, first, total, conn)
    return total, ids, max(int(top), kept[1])


class PageIndex:
    """At most `size` id lists of at most `max_ids` ids together (8 bytes each: 16 MB)."""

    def __init__(self, store: Store, size: int = 128, max_ids: int = 2_000_000) -> None:
        self._store = store
        self._size = size
        self._max_ids = max_ids
        self._held = 0
        self._lists: OrderedDict[tuple[str, tuple[Any, ...]], array[int]] = OrderedDict()
        # (count, min, max) of a table at this version, read once by whoever asks first: right
        # after a write, every page asked meanwhile waits for that one read.
        self._bounds: dict[str, asyncio.Task[tuple[int, int, int]]] = {}
        self._version = -1
        # Queries asked once at this version: the next ask reads and keeps their id list.
        self._asked: set[tuple[str, tuple[Any, ...]]] = set()
        # (version, row count) of `contacts` last read: later counts add the contacts the
        # store's log says were added less deleted since, as count(*) reads every row (~5 ms
        # at 1,000,000 contacts, after every create of a load that writes 1 call in 10).
        self._counted: tuple[int, int] | None = None
        # Totals of `counted_page` queries, each with the version of the last write to the
        # table it reads when it was counted: still the total until that table is written
        # (a list's members after a create of a contact: no recount of 100,000 members).
        self._totals: dict[tuple[str, tuple[Any, ...]], tuple[int, int]] = {}
        # Totals of `page` queries with `FirstAsk.grown`: (version, total, highest contact id
        # then), patched after writes that touched only contacts above that id (creates).
        self._grown: dict[tuple[str, tuple[Any, ...]], tuple[int, int, int]] = {}

    @property
    def held_ids(self) -> int:
        return self._held

    def _sync(self) -> None:
        if self._version != self._store.version:
            self._lists.clear()
            self._held = 0
            self._bounds.clear()
            self._asked.clear()
            self._version = self._store.version

    async def ids(self, sql: str, params: Sequence[Any] = ()) -> array[int]:
        """All ids that `sql` (a SELECT of one id column, ordered) yields."""
        self._sync()
        key = (sql, tuple(params))
        found = self._lists.get(key)
        if found is not None:
            self._lists.move_to_end(key)
            return found
        version = self._store.version
        rows = await self._store.fetchall(sql, params)
        ids = array("q", (row[0] for row in rows))
        if version == self._store.version and len(ids) <= self._max_ids:  # no write came
            old = self._lists.pop(key, None)  # a concurrent miss on the same query
            self._held -= 0 if old is None else len(old)
            self._lists[key] = ids
            self._held += len(ids)
            while len(self._lists) > self._size or self._held > self._max_ids:
                self._held -= len(self._lists.popitem(last=False)[1])
        return ids

    async def _read_bounds(self, table: str) -> tuple[int, int, int]:
        version = self._store.version
        if table == "contacts" and self._counted is not None:
            counted_at, counted = self._counted  # as now: two reads may be under way at once
            added = self._store.contacts.added_since(counted_at)
            if added is not None:
                row = await self._store.fetchone(
                    "SELECT (SELECT min(id) FROM contacts), (SELECT max(id) FROM contacts)",
                    brief=True,  # two index look-ups, after every write
                )
                assert row is not None
                # A write whose commit the read saw is bumped before the read resumes: an
                # unchanged version means the count and the bounds are of the same state.
                if self._store.version == version:
                    self._counted = (version, counted + added)
                    return counted + added, int(row[0] or 0), int(row[1] or 0)
        row = await self._store.fetchone(
            f"SELECT (SELECT count(*) FROM {table}), (SELECT min(id) FROM {table}),"
            f" (SELECT max(id) FROM {table})"
        )
        assert row is not None
        if table == "contacts" and self._store.version == version:
            self._counted = (version, int(row[0]))
        return int(row[0]), int(row[1] or 0), int(row[2] or 0)

    async def page(
        self,
        sql: str,
        params: Sequence[Any],
        page: int,
        page_size: int,
        first: FirstAsk | None = None,
    ) -> tuple[int, list[int]]:
        """(total, ids of the page); pages past the end are empty.

        With `first`, a query not asked since the last write is answered by its count and
        that one page (one read; SQLite counts from an index where it has one, and stops
        reading rows once the page is full), not by reading every id; asked again, its id
        list is read and kept (a client paging through it), so a write costs each query
        one cheap first answer, not a read of every id it matches."""
        self._sync()
        key = (sql, tuple(params))
        if first is not None and key not in self._lists and key not in self._asked:
            if len(self._asked) >= ASKED_MAX:
                self._asked.clear()
            self._asked.add(key)
            if first.grown is not None:
                return await self._grown_page(key, page, page_size, first)
            return await self._store.read(partial(first_page, sql, params, page, page_size, first))
        ids = await self.ids(sql, params)
        start = (page - 1) * page_size
        return len(ids), ids[start : start + page_size].tolist()

    async def _grown_page(
        self, key: tuple[str, tuple[Any, ...]], page: int, page_size: int, first: FirstAsk
    ) -> tuple[int, list[int]]:
        """A first ask of a query with `first.grown`: its total patched if kept from before
        writes that touched only contacts above the highest id it counted (see grown_page)."""
        version = self._store.version
        kept = self._patchable(key)
        total, ids, top = await self._store.read(
            partial(grown_page, key[0], key[1], page, page_size, first, kept)
        )
        # A write whose commit the read saw is bumped before the read resumes: asked again,
        # the log also vouches for the writes that came meanwhile, or the total is counted.
        if kept is not None and self._patchable(key) is None:
            version = self._store.version
            total, ids, top = await self._store.read(
                partial(grown_page, key[0], key[1], page, page_size, first, None)
            )
        if version == self._store.version:  # count and highest id of the same state
            if len(self._grown) >= ASKED_MAX and key not in self._grown:
                self._grown.clear()
            self._grown[key] = (version, total, top)
        return total, ids

    def _patchable(self, key: tuple[str, tuple[Any, ...]]) -> tuple[int, int] | None:
        """(total, highest contact id counted) kept for `key`, if no write since it was
        counted touched a contact at or below that id (only creates above it, if any)."""
        known = self._grown.get(key)
        if known is None:
            return None
        low = self._store.contacts.lowest_since(known[0])
        return (known[1], known[2]) if low is None or low > known[2] else None

    async def counted_page(
        self,
        sql: str,
        params: Sequence[Any],
        page: int,
        page_size: int,
        first: FirstAsk,
        table: str,
    ) -> tuple[int, list[int]]:
        """(total, ids of the page) of `sql`, a query SQLite reads in order along an index
        (a list's members along list_members' key) of `table` alone (one of
        table_changes.WATCHED): the total counted once until a write to `table`, every
        page one LIMIT/OFFSET read. Its id list is never read whole: 100,000 members take
        ~40 ms to read, more than counting them or skipping to the deepest page."""
        key = (sql, tuple(params))
        written = self._store.changed(table)
        known = self._totals.get(key)
        if known is None or known[0] != written:
            read = partial(first_page, sql, params, page, page_size, first)
            total, ids = await self._store.read(read)
            if written == self._store.changed(table):  # no write to it came meanwhile
                if len(self._totals) >= ASKED_MAX:
                    self._totals.clear()
                self._totals[key] = (written, total)
            return total, ids
        total = known[1]
        offset = (page - 1) * page_size
        if offset >= total:  # past the end (also pages whose offset no SQLite integer holds)
            return total, []
        rows = await self._store.fetchall(f"{sql} LIMIT ? OFFSET ?", [*params, page_size, offset])
        return total, [row[0] for row in rows]

    async def table_page(self, table: str, page: int, page_size: int) -> tuple[int, list[int]]:
        """(total, ids of the page) of every row of `table` in id order.

        While the ids are dense (count = max - min + 1, so every integer between is taken,
        as generated fixtures and appended creates leave them) the page is arithmetic on three
        aggregates SQLite answers from its indexes; otherwise the cached id list. Re-reading
        100,000 ids after every write would cost ~60 ms, the aggregates ~0.1 ms.
        """
        self._sync()
        read = self._bounds.get(table)
        if read is None:
            read = self._bounds[table] = asyncio.ensure_future(self._read_bounds(table))
        try:
            bounds = await asyncio.shield(read)  # one caller cancelled: the others still wait
        except BaseException:
            if read.done() and self._bounds.get(table) is read:
                del self._bounds[table]  # a failed read is not kept
            raise
        count, low, high = bounds
        if count == 0 or high - low + 1 != count:
            return await self.page(f"SELECT id FROM {table} ORDER BY id", (), page, page_size)
        first = low + (page - 1) * page_size
        return count, list(range(first, min(first + page_size, high + 1)))


class _Body:
    """An encoded page as two pieces: `items`, its `{"data":[...` part, and `end`, the rest;
    `ids` are the page's ids (None: a filtered listing, whose items are not reused across
    versions); `tail(total)` the `end` for another `total` (None: not known), `total` the one
    `end` holds. Kept apart, a new total costs a new `end` (~60 bytes), not a copy of the
    ~80 KB items, and the answer goes out as the two pieces."""

    __slots__ = ("end", "ids", "items", "tail", "total", "version")

    def __init__(
        self,
        version: int,
        items: bytes,
        end: bytes,
        ids: list[int] | None,
        tail: Callable[[int], bytes] | None,
        total: int,
    ) -> None:
        self.version = version  # the store version the body is known to answer at
        self.items = items
        self.end = end
        self.ids = ids
        self.tail = tail
        self.total = total

    @property
    def size(self) -> int:
        return len(self.items) + len(self.end)


# Keys of pages read once that are remembered (a few hundred KB of query strings at most).
_READ_ONCE_KEYS = 10_000


class EncodedPages:
    """Encoded answers of GET /v1/contacts, bounded in bytes, valid by the store's contact log.

    An answer read at version v stays the answer while no write since v touched a contact
    (the log of `Store.contacts`: a webhook or campaign change keeps every page). The items
    of a page of the whole table stay its items while every write since touched only
    contacts above its last id (creates append above every full page): only the envelope's
    `total` is new. A page never hides a write made before it was asked for.
    """

    # A client paging through 1,000 pages of 100 contacts (~80 KB each) finds them all kept.
    def __init__(
        self, store: Store, max_bytes: int = 128 * 1024 * 1024, keep_first_reads: bool = False
    ) -> None:
        self._store = store
        self._max_bytes = max_bytes
        self._bodies: OrderedDict[Hashable, _Body] = OrderedDict()
        # Keys read once and not kept (a page is kept from its second read on): a client
        # walking every page once, as a sync does, fills no memory with pages never asked
        # again, while a page asked twice is most likely asked more.
        self._keep_first = keep_first_reads
        self._read_once: OrderedDict[Hashable, None] = OrderedDict()
        self._bytes = 0
        # Answers being read, by key, with the store version they started at.
        self._reading: dict[Hashable, tuple[int, asyncio.Future[bytes]]] = {}

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def get(self, key: Hashable) -> bytes | None:
        """The answer `pieces` finds, as one bytes object."""
        pieces = self.pieces(key)
        return None if pieces is None else b"".join(pieces)

    def pieces(self, key: Hashable) -> tuple[bytes, bytes] | None:
        """The answer kept for `key` if no write since it was read touched any contact, or,
        for a full page of the whole table, none at or below its last id: then its items
        are still its items and only the total is new (the contacts added less deleted).
        In two pieces, the items and the rest, sent as they are (their join is the body)."""
        entry = self._bodies.get(key)
        if entry is None:
            return None
        current = self._store.version
        if entry.version != current:
            log = self._store.contacts
            low = log.lowest_since(entry.version)
            if low is not None:
                if entry.tail is None or not entry.ids or low <= entry.ids[-1]:
                    return None
                added = log.added_since(entry.version)
                if added is None:
                    return None
                if added:
                    self._retotal(entry, entry.total + added)
            entry.version = current  # checked up to here: the next check starts from now
        self._bodies.move_to_end(key)
        return entry.items, entry.end

    async def read_once(self, key: Hashable, read: Callable[[], Awaitable[bytes]]) -> bytes:
        """`read()`, or the answer of the same read already under way if no write came since
        it started (clients asking for the same page at once cost one read, not one each)."""
        version = self._store.version
        found = self._reading.get(key)
        if found is not None and found[0] == version:
            return await asyncio.shield(found[1])
        task = asyncio.ensure_future(read())
        self._reading[key] = (version, task)
        task.add_done_callback(partial(self._read_done, key))
        return await asyncio.shield(task)  # one caller cancelled: the others still wait

    def _read_done(self, key: Hashable, task: asyncio.Future[bytes]) -> None:
        if self._reading.get(key, (0, None))[1] is task:
            del self._reading[key]
        if not task.cancelled():
            task.exception()  # raised to its callers; retrieved even when all of them left

    def _asked_before(self, key: Hashable) -> bool:
        """Whether `key` was read before (or is kept); notes it as read once if not."""
        if self._keep_first or key in self._bodies:
            return True
        if key in self._read_once:
            del self._read_once[key]
            return True
        self._read_once[key] = None
        if len(self._read_once) > _READ_ONCE_KEYS:
            self._read_once.popitem(last=False)
        return False

    def _retotal(self, entry: _Body, total: int) -> None:
        assert entry.tail is not None
        end = entry.tail(total)  # the items stay as they are: no copy of them
        self._bytes += len(end) - len(entry.end)
        entry.end, entry.total = end, total

    def items(self, key: Hashable, ids: list[int]) -> bytes | None:
        """The `{"data":[...` part kept for `key` if it listed exactly `ids` and no write since
        touched a contact at or below the last of them (ids in ascending order)."""
        entry = self._bodies.get(key)
        if entry is None or entry.ids != ids:
            return None
        if ids:
            low = self._store.contacts.lowest_since(entry.version)
            if low is not None and low <= ids[-1]:
                return None
        return entry.items

    def put(
        self,
        version: int,
        key: Hashable,
        end: bytes,
        items: bytes = b"",
        ids: list[int] | None = None,
        tail: Callable[[int], bytes] | None = None,
        total: int = 0,
    ) -> None:
        """Keep the answer `items + end` (as those two pieces: no copy of the items), read
        from store `version` on (any write after it is checked on use).

        A page of the whole table that is full (its last id is not the table's last) gives
        `ids`, its `total` and `tail`: its answer after writes above its last id is then
        its items and `tail(new total)`."""
        size = len(items) + len(end)
        if size > self._max_bytes or not self._asked_before(key):
            return
        old = self._bodies.pop(key, None)
        if old is not None:
            self._bytes -= old.size
        self._bodies[key] = _Body(version, items, end, ids, tail, total)
        self._bytes += size
        while self._bytes > self._max_bytes:  # oldest first
            _, dropped = self._bodies.popitem(last=False)
            self._bytes -= dropped.size
