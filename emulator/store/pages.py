"""Ordered id lists of list queries, kept until the next write, so any page is one slice.

OFFSET over 100,000 rows costs milliseconds per request; a cached id list turns a page
into `ids[start:end]` plus one `WHERE id IN (...)` lookup, and `total` into `len(ids)`.
"""

from __future__ import annotations

from array import array
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from typing import Any

from emulator.store.db import Store


class PageIndex:
    """At most `size` id lists of at most `max_ids` ids together (8 bytes each: 16 MB)."""

    def __init__(self, store: Store, size: int = 128, max_ids: int = 2_000_000) -> None:
        self._store = store
        self._size = size
        self._max_ids = max_ids
        self._held = 0
        self._lists: OrderedDict[tuple[str, tuple[Any, ...]], array[int]] = OrderedDict()
        self._bounds: dict[str, tuple[int, int, int]] = {}
        self._version = -1

    @property
    def held_ids(self) -> int:
        return self._held

    def _sync(self) -> None:
        if self._version != self._store.version:
            self._lists.clear()
            self._held = 0
            self._bounds.clear()
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

    async def page(
        self, sql: str, params: Sequence[Any], page: int, page_size: int
    ) -> tuple[int, list[int]]:
        """(total, ids of the page); pages past the end are empty."""
        ids = await self.ids(sql, params)
        start = (page - 1) * page_size
        return len(ids), ids[start : start + page_size].tolist()

    async def table_page(self, table: str, page: int, page_size: int) -> tuple[int, list[int]]:
        """(total, ids of the page) of every row of `table` in id order.

        While the ids are dense (count = max - min + 1, so every integer between is taken,
        as generated fixtures and appended creates leave them) the page is arithmetic on three
        aggregates SQLite answers from its indexes; otherwise the cached id list. Re-reading
        100,000 ids after every write would cost ~60 ms, the aggregates ~0.1 ms.
        """
        self._sync()
        bounds = self._bounds.get(table)
        if bounds is None:
            version = self._store.version
            row = await self._store.fetchone(
                f"SELECT (SELECT count(*) FROM {table}), (SELECT min(id) FROM {table}),"
                f" (SELECT max(id) FROM {table})"
            )
            assert row is not None
            bounds = (int(row[0]), int(row[1] or 0), int(row[2] or 0))
            if version == self._store.version:
                self._bounds[table] = bounds
        count, low, high = bounds
        if count == 0 or high - low + 1 != count:
            return await self.page(f"SELECT id FROM {table} ORDER BY id", (), page, page_size)
        first = low + (page - 1) * page_size
        return count, list(range(first, min(first + page_size, high + 1)))


class EncodedPages:
    """Encoded list answers of the store's current version, bounded in bytes.

    A page served from here skips the database hop and the JSON assembly. Every entry is
    keyed on the store version it was read at, so the first write drops them all: a
    page never hides a write made before it was asked for.
    """

    def __init__(self, store: Store, max_bytes: int = 32 * 1024 * 1024) -> None:
        self._store = store
        self._max_bytes = max_bytes
        self._bodies: OrderedDict[Hashable, bytes] = OrderedDict()
        self._bytes = 0
        self._version = -1

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def get(self, key: Hashable) -> bytes | None:
        if self._version != self._store.version:
            self._bodies.clear()
            self._bytes = 0
            self._version = self._store.version
            return None
        body = self._bodies.get(key)
        if body is not None:
            self._bodies.move_to_end(key)
        return body

    def put(self, version: int, key: Hashable, body: bytes) -> None:
        """Keep `body`, read at store `version`, unless a write came since (then it is stale)."""
        if version != self._store.version or version != self._version:
            return
        if len(body) > self._max_bytes:
            return
        old = self._bodies.pop(key, None)
        if old is not None:
            self._bytes -= len(old)
        self._bodies[key] = body
        self._bytes += len(body)
        while self._bytes > self._max_bytes:  # oldest first
            _, dropped = self._bodies.popitem(last=False)
            self._bytes -= len(dropped)
