"""Chunks bounded by item count: an advance writes in chunks of about `chunk_items` items, each
ending between two members (inside a millisecond if need be), tells its progress after each
one, and writes the same story as one big chunk (the pinned digest of test_digest)."""

from __future__ import annotations

import json
import sqlite3
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from emulator.simulation.campaigns import engine
from emulator.simulation.campaigns.scheduling import load_plans
from emulator.simulation.campaigns.timeline import iso, parse_ms, timeline
from emulator.simulation.progress import AdvanceProgress
from tests.simulation.sim_helpers import small_fixtures
from tests.simulation.test_digest import DAY, PINNED, client_for, story

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return small_fixtures(tmp_path_factory.mktemp("chunks"), contacts=1500, campaigns=8, seed=7)


@pytest.mark.parametrize(("name", "items"), [("default", 1), ("default", 7), ("generated", 400)])
async def test_small_chunks_write_the_pinned_story(name: str, items: int, generated: Path) -> None:
    async with client_for(generated if name == "generated" else None) as (app, client):
        app.state.services.simulation.chunk_items = items
        assert await story(app, client, []) == PINNED[name]
        assert await story(app, client, [DAY, 2 * DAY + 17]) == PINNED[name]


async def test_progress_is_told_after_each_chunk(generated: Path) -> None:
    async with client_for(generated) as (app, _client):
        simulation = app.state.services.simulation
        emulator = app.state.services.emulator
        simulation.chunk_items = 500
        told: list[AdvanceProgress] = []
        start = emulator.clock.now()
        result = await simulation.advance_to(start + timedelta(days=1), progress=told.append)
        assert len(told) > 2  # a day of 1,500 contacts' campaigns takes several chunks
        assert [p.events for p in told] == sorted(p.events for p in told)
        assert [p.reached for p in told] == sorted(p.reached for p in told)
        assert {(p.previous, p.target) for p in told} == {(result.previous, result.now)}
        assert told[-1].reached == result.now and told[-1].events == result.events
        steps = [b.events - a.events for a, b in zip([told[0], *told], told, strict=False)]
        assert max(steps) <= 500 + 10  # a chunk ends between members: a few more at most


async def test_a_chunk_stops_inside_a_millisecond_between_members(generated: Path) -> None:
    """Every member's first step falls at the clock's start: a chunk of 50 items ends there,
    at that very millisecond, and the next chunk goes on from the next member."""
    async with client_for(generated) as (app, _client):
        simulation = app.state.services.simulation
        simulation.chunk_items = 50
        start = app.state.services.emulator.clock.now()
        told: list[AdvanceProgress] = []
        await simulation.advance_to(start + timedelta(seconds=1), progress=told.append)
        first = told[0]
        assert first.reached == told[1].reached  # still the same millisecond
        assert 50 <= first.events < told[1].events


async def test_each_advance_does_all_that_is_due_by_its_end(generated: Path) -> None:
    """Small chunks change how often the clock is written, never what one advance does."""
    counts = {}
    for items in (100_000, 50):
        async with client_for(generated) as (app, client):
            app.state.services.simulation.chunk_items = items
            days = []
            for _ in range(6):
                r = await client.post("/_emulator/clock/advance", json={"seconds": DAY})
                assert r.status_code == 200, r.text
                days.append(r.json()["events"])
            counts[items] = days
    assert counts[50] == counts[100_000]


