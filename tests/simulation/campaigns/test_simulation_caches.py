"""What the simulation keeps between advances never hides another writer's rows: each chunk
reads the conversations of its own members from the table (nothing of them is kept)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette

from emulator.app import create_app
from tests.conftest import make_settings, open_client
from tests.simulation.sim_helpers import small_fixtures

pytestmark = pytest.mark.anyio
HOUR = 3600


@pytest.fixture
def visit_first(tmp_path: Path) -> Path:
    """Every campaign visits profiles first (no conversation) and sends a request a day later."""
    directory = small_fixtures(tmp_path / "fx", contacts=12, campaigns=2)
    path = directory / "campaigns.json"
    rows = json.loads(path.read_text())
    for row in rows:
        row["sequence"] = [
            {"type": "PROFILE_VISIT", "delaySeconds": 0},
            {"type": "CONNECTION_REQUEST", "delaySeconds": 86_400, "content": "Hi"},
        ]
    path.write_text(json.dumps(rows))
    return directory


@pytest.fixture
def app(visit_first: Path) -> Starlette:
    return create_app(make_settings(fixtures=str(visit_first)))


@pytest.fixture
async def client(app: Starlette) -> AsyncIterator[httpx.AsyncClient]:
    async with open_client(app) as c:
        yield c


async def advance(client: httpx.AsyncClient, seconds: int) -> None:
    r = await client.post("/_emulator/clock/advance", json={"seconds": seconds})
    assert r.status_code == 200, r.text


async def test_an_injected_conversation_is_reused_by_the_next_advance(
    app: Starlette, client: httpx.AsyncClient
) -> None:
    db = app.state.services.emulator.db
    await advance(client, HOUR)  # every member visited: the campaigns' conversations are known
    assert (await db.fetchone("SELECT count(*) FROM conversations"))[0] == 0
    campaign, contact = await db.fetchone(
        "SELECT campaignId, contactId FROM campaign_members ORDER BY 1, 2 LIMIT 1"
    )
    r = await client.post(
        "/_emulator/events",
        json={"campaignId": campaign, "contactId": contact, "type": "CONNECTION_REQUEST_SENT"},
    )
    assert r.status_code == 201, r.text
    await advance(client, 2 * 86_400)  # the simulated requests go out
    rows = await db.fetchall(
        "SELECT contactId, campaignId, count(*) FROM conversations GROUP BY 1, 2"
    )
    assert rows and all(n == 1 for *_, n in rows)  # the injected one was found, not doubled
    members = (await db.fetchone("SELECT count(*) FROM campaign_members"))[0]
    assert len(rows) == members
