"""journal.Coalescer: rows written in batches off the callers' path; a flush stores every row
added before it, and a failed write reaches the phase instead of vanishing."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from emulator.exporter import journal
from emulator.exporter.journal import Coalescer

pytestmark = pytest.mark.anyio


class Store:
    def __init__(self, fail_at: int | None = None) -> None:
        self.writes: list[list[Any]] = []
        self.fail_at = fail_at
        self.running = 0

    async def write(self, rows: list[Any]) -> None:
        assert self.running == 0  # one write at a time
        self.running += 1
        try:
            await asyncio.sleep(0.001)
            if self.fail_at is not None and len(self.writes) == self.fail_at:
                raise RuntimeError("disk full")
            self.writes.append(rows)
        finally:
            self.running -= 1


async def test_rows_share_writes_and_a_flush_stores_them_all() -> None:
    store, stored = Store(), []
    rows = Coalescer(store.write, stored.extend)
    for i in range(250):
        rows.add((i,))
        if i % 10 == 0:
            await asyncio.sleep(0)  # callers come and go meanwhile
    await rows.flush()
    assert [r for batch in store.writes for r in batch] == [(i,) for i in range(250)]
    assert stored == [(i,) for i in range(250)]
    assert len(store.writes) <= 5  # 100 rows a write at most, not one write a row
    assert all(len(batch) <= journal.COALESCE_ROWS for batch in store.writes)


async def test_a_lone_row_is_stored_without_a_flush_after_the_wait() -> None:
    store = Store()
    rows = Coalescer(store.write)
    rows.add(("a",))
    async with asyncio.timeout(5):
        while not store.writes:
            await asyncio.sleep(journal.COALESCE_SECONDS)
    assert store.writes == [[("a",)]]
    await rows.flush()  # nothing left: returns at once
    rows.add(("b",))
    await rows.flush()
    assert store.writes == [[("a",)], [("b",)]]


async def test_a_failed_write_is_raised_by_the_flush_and_by_later_adds() -> None:
    store = Store(fail_at=0)
    rows = Coalescer(store.write)
    rows.add((1,))
    with pytest.raises(RuntimeError, match="disk full"):
        await rows.flush()
    with pytest.raises(RuntimeError, match="disk full"):
        rows.add((2,))
