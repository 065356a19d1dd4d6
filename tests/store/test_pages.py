"""PageIndex and EncodedPages: pages of a whole table, and bodies dropped by contact writes."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emulator.store import pages as pages_module
from emulator.store.contact_changes import ALL, ChangeLog
from emulator.store.db import Store
from emulator.store.pages import FEW, EncodedPages, FirstAsk, PageIndex

pytestmark = pytest.mark.anyio


async def add_contacts(store: Store, ids: Iterable[int]) -> None:
    """Bare contacts of these ids, in one write."""
    rows = [(i,) for i in ids]
    await store.write(
        lambda c: c.executemany(
            "INSERT INTO contacts(id, createdAt, updatedAt) VALUES (?, 'x', 'x')", rows
        )
    )


@settings(max_examples=60, deadline=None)
@given(
    rows=st.dictionaries(st.integers(1, 80), st.integers(0, 9), max_size=50),
    low=st.integers(0, 10),
    page=st.integers(1, 8),
    size=st.integers(1, 12),
    few=st.booleans(),
)
async def test_a_first_ask_answers_the_slice_of_the_whole_list_then_the_list_is_kept(
    rows: dict[int, int], low: int, page: int, size: int, few: bool
) -> None:
    """First ask (a count and one page, maybe read through the index and sorted), second ask
    (the id list read and kept) and the sorted ids agree, for any page."""
    store = await Store.open()
    try:
        await store.write(lambda c: c.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v)"))
        await store.write(lambda c: c.execute("CREATE INDEX tv ON t(v)"))
        await store.executemany("INSERT INTO t VALUES (?, ?)", list(rows.items()))
        index = PageIndex(store)
        sql = "SELECT id FROM t WHERE v >= ? ORDER BY id"
        first = FirstAsk(
            "SELECT count(*) FROM t WHERE v >= ?", sql.replace("BY id", "BY +id") if few else None
        )
        matching = sorted(i for i, v in rows.items() if v >= low)
        expected = (len(matching), matching[(page - 1) * size : page * size])
        assert await index.page(sql, [low], page, size, first) == expected  # first ask
        assert index.held_ids == 0
        assert await index.page(sql, [low], page, size, first) == expected  # the list, kept
        assert index.held_ids == len(matching)
        assert FEW >= 50  # the few-rows path is the one taken here when `few`
    finally:
        await store.close()


@settings(max_examples=60, deadline=None)
@given(
    ids=st.sets(st.integers(1, 60), max_size=40),
    dense_from=st.none() | st.integers(1, 5),
    page=st.integers(1, 8),
    size=st.integers(1, 12),
)
async def test_table_page_is_the_slice_of_the_sorted_ids(
    ids: set[int], dense_from: int | None, page: int, size: int
) -> None:
    if dense_from is not None:  # the common case: 1..N or k..N without a gap
        ids = set(range(dense_from, dense_from + len(ids)))
    store = await Store.open()
    try:
        await store.write(lambda conn: conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY)"))
        await store.executemany("INSERT INTO t VALUES (?)", [(i,) for i in ids])
        index = PageIndex(store)
        expected = sorted(ids)[(page - 1) * size : page * size]
        assert await index.table_page("t", page, size) == (len(ids), expected)
        await store.execute("INSERT INTO t VALUES (100)")  # a write: the bounds are re-read
        expected = sorted(ids | {100})[(page - 1) * size : page * size]
        assert await index.table_page("t", page, size) == (len(ids) + 1, expected)
    finally:
        await store.close()


async def test_encoded_pages_keep_within_their_bytes_and_drop_what_a_contact_write_touched() -> (
    None
):
    store = await Store.open()
    try:
        bodies = EncodedPages(store, max_bytes=10, keep_first_reads=True)
        assert bodies.get("a") is None
        bodies.put(store.version, "a", b"12345")
        bodies.put(store.version, "b", b"67890")
        assert bodies.get("a") == b"12345"
        bodies.put(store.version, "c", b"abc")  # over 10 bytes: the least recently used goes
        assert (bodies.get("b"), bodies.get("a"), bodies.size_bytes) == (None, b"12345", 8)
        stale = store.version
        await store.set_meta("k", "v")  # no contact touched: every answer stays
        assert bodies.get("a") == b"12345"
        await store.execute("INSERT INTO contacts(id, createdAt, updatedAt) VALUES (50, '', '')")
        assert bodies.get("a") is None
        bodies.put(stale, "a", b"old")  # read before the write: kept, but checked from then
        assert bodies.get("a") is None
    finally:
        await store.close()


async def test_a_page_is_kept_from_its_second_read_so_a_walk_over_every_page_keeps_none() -> None:
    store = await Store.open()
    try:
        bodies = EncodedPages(store)
        for n in range(50):  # one walk: each page read once
            bodies.put(store.version, n, b"x" * 100)
        assert bodies.size_bytes == 0
        assert all(bodies.get(n) is None for n in range(50))
        bodies.put(store.version, 7, b"again")  # read a second time: kept
        assert bodies.get(7) == b"again"
        bodies.put(store.version, 7, b"third")  # kept pages are replaced at once
        assert bodies.get(7) == b"third"
    finally:
        await store.close()


async def test_the_pages_read_once_are_remembered_within_a_bound() -> None:
    store = await Store.open()
    try:
        bodies = EncodedPages(store)
        for n in range(pages_module._READ_ONCE_KEYS + 1):
            bodies.put(store.version, n, b"x")
        bodies.put(store.version, 1, b"x")  # still remembered: kept
        bodies.put(store.version, 0, b"x")  # the oldest, forgotten: read "once" again
        assert (bodies.get(0), bodies.get(1)) == (None, b"x")
    finally:
        await store.close()


async def test_page_items_stay_while_every_write_touched_only_contacts_above_them() -> None:
    store = await Store.open()
    try:
        bodies = EncodedPages(store, keep_first_reads=True)
        await store.executemany(
            "INSERT INTO contacts(id, createdAt, updatedAt) VALUES (?, '', '')", [(10,), (20,)]
        )
        bodies.put(store.version, "p", b'],"meta":1}', b'{"data":[1,2', [10, 20])
        await store.execute("INSERT INTO contacts(id, createdAt, updatedAt) VALUES (21, '', '')")
        assert bodies.get("p") is None  # the envelope's total may have changed
        assert bodies.items("p", [10, 20]) == b'{"data":[1,2'
        assert bodies.items("p", [10, 21]) is None  # other ids: other items
        await store.execute("UPDATE contacts SET firstName = 'x' WHERE id = 21")
        assert bodies.items("p", [10, 20]) == b'{"data":[1,2'
        await store.execute("UPDATE contacts SET firstName = 'y' WHERE id = 21 OR id = 20")
        assert bodies.items("p", [10, 20]) is None
    finally:
        await store.close()


async def test_id_lists_are_bounded_by_their_total_length() -> None:
    store = await Store.open()
    try:
        await store.write(lambda conn: conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY)"))
        await store.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(1, 11)])
        index = PageIndex(store, max_ids=25)
        queries = [f"SELECT id FROM t WHERE id > {n} ORDER BY id" for n in range(4)]  # 10, 9, 8, 7
        for sql in queries:
            assert len(await index.ids(sql)) == 10 - queries.index(sql)
        assert index.held_ids <= 25
        assert list(await index.ids(queries[3])) == list(range(4, 11))  # still right
    finally:
        await store.close()


def test_the_change_log_answers_the_lowest_id_since_a_version_and_all_once_it_forgot() -> None:
    log = ChangeLog(size=2)
    assert log.lowest_since(0) is None
    log.note(1, 50)
    log.note(2, None)  # a write that touched no contact is not logged
    log.note(3, 70)
    assert (log.lowest_since(0), log.lowest_since(1), log.lowest_since(3)) == (50, 70, None)
    log.note(4, 60)  # the entry of version 1 is forgotten
    assert log.lowest_since(0) == ALL
    assert (log.lowest_since(1), log.lowest_since(3)) == (60, 60)


def test_the_change_log_sums_contacts_added_since_a_version_unless_it_cannot_know() -> None:
    log = ChangeLog(size=3)
    log.note(1, 50, 1)
    log.note(2, 20)  # an update: nothing added
    log.note(3, 71, 2)
    assert (log.added_since(0), log.added_since(1), log.added_since(3)) == (3, 2, 0)
    log.note(4, 9, -1)  # a delete
    assert log.added_since(0) is None  # version 1 is forgotten: not known
    assert log.added_since(2) == 1
    log.note(5, ALL)  # a restore or a write cancelled on the way: any number
    assert (log.added_since(3), log.added_since(5)) == (None, 0)


@settings(max_examples=200, deadline=None)
@given(
    size=st.integers(1, 6),
    writes=st.lists(
        st.tuples(st.one_of(st.none(), st.just(ALL), st.integers(1, 30)), st.integers(-2, 3)),
        max_size=40,
    ),
)
def test_the_change_log_answers_as_a_walk_of_every_write_since(
    size: int, writes: list[tuple[int | None, int]]
) -> None:
    """The log's answers, for every version, equal those of a plain list of the writes it
    still holds: the lowest id and the sum of `added` of the writes after the version, ALL
    or None once a write it needs is forgotten or of unknown extent."""
    log = ChangeLog(size=size)
    logged: list[tuple[int, int, int]] = []  # (version, low, added) of every logged write
    for version, (low, added) in enumerate(writes, start=1):
        log.note(version, low, 0 if low is None else added)
        if low is not None:
            logged.append((version, low, added))
        kept = logged[-size:]
        forgotten = logged[-size - 1][0] if len(logged) > size else -1
        for asked in range(version + 1):
            after = [entry for entry in kept if entry[0] > asked]
            lowest = min((low for _, low, _ in after), default=None)
            added_since = (
                None if any(low == ALL for _, low, _ in after) else sum(n for _, _, n in after)
            )
            if asked < forgotten:
                lowest, added_since = ALL, None
            assert log.lowest_since(asked) == lowest
            assert log.added_since(asked) == added_since


async def test_a_kept_page_of_the_whole_table_is_retotalled_by_writes_above_it() -> None:
    """A write above a full page's last id keeps its items and retotals it without a read;
    one at or below drops it; one that adds nothing keeps it as it is."""
    store = await Store.open()
    try:
        pages = EncodedPages(store, keep_first_reads=True)
        await add_contacts(store, range(1, 11))

        def tail(total: int) -> bytes:
            return f"|{total}".encode()

        pages.put(store.version, "p1", b"|10", b"items", [1, 2, 3, 4, 5], tail, 10)
        pages.put(store.version, "filtered", b"", b"x")
        await store.write(
            lambda c: c.execute(
                "INSERT INTO contacts(id, createdAt, updatedAt) VALUES (11, 'x', 'x')"
            )
        )
        assert pages.get("p1") == b"items|11"
        assert pages.get("filtered") is None  # no tail: dropped by any contact write
        await store.write(lambda c: c.execute("UPDATE contacts SET firstName = 'a' WHERE id = 9"))
        assert pages.get("p1") == b"items|11"  # above the page: nothing added
        await store.write(lambda c: c.execute("DELETE FROM contacts WHERE id = 10"))
        assert pages.get("p1") == b"items|10"
        await store.write(lambda c: c.execute("UPDATE contacts SET firstName = 'a' WHERE id = 5"))
        assert pages.get("p1") is None  # its last contact changed
    finally:
        await store.close()


async def test_a_retotalled_page_keeps_its_items_object_and_answers_in_two_pieces() -> None:
    """A new total is a new end only: the items piece is the very object kept before (no
    copy of ~80 KB per create), the size counts the new end, and the pieces join to the
    answer `get` gives."""
    store = await Store.open()
    try:
        pages = EncodedPages(store, keep_first_reads=True)
        await add_contacts(store, range(1, 11))
        pages.put(store.version, "p1", b"|10", b"items", [1, 2, 3, 4, 5], lambda t: b"|%d" % t, 10)
        items, end = pages.pieces("p1") or (b"", b"")
        assert (items, end, pages.size_bytes) == (b"items", b"|10", 8)
        for new_id in (11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22):
            await add_contacts(store, [new_id])
        again = pages.pieces("p1")
        assert again is not None and again[0] is items and again[1] == b"|22"
        assert pages.get("p1") == b"items|22" and pages.size_bytes == 8
        assert pages.items("p1", [1, 2, 3, 4, 5]) is items
        assert pages.pieces("absent") is None
    finally:
        await store.close()


@settings(max_examples=30, deadline=None)
@given(
    ops=st.lists(
        st.lists(
            st.sampled_from(["page", "page", "create", "delete last"]), min_size=1, max_size=8
        ),
        min_size=1,
        max_size=25,
    )
)
async def test_contact_totals_kept_from_the_log_stay_the_count_under_concurrent_writes(
    ops: list[list[str]],
) -> None:
    """Pages of `contacts` asked while creates and deletes run beside them (bounds reads that
    start before and after a write, two under way at once) answer what a count says once the
    writes are done: a total carried from the change log never counts a write twice."""
    store = await Store.open()
    try:
        await add_contacts(store, range(1, 21))
        index = PageIndex(store)
        await index.table_page("contacts", 1, 5)  # the first count, carried from here on

        async def run(op: str) -> None:
            if op == "page":
                await index.table_page("contacts", 2, 5)
            elif op == "create":
                await store.write(
                    lambda c: c.execute(
                        "INSERT INTO contacts(createdAt, updatedAt) VALUES ('x', 'x')"
                    )
                )
            else:
                await store.write(
                    lambda c: c.execute(
                        "DELETE FROM contacts WHERE id = (SELECT max(id) FROM contacts)"
                    )
                )

        for batch in ops:
            await asyncio.gather(*(run(op) for op in batch))
            ids = [row[0] for row in await store.fetchall("SELECT id FROM contacts ORDER BY id")]
            assert await index.table_page("contacts", 2, 5) == (len(ids), ids[5:10])
    finally:
        await store.close()


async def test_contact_totals_stay_the_count_when_pages_are_asked_at_every_step_of_writes() -> None:
    """A page asked at every turn of the event loop while creates run three at a time: some
    bounds reads start before a write is counted and some after, two of them at once."""
    store = await Store.open()
    try:
        await add_contacts(store, range(1, 21))
        index = PageIndex(store)
        await index.table_page("contacts", 1, 5)
        total = 20
        for _ in range(60):
            writes = [
                store.write(
                    lambda c: c.execute(
                        "INSERT INTO contacts(createdAt, updatedAt) VALUES ('x', 'x')"
                    )
                )
                for _ in range(3)
            ]
            running = asyncio.gather(*writes)
            asked = []
            while not running.done():
                asked.append(asyncio.ensure_future(index.table_page("contacts", 1, 5)))
                await asyncio.sleep(0)
            await asyncio.gather(running, *asked)
            total += 3
            assert await index.table_page("contacts", 1, 5) == (total, [1, 2, 3, 4, 5])
    finally:
        await store.close()


async def test_a_counted_total_is_kept_until_a_write_to_its_table() -> None:
    """A list's member count is read again after a write to list_members only: a create of
    a contact (any other write) leaves it, as it leaves the members."""
    store = await Store.open()
    counts = 0

    def tally() -> int:
        nonlocal counts
        counts += 1
        return 1

    try:
        await store.read(lambda c: c.create_function("tally", 0, tally))
        members = [(1, i) for i in range(1, 6)]
        await store.executemany("INSERT INTO list_members(listId, entityId) VALUES (?, ?)", members)
        index = PageIndex(store)
        sql = "SELECT entityId FROM list_members WHERE listId = ? ORDER BY entityId"
        first = FirstAsk("SELECT count(*) FROM list_members WHERE listId = ? AND tally()")

        async def page() -> tuple[int, list[int]]:
            return await index.counted_page(sql, (1,), 1, 2, first, "list_members")

        assert await page() == (5, [1, 2])
        assert counts
        counts = 0
        await add_contacts(store, [100])
        assert await page() == (5, [1, 2])
        assert counts == 0  # kept
        await store.write(lambda c: c.execute("INSERT INTO list_members VALUES (1, 0)"))
        assert await page() == (6, [0, 1])
        assert counts  # counted again
    finally:
        await store.close()
