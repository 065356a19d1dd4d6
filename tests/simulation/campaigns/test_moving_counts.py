"""Each campaign's count of members left to move (simulation_moving, what complete_finished
asks) equals a count of its members with a next action, whatever happened: advances,
injected events, stops and starts, snapshots restored, resets, and a `--db` file reopened."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette

from emulator.app import create_app
from tests.conftest import make_settings, open_client
from tests.simulation.sim_helpers import small_fixtures

pytestmark = pytest.mark.anyio
DAY = 86400
INJECTED = ("CONNECTION_REQUEST_ACCEPTED", "MESSAGE_REPLIED", "PROFILE_VISITED", "EMAIL_OPENED")


async def counts_and_truth(app: Starlette) -> tuple[dict[int, int], dict[int, int]]:
    """The kept counts, and the members with a next action counted afresh (0 for a campaign
    with none), for the campaigns that have a kept count."""
    db = app.state.services.emulator.db
    kept = dict(await db.fetchall("SELECT campaignId, members FROM simulation_moving"))
    truth = dict.fromkeys(kept, 0)
    truth.update(
        await db.fetchall(
            "SELECT campaignId, count(*) FROM campaign_members"
            " WHERE nextActionAt IS NOT NULL GROUP BY campaignId"
        )
    )
    return kept, truth


async def assert_exact(app: Starlette) -> None:
    kept, truth = await counts_and_truth(app)
    assert kept == truth
    db = app.state.services.emulator.db
    for cid, status in await db.fetchall("SELECT id, status FROM campaigns"):
        if status == "COMPLETED":
            assert truth.get(cid, 0) == 0, cid


@pytest.fixture(scope="module")
def fixtures_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return small_fixtures(tmp_path_factory.mktemp("moving") / "fx", contacts=40, campaigns=3)


@pytest.fixture(scope="module")
def moving_app(fixtures_dir: Path) -> Starlette:
    return create_app(make_settings(fixtures=str(fixtures_dir)))


@pytest.fixture(scope="module")
async def moving(moving_app: Starlette) -> AsyncIterator[httpx.AsyncClient]:
    async with open_client(moving_app) as c:
        yield c


step = st.one_of(
    st.tuples(st.just("advance"), st.integers(min_value=1, max_value=12 * DAY)),
    st.tuples(st.sampled_from(INJECTED), st.integers(min_value=0, max_value=10_000)),
    st.tuples(st.sampled_from(("stop", "start")), st.integers(min_value=0, max_value=2)),
    st.tuples(st.sampled_from(("snapshot", "restore", "reset")), st.just(0)),
)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=st.lists(step, min_size=1, max_size=10))
async def test_the_counts_stay_exact(
    moving: httpx.AsyncClient, moving_app: Starlette, steps: list[tuple[str, int]]
) -> None:
    assert (await moving.post("/_emulator/reset")).status_code == 200
    db = moving_app.state.services.emulator.db
    members = await db.fetchall("SELECT campaignId, contactId FROM campaign_members ORDER BY 1, 2")
    campaigns = [cid for (cid,) in await db.fetchall("SELECT id FROM campaigns ORDER BY id")]
    snapshot: str | None = None
    for kind, n in steps:
        response: Any = None
        if kind == "advance":
            response = await moving.post("/_emulator/clock/advance", json={"seconds": n})
        elif kind in ("stop", "start"):
            response = await moving.post(f"/_emulator/campaigns/{campaigns[n]}/{kind}")
            assert response.status_code in (200, 409), response.text
        elif kind == "snapshot":
            response = await moving.post("/_emulator/snapshots", json={})
            snapshot = response.json()["id"]
        elif kind == "restore":
            if snapshot is not None:
                response = await moving.post(f"/_emulator/snapshots/{snapshot}/restore")
        elif kind == "reset":
            response = await moving.post("/_emulator/reset")
        else:
            campaign, contact = members[n % len(members)]
            response = await moving.post(
                "/_emulator/events",
                json={"campaignId": campaign, "contactId": contact, "type": kind, "content": "hi"},
            )
            assert response.status_code in (201, 409), response.text
        assert response is None or response.status_code < 500, response.text
        await assert_exact(moving_app)


async def test_the_counts_last_in_a_db_file_and_are_made_where_missing(
    fixtures_dir: Path, tmp_path: Path
) -> None:
    settings_ = make_settings(fixtures=str(fixtures_dir), db=str(tmp_path / "state.db"))
    app = create_app(settings_)
    async with open_client(app) as client:
        await client.post("/_emulator/clock/advance", json={"seconds": 5 * DAY})
        await assert_exact(app)
        # a file written before the counts were kept: none of them
        await app.state.services.emulator.db.write(
            lambda conn: conn.execute("DELETE FROM simulation_moving")
        )
    app = create_app(settings_)
    async with open_client(app) as client:
        for _ in range(6):
            await client.post("/_emulator/clock/advance", json={"seconds": 5 * DAY})
            await assert_exact(app)
        kept, _ = await counts_and_truth(app)
        assert kept  # counted afresh where asked
        statuses = dict(
            await app.state.services.emulator.db.fetchall("SELECT id, status FROM campaigns")
        )
        assert "COMPLETED" in statuses.values()
