"""A chunk that fails leaves no trace: each chunk is one transaction, and a failure after any of
its writes (on the chunk's thread or the touches' worker, or once the chunk is done but before
its COMMIT) rolls all of it back. The state then equals that of the chunks before it, and the
advances after it write the pinned story (nothing the engine keeps between chunks remembers
the failed one). Whatever makes a chunk cheaper (a journal that copies fewer pages, see
docs/performance.md) must keep this."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from emulator.platform import engagement
from emulator.platform import tasks as platform_tasks
from emulator.simulation.campaigns import batch as batch_module
from emulator.simulation.campaigns import engine
from emulator.simulation.progress import AdvanceProgress, AdvanceStopped
from emulator.store import db as store_db
from tests.simulation.sim_helpers import small_fixtures
from tests.simulation.test_digest import PINNED, client_for, digest

pytestmark = pytest.mark.anyio
CHUNK_ITEMS = 600  # a day of the fixtures below: several chunks, the first ones touching ahead
# Written by the health check that follows a finished advance (a failed one runs no listener).
AFTER_ADVANCE = {"crm_connection"}


class Injected(Exception):
    """The failure a test injects after a write."""


class Writes:
    """Counts the chunk's writes as they happen; raises Injected after the `fail_after`-th."""

    def __init__(self) -> None:
        self.done: list[str] = []
        self.fail_after: int | None = None

    def wrote(self, label: str) -> None:
        self.done.append(label)
        if self.fail_after is not None and len(self.done) == self.fail_after:
            raise Injected(f"after write {len(self.done)}: {label}")


