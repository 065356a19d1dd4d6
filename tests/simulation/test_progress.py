"""`Simulation.advance_to(..., progress=)`: told after each chunk how far the advance got, in
order, ending at the target with the result's event count; a callback that raises
AdvanceStopped ends the advance there with what it did standing, the listeners run for the
moment reached, and the clock stays there."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from itertools import pairwise
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette

from emulator.app import create_app
from emulator.simulation.progress import AdvanceProgress, AdvanceStopped
from emulator.wire import parse_iso
from tests.conftest import make_settings, open_client
from tests.simulation.sim_helpers import small_fixtures

pytestmark = pytest.mark.anyio
WEEK = timedelta(days=7)


@pytest.fixture(scope="module")
def members(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return small_fixtures(tmp_path_factory.mktemp("progress") / "fx", contacts=200)


@pytest.fixture
def app(members: Path) -> Starlette:
    return create_app(make_settings(fixtures=str(members)))


@pytest.fixture
async def client(app: Starlette) -> AsyncIterator[httpx.AsyncClient]:
    async with open_client(app) as c:
        yield c


async def test_progress_is_told_after_each_chunk_up_to_the_target(
    app: Starlette, client: httpx.AsyncClient
) -> None:
    simulation = app.state.services.simulation
    start = simulation.emulator.clock.now()
    told: list[AdvanceProgress] = []
    result = await simulation.advance_to(start + 5 * WEEK, progress=told.append)
    assert len(told) >= 2  # five simulated weeks are more than one chunk
    assert {(p.previous, p.target) for p in told} == {(result.previous, result.now)}
    for before, after in pairwise(told):
        assert before.reached < after.reached and before.events <= after.events
    assert told[-1].reached == result.now and told[-1].events == result.events > 0
    assert parse_iso(told[0].reached) > start


async def test_a_stop_ends_the_advance_where_it_got(
    app: Starlette, client: httpx.AsyncClient, members: Path
) -> None:
    simulation = app.state.services.simulation
    start = simulation.emulator.clock.now()
    moments: list[datetime] = []

    async def listener(target: datetime) -> None:
        moments.append(target)

    simulation.listeners.append(listener)
    told: list[AdvanceProgress] = []

    def stop_after_the_first(progress: AdvanceProgress) -> None:
        told.append(progress)
        raise AdvanceStopped("enough")

    result = await simulation.advance_to(start + 5 * WEEK, progress=stop_after_the_first)
    (only,) = told
    assert result.now == only.reached < only.target and result.events == only.events > 0
    assert simulation.emulator.clock.now() == parse_iso(only.reached) == moments[-1]
    # what it wrote stands, and the rest follows on the next advance as if never stopped
    rest = await simulation.advance_to(start + 5 * WEEK)
    assert rest.previous == result.now

    async with open_client(create_app(make_settings(fixtures=str(members)))) as fresh:
        whole = await fresh.post("/_emulator/clock/advance", json={"seconds": 5 * 7 * 86400})
        assert whole.json()["events"] == result.events + rest.events
        assert await _event_rows(fresh) == await _event_rows(client)


async def _event_rows(client: httpx.AsyncClient) -> list[tuple[object, ...]]:
    rows: list[tuple[object, ...]] = []
    after = 0
    while True:
        page = (
            await client.get("/_emulator/events", params={"afterId": after, "limit": 1000})
        ).json()
        rows += [(e["id"], e["type"], e["occurredAt"], e["contactId"]) for e in page["data"]]
        if page["nextAfterId"] is None:
            return rows
        after = page["nextAfterId"]