@pytest.fixture
def ahead(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Chunks of 2 members and more touch ahead; the number of contacts each touched ahead."""
    monkeypatch.setattr(engine, "AHEAD_MIN", 2)
    counts: list[int] = []
    of = engine.ahead_of

    def counted(*args: Any) -> dict[int, str]:
        times = of(*args)
        counts.append(len(times))
        return times

    monkeypatch.setattr(engine, "ahead_of", counted)
    return counts


@pytest.mark.parametrize("items", [60, 400, 100_000])
async def test_touches_ahead_write_the_pinned_story(
    items: int, generated: Path, ahead: list[int]
) -> None:
    """A chunk touches the contacts of its first members (with the times of the items it
    surely processes) while it draws the others' timelines, then the contacts whose last
    time differs: the pinned story, whatever limit cuts the chunks."""
    async with client_for(generated) as (app, client):
        app.state.services.simulation.chunk_items = items
        assert await story(app, client, [DAY, 2 * DAY + 17]) == PINNED["generated"]
    assert any(ahead)  # some chunks touched ahead


@pytest.mark.parametrize("items", [60, 2000])
async def test_no_contact_is_touched_past_the_moment_its_chunk_reached(
    items: int, generated: Path, ahead: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between two chunks of an advance (where other requests read), every contact's updatedAt
    is at or before the clock: touching ahead never runs ahead of the chunk's items."""
    async with client_for(generated) as (app, _client):
        simulation = app.state.services.simulation
        simulation.chunk_items = items
        chunk = simulation._paused_gc_chunk
        late: list[tuple[str, str]] = []

        def checked(conn: sqlite3.Connection, **kwargs: Any) -> engine.Chunked:
            done = chunk(conn, **kwargs)
            row = conn.execute("SELECT max(updatedAt) FROM contacts").fetchone()
            if row[0] > iso(done.reached):
                late.append((row[0], iso(done.reached)))
            return done

        monkeypatch.setattr(simulation, "_paused_gc_chunk", checked)
        start = app.state.services.emulator.clock.now()
        await simulation.advance_to(start + timedelta(days=7))
        assert not late
    assert any(ahead)


@pytest.mark.parametrize("items", [60, 2000])
async def test_a_chunk_touches_each_contact_once(
    items: int, generated: Path, ahead: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A contact touched ahead is touched with its last time of the chunk, so the chunk's
    later touch leaves it out: no contact is written twice in one chunk (a second write of
    its row, its updatedAt index entry and its hour counts, for nothing)."""
    touched: list[list[int]] = []  # per chunk, the contacts of each touch, in turn
    text = engine.touches_text

    def recorded(times: dict[int, str]) -> str:
        touched[-1].extend(times)
        return text(times)

    monkeypatch.setattr(engine, "touches_text", recorded)
    async with client_for(generated) as (app, _client):
        simulation = app.state.services.simulation
        simulation.chunk_items = items
        chunk = simulation._paused_gc_chunk

        def counted(conn: sqlite3.Connection, **kwargs: Any) -> engine.Chunked:
            touched.append([])
            return chunk(conn, **kwargs)

        monkeypatch.setattr(simulation, "_paused_gc_chunk", counted)
        start = app.state.services.emulator.clock.now()
        for day in range(1, 8):
            await simulation.advance_to(start + timedelta(days=day))
    assert any(ahead)  # some chunks touched ahead
    assert sum(map(len, touched)) > 0
    assert all(len(contacts) == len(set(contacts)) for contacts in touched)


@pytest.fixture
def same_start(tmp_path: Path) -> Path:
    """Two campaigns whose members all start at the clock's start (one anchor), with other
    sequences: visits then requests a day later, and requests then emails an hour later."""
    directory = small_fixtures(tmp_path / "fx", contacts=24, campaigns=2)
    path = directory / "campaigns.json"
    rows = json.loads(path.read_text())
    rows[0]["sequence"] = [
        {"type": "PROFILE_VISIT", "delaySeconds": 0},
        {"type": "CONNECTION_REQUEST", "delaySeconds": DAY, "content": "Hi {{firstName}}"},
    ]
    rows[1]["sequence"] = [
        {"type": "CONNECTION_REQUEST", "delaySeconds": 0, "content": "Hello"},
        {"type": "EMAIL", "delaySeconds": 3600, "content": "Hi", "subject": "Note"},
    ]
    for row in rows:
        row["outcomeRates"] = {"acceptance": 0.5, "reply": 0.3, "open": 0.5, "click": 0.5}
    path.write_text(json.dumps(rows))
    return directory


async def test_members_started_together_each_walk_their_own_timeline(same_start: Path) -> None:
    """The steps that need no draw are drawn once a chunk for the members of a campaign with
    one anchor (`timeline.shared_start`): each member's events are still its own timeline's
    items up to the clock, drawn alone from its start (`timeline.timeline`), advance after
    advance (the visit's chunk holds the request of the day after), campaign by campaign."""
    async with client_for(same_start) as (app, client):
        db = app.state.services.emulator.db
        members = await db.fetchall(
            "SELECT campaignId, contactId, anchorAt, firstStep FROM simulation_members"
        )
        assert len({anchor for _, _, anchor, _ in members}) == 1
        assert len({campaign for campaign, _, _, _ in members}) == 2
        plans = await db.read(load_plans)
        whole = {
            (campaign, contact): timeline(plans[campaign], contact, parse_ms(anchor), first)
            for campaign, contact, anchor, first in members
        }
        for seconds in (1800, DAY, 3600, 2 * DAY):
            r = await client.post("/_emulator/clock/advance", json={"seconds": seconds})
            assert r.status_code == 200, r.text
            now = parse_ms(r.json()["now"])
            rows = await db.fetchall(
                "SELECT campaignId, contactId, type, occurredAt FROM events ORDER BY id"
            )
            written: dict[tuple[int, int], list[tuple[str, str]]] = {key: [] for key in whole}
            for campaign, contact, etype, at in rows:
                written[(campaign, contact)].append((etype, at))
            for key, items in whole.items():
                due = [item for item in items if item.ms <= now]
                assert [at for _, at in written[key]] == [iso(item.ms) for item in due], key
                kinds = [etype for etype, _ in written[key]]
                visits = plans[key[0]].steps[0].type == "PROFILE_VISIT"
                assert kinds[:1] == ["PROFILE_VISITED" if visits else "CONNECTION_REQUEST_SENT"]