def _counted(writes: Writes, label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        out = fn(*args, **kwargs)
        writes.wrote(label)
        return out

    return wrapped


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> Iterator[Writes]:
    """Every write a chunk makes, counted: the contacts' touches (on the worker), the tasks,
    each statement of the conversations, messages and events, the members, the campaigns
    completed, the clock; and the end of the chunk's function, before its COMMIT."""
    counter = Writes()

    def statements(conn: sqlite3.Connection, made: Any) -> None:
        for sql, params in made:
            conn.executemany(sql, params)
            counter.wrote(sql.split("(")[0].strip())

    monkeypatch.setattr(engine, "touch_text", _counted(counter, "touch", engine.touch_text))
    monkeypatch.setattr(
        platform_tasks,
        "insert_sequence_tasks",
        _counted(counter, "tasks", platform_tasks.insert_sequence_tasks),
    )
    monkeypatch.setattr(batch_module, "run_statements", statements)
    monkeypatch.setattr(
        engagement, "write_members", _counted(counter, "members", engagement.write_members)
    )
    monkeypatch.setattr(
        engine, "complete_finished", _counted(counter, "completed", engine.complete_finished)
    )
    monkeypatch.setattr(engine, "write_meta", _counted(counter, "clock", engine.write_meta))
    collect = store_db.collect_changes

    def before_commit(conn: sqlite3.Connection) -> Any:
        counter.wrote("before COMMIT")
        return collect(conn)

    monkeypatch.setattr(store_db, "collect_changes", before_commit)
    yield counter


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return small_fixtures(tmp_path_factory.mktemp("failures"), contacts=1500, campaigns=8, seed=7)


async def state(app: Starlette) -> str:
    """A digest of every table of the database, the engine's own included."""
    db = app.state.services.emulator.db
    h = hashlib.sha256()
    for (name,) in await db.fetchall(
        "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
    ):
        if name in AFTER_ADVANCE:
            continue
        h.update(f"\0{name}\0".encode())
        rows = sorted(repr(tuple(row)) for row in await db.fetchall(f'SELECT * FROM "{name}"'))
        h.update("\n".join(rows).encode())
    return h.hexdigest()


def in_small_chunks(app: Starlette) -> datetime:
    """The engine set to chunks of CHUNK_ITEMS items; answers the clock (where days start)."""
    app.state.services.simulation.chunk_items = CHUNK_ITEMS
    now: datetime = app.state.services.emulator.clock.now()
    return now


async def chunks_of_a_day(app: Starlette, start: datetime, writes: Writes) -> list[int]:
    """A clean one-day advance from `start`: how many writes each chunk made."""
    per_chunk: list[int] = []
    writes.done.clear()

    def told(_: AdvanceProgress) -> None:
        per_chunk.append(len(writes.done) - sum(per_chunk))

    await app.state.services.simulation.advance_to(start + timedelta(days=1), progress=told)
    return per_chunk


async def after_chunks(app: Starlette, start: datetime, chunks: int) -> str:
    """The state after the first `chunks` chunks of a clean one-day advance from `start`
    (without the listeners that run after a finished or stopped advance, as after a failed
    one none runs)."""

    told: list[AdvanceProgress] = []

    def stop_after(progress: AdvanceProgress) -> None:
        told.append(progress)
        if len(told) == chunks:
            raise AdvanceStopped("enough")

    simulation = app.state.services.simulation
    listeners, simulation.listeners = simulation.listeners, []
    try:
        if chunks:
            await simulation.advance_to(start + timedelta(days=1), progress=stop_after)
    finally:
        simulation.listeners = listeners
    return await state(app)


async def failed_day(
    app: Starlette, client: httpx.AsyncClient, start: datetime, writes: Writes, point: int
) -> None:
    """After a reset, a one-day advance from `start` whose `point`-th write fails."""
    assert (await client.post("/_emulator/reset")).status_code == 200
    writes.done.clear()
    writes.fail_after = point
    with pytest.raises(Injected):
        await app.state.services.simulation.advance_to(start + timedelta(days=1))
    writes.fail_after = None


async def test_a_failure_after_any_write_of_a_chunk_leaves_no_trace(
    generated: Path, writes: Writes
) -> None:
    async with client_for(generated) as (app, client):
        start = in_small_chunks(app)
        per_chunk = await chunks_of_a_day(app, start, writes)
        assert len(per_chunk) >= 3, per_chunk
        labels = list(writes.done)
        assert {"touch", "members", "clock", "before COMMIT"} <= set(labels)
        assert any(label.startswith("INSERT") for label in labels)
        assert labels.count("touch") > len(per_chunk)  # some chunks touched ahead too
        expected: dict[int, str] = {}
        for point in range(1, sum(per_chunk) + 1):  # not the listeners' writes after them
            chunk = next(i for i in range(len(per_chunk)) if sum(per_chunk[: i + 1]) >= point)
            if chunk not in expected:
                assert (await client.post("/_emulator/reset")).status_code == 200
                writes.done.clear()
                expected[chunk] = await after_chunks(app, start, chunk)
            await failed_day(app, client, start, writes, point)
            assert await state(app) == expected[chunk], (point, labels[point - 1])
            assert (
                await app.state.services.emulator.db.read(lambda conn: conn.in_transaction) is False
            )


@pytest.mark.parametrize(
    ("kind", "nth"),
    [("touch", -1), ("INSERT OR FAIL INTO events", -1), ("members", -1)]
    + [("before COMMIT", n) for n in range(2)],  # the first two chunks make conversations
)
async def test_the_advances_after_a_failed_chunk_write_the_pinned_story(
    generated: Path, writes: Writes, kind: str, nth: int
) -> None:
    """Nothing the engine keeps between chunks (timelines, conversation ids) remembers what
    the failed chunk wrote: the thirty days written after it are the pinned ones."""
    async with client_for(generated) as (app, client):
        simulation, emulator = app.state.services.simulation, app.state.services.emulator
        start = in_small_chunks(app)
        per_chunk = await chunks_of_a_day(app, start, writes)
        labels = writes.done[: sum(per_chunk)]  # not the listeners' writes after them
        # the last write of that kind in the day's second chunk or later: a chunk after
        # others, whose conversations and timelines the engine has kept
        point = [i for i, label in enumerate(labels, 1) if label == kind][nth]
        await failed_day(app, client, start, writes, point)
        assert emulator.clock.now() < start + timedelta(days=1)
        await simulation.advance_to(start + timedelta(days=30))
        assert emulator.clock.now() == start + timedelta(days=30)
        assert await digest(app) == PINNED["generated"]


async def test_a_statement_that_fails_half_way_leaves_none_of_its_rows(generated: Path) -> None:
    """An insert of many events that fails at its 50th row (OR FAIL keeps the 49 before it
    when it fails): the chunk's transaction takes them back with the rest. This is what a
    chunk without a rollback journal could not do (docs/performance.md)."""
    async with client_for(generated) as (app, client):
        simulation, db = app.state.services.simulation, app.state.services.emulator.db
        start = in_small_chunks(app)
        assert (await client.post("/_emulator/reset")).status_code == 200
        before = await state(app)

        def fail_at_the_50th_event(conn: sqlite3.Connection) -> None:
            conn.executescript(
                "CREATE TEMP TABLE inserted(n INTEGER); INSERT INTO inserted VALUES (0);"
                " CREATE TEMP TRIGGER fail_half_way AFTER INSERT ON main.events BEGIN"
                " UPDATE inserted SET n = n + 1;"
                " SELECT RAISE(FAIL, 'injected at the 50th event')"
                " WHERE (SELECT n FROM inserted) >= 50; END;"
            )

        await db.read(fail_at_the_50th_event)
        try:
            with pytest.raises(sqlite3.IntegrityError, match="injected at the 50th event"):
                await simulation.advance_to(start + timedelta(days=1))
        finally:
            await db.read(
                lambda conn: conn.executescript(
                    "DROP TRIGGER fail_half_way; DROP TABLE temp.inserted;"
                )
            )
        assert await state(app) == before
        await simulation.advance_to(start + timedelta(days=30))
        assert await digest(app) == PINNED["generated"]
