"""The engine's timelines kept between chunks are bounded (engine.TIMELINES_KEPT): a member
whose timeline was dropped gets it drawn again, and the story written stays the pinned one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from emulator.simulation.campaigns import engine
from tests.simulation.sim_helpers import small_fixtures
from tests.simulation.test_digest import DAY, PINNED, advance, client_for, digest

pytestmark = pytest.mark.anyio
CAP = 40  # of the generated fixtures' ~1,000 members due in 30 days


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return small_fixtures(tmp_path_factory.mktemp("digest"), contacts=1500, campaigns=8, seed=7)


async def story(generated: Path, steps: list[int], monkeypatch: pytest.MonkeyPatch) -> int:
    """Advance through `steps` in chunks of 50 items, the cap checked after each advance:
    answers how many timelines were started (drawn from their first step)."""
    started = 0
    timeline = engine.Timeline

    def counted(*args: Any) -> Any:
        nonlocal started
        started += 1
        return timeline(*args)

    monkeypatch.setattr(engine, "Timeline", counted)
    async with client_for(generated) as (app, client):
        sim = app.state.services.simulation
        sim.chunk_items = 50  # many chunks: the cap is applied after each
        for seconds in steps:
            await advance(client, seconds)
            assert len(sim._timelines) <= engine.TIMELINES_KEPT
        assert await digest(app) == PINNED["generated"]
    return started


async def test_a_capped_cache_draws_again_and_writes_the_pinned_story(
    generated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = await story(generated, [30 * DAY], monkeypatch)  # every timeline kept
    monkeypatch.setattr(engine, "TIMELINES_KEPT", CAP)
    assert await story(generated, [30 * DAY], monkeypatch) > whole  # dropped, drawn again
    assert await story(generated, [DAY // 3] * 90, monkeypatch) > whole


async def test_below_the_cap_every_timeline_is_kept(generated: Path) -> None:
    async with client_for(generated) as (app, client):
        sim = app.state.services.simulation
        await advance(client, 3 * DAY)
        reached = (
            await app.state.services.emulator.db.fetchone(
                "SELECT count(*) FROM campaign_members WHERE stepIndex > 0"
            )
        )[0]
        assert 0 < len(sim._timelines) < engine.TIMELINES_KEPT
        assert len(sim._timelines) >= reached  # every member that ran a step is still kept
