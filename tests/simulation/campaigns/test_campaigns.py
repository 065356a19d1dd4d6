"""Campaign simulation through HTTP: sequences progress on the clock, events change messages,
engagement, tasks and contacts; start/stop; determinism over any split of a time span."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette

from emulator.app import create_app
from emulator.platform.engagement import SEQUENCE_ORDER, engagement_rank
from emulator.wire import now_iso, parse_iso
from tests.conftest import ALL, make_settings, open_client
from tests.simulation.sim_helpers import dump, reseed, small_fixtures

pytestmark = pytest.mark.anyio
DAY = 86400
START = "2026-11-02T09:00:00.000Z"  # fixtures/default/clock.json


async def advance(client: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    r = await client.post("/_emulator/clock/advance", json=body)
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


async def quiet(client: httpx.AsyncClient) -> None:
    """Disable the fixtures' webhook subscriptions: their deliveries would only slow this down."""
    hooks = (await client.get("/v1/webhooks", headers=ALL)).json()["data"]
    for hook in hooks:
        r = await client.patch(f"/v1/webhooks/{hook['id']}", headers=ALL, json={"enabled": False})
        assert r.status_code == 200


async def events(client: httpx.AsyncClient, **params: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    after = 0
    while True:
        page = (
            await client.get(
                "/_emulator/events", params={**params, "afterId": after, "limit": 1000}
            )
        ).json()
        out += page["data"]
        if page["nextAfterId"] is None:
            return out
        after = page["nextAfterId"]


async def test_a_week_moves_campaigns_conversations_and_contacts(
    app: Starlette, client: httpx.AsyncClient
) -> None:
    assert (await client.get("/_emulator/clock")).json()["now"] == START
    await quiet(client)
    result = await advance(client, seconds=7 * DAY)
    assert result["previous"] == START and result["now"] == "2026-11-09T09:00:00.000Z"
    log = await events(client)
    assert len(log) == result["events"] > 0
    assert sum(result["eventsByType"].values()) == result["events"]
    # ids ascending = time order, every event inside the span
    times = [e["occurredAt"] for e in log]
    assert times == sorted(times) and times[0] >= START and times[-1] <= result["now"]
    assert [e["id"] for e in log] == sorted(e["id"] for e in log)

    sent = next(e for e in log if e["type"] == "EMAIL_SENT")
    assert (
        sent["messageId"] == sent["data"]["messageId"]
        and sent["data"]["sentAt"] == sent["occurredAt"]
    )
    conv = await app.state.services.emulator.db.fetchone(
        "SELECT conversationId FROM messages WHERE id = ?", (sent["messageId"],)
    )
    body = (await client.get(f"/v1/conversation/{conv[0]}/messages", headers=ALL)).json()["data"]
    mine = next(m for m in body["messages"] if m["id"] == sent["messageId"])
    assert mine["type"] == "EMAIL" and mine["isContactSender"] is False
    assert mine["createdAt"] == sent["occurredAt"] and "{{" not in (mine["content"] or "")

    # a reply is an inbound message; the member's sequence stopped there
    reply = next(e for e in log if e["type"] == "MESSAGE_REPLIED")
    row = await app.state.services.emulator.db.fetchone(
        "SELECT isContactSender FROM messages WHERE id = ?", (reply["messageId"],)
    )
    assert row == (1,)
    later = [
        e
        for e in log
        if e["contactId"] == reply["contactId"]
        and e["campaignId"] == reply["campaignId"]
        and e["id"] > reply["id"]
    ]
    assert later == []

    # updatedAtFrom sees every contact an event touched
    touched = {e["contactId"] for e in log}
    seen: set[int] = set()
    page = 1
    while True:
        got = (
            await client.get(
                "/v1/contacts",
                headers=ALL,
                params={"updatedAtFrom": START, "pageSize": 100, "page": page},
            )
        ).json()
        seen |= {c["id"] for c in got["data"]}
        if len(got["data"]) < 100:
            break
        page += 1
    assert touched <= seen


async def test_opens_clicks_and_tasks_leave_their_marks(
    app: Starlette, client: httpx.AsyncClient
) -> None:
    await quiet(client)
    await advance(client, seconds=60 * DAY)
    db = app.state.services.emulator.db
    log = await events(client)
    opened = [e for e in log if e["type"] == "EMAIL_OPENED"]
    assert opened
    views = await db.fetchone(
        "SELECT viewCount FROM messages WHERE id = ?", (opened[0]["messageId"],)
    )
    assert views[0] >= sum(1 for e in opened if e["messageId"] == opened[0]["messageId"])
    for e in (e for e in log if e["type"] == "LINK_CLICKED"):
        assert (
            await db.fetchone("SELECT clickCount FROM messages WHERE id = ?", (e["messageId"],))
        )[0] >= 1
    tasks = [e for e in log if e["type"] == "TASK_CREATED"]
    assert tasks
    rows = await db.fetchall("SELECT id, contactId, campaignId FROM platform_tasks")
    assert {(e["data"]["taskId"], e["contactId"], e["campaignId"]) for e in tasks} <= set(rows)
    listed = (await client.get("/_emulator/tasks")).json()
    assert listed["meta"]["total"] >= len(tasks)
    # members that are done: Finished or Replied, and their campaigns COMPLETED
    members = await db.fetchall(
        "SELECT m.sequenceStatus, m.nextActionAt, c.status FROM campaign_members m"
        " JOIN simulation_members s USING (campaignId, contactId)"
        " JOIN campaigns c ON c.id = m.campaignId"
    )
    assert members and all(s in ("Finished", "Replied") and n is None for s, n, _ in members)
    assert {c for *_, c in members} == {"COMPLETED"}
    finished = sum(1 for s, *_ in members if s == "Finished")
    assert finished == sum(1 for e in log if e["type"] == "SEQUENCE_FINISHED")


async def test_reset_rewinds_the_clock_and_forgets_the_story(client: httpx.AsyncClient) -> None:
    await advance(client, seconds=3 * DAY)
    assert await events(client)
    assert (await client.post("/_emulator/reset")).status_code == 200
    assert (await client.get("/_emulator/clock")).json()["now"] == START
    assert await events(client) == []


async def test_start_stop_and_resume(client: httpx.AsyncClient) -> None:
    await quiet(client)
    campaigns = (await client.get("/v1/campaigns", headers=ALL)).json()["data"]
    draft = next(c["id"] for c in campaigns if c["status"] == "DRAFT")
    started = await client.post(f"/_emulator/campaigns/{draft}/start")
    assert started.status_code == 200 and started.json()["status"] in ("ACTIVE", "COMPLETED")
    again = await client.post(f"/_emulator/campaigns/{draft}/start")
    assert again.status_code == 409
    if started.json()["scheduled"] == 0:
        pytest.skip("the draft campaign has no members in these fixtures")
    first = await events(client, campaignId=draft)
    stopped = await client.post(f"/_emulator/campaigns/{draft}/stop")
    assert stopped.json() == {"id": draft, "status": "PENDING", "scheduled": 0}
    assert (await client.post(f"/_emulator/campaigns/{draft}/stop")).status_code == 409
    await advance(client, seconds=30 * DAY)
    assert await events(client, campaignId=draft) == first  # paused: nothing happened
    resumed = await client.post(f"/_emulator/campaigns/{draft}/start")
    assert resumed.json()["status"] == "ACTIVE"
    await advance(client, seconds=60 * DAY)
    after = await events(client, campaignId=draft)
    assert len(after) > len(first)
    # the pause shifted the rest of the story: nothing happened during it
    gap_end = parse_iso(START) + timedelta(days=30)
    assert all(not (START < e["occurredAt"] < now_iso(gap_end)) for e in after[len(first) :])
    status = {
        c["id"]: c["status"]
        for c in (await client.get("/v1/campaigns", headers=ALL)).json()["data"]
    }
    assert status[draft] == "COMPLETED"


async def test_unknown_and_bad_campaign_ids(client: httpx.AsyncClient) -> None:
    assert (await client.post("/_emulator/campaigns/999/start")).status_code == 404
    assert (await client.post("/_emulator/campaigns/999/stop")).status_code == 404
    for bad in ("abc", "-1", "1.5", "１"):
        r = await client.post(f"/_emulator/campaigns/{bad}/start")
        assert r.status_code == 400 and r.json()["status"] == "error"


# ---------------------------------------------------------------------------------------------
# Properties on a small fixture set (one app for the module; reset between examples)


@pytest.fixture(scope="module")
def small_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return small_fixtures(tmp_path_factory.mktemp("sim") / "fx")


@pytest.fixture(scope="module")
def small_app(small_dir: Path) -> Starlette:
    return create_app(make_settings(fixtures=str(small_dir)))


@pytest.fixture(scope="module")
async def small(small_app: Starlette) -> AsyncIterator[httpx.AsyncClient]:
    async with open_client(small_app) as c:
        yield c


SPAN = 20 * DAY
splits = st.lists(st.integers(min_value=0, max_value=SPAN), max_size=6).map(
    lambda cuts: [*sorted(set(cuts)), SPAN]
)


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(min_value=0, max_value=2**20), cuts=splits)
async def test_any_split_of_a_span_gives_the_same_story(
    small: httpx.AsyncClient, small_app: Starlette, small_dir: Path, seed: int, cuts: list[int]
) -> None:
    reseed(small_dir, seed)
    assert (
        await small.post("/_emulator/fixtures", json={"directory": str(small_dir)})
    ).status_code == 200
    await advance(small, seconds=SPAN)
    whole = await dump(small_app)
    assert whole["events"]
    await small.post("/_emulator/reset")
    done = 0
    for cut in cuts:
        await advance(small, seconds=cut - done)
        done = cut
    assert await dump(small_app) == whole


injected = st.sampled_from(
    [
        "CONNECTION_REQUEST_SENT",
        "CONNECTION_REQUEST_ACCEPTED",
        "NETWORK_MESSAGE_SENT",
        "EMAIL_SENT",
        "INMAIL_SENT",
        "MESSAGE_REPLIED",
        "POST_LIKED",
        "PROFILE_VISITED",
        "EMAIL_OPENED",
        "LINK_CLICKED",
    ]
)
actions = st.lists(
    st.one_of(
        st.tuples(st.just("advance"), st.integers(min_value=0, max_value=4 * DAY)),
        st.tuples(injected, st.integers(min_value=0, max_value=10**6)),
    ),
    min_size=1,
    max_size=12,
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=actions)
async def test_engagement_never_moves_backwards_and_one_row_per_injection(
    small: httpx.AsyncClient, small_app: Starlette, small_dir: Path, steps: list[tuple[str, int]]
) -> None:
    reseed(small_dir, 1)
    await small.post("/_emulator/fixtures", json={"directory": str(small_dir)})
    db = small_app.state.services.emulator.db
    members = await db.fetchall("SELECT campaignId, contactId FROM campaign_members ORDER BY 1, 2")

    async def state() -> dict[tuple[int, int], tuple[Any, ...]]:
        rows = await db.fetchall(
            "SELECT campaignId, contactId, engagementStatus, sequenceStatus, opens, clicks, replies"
            " FROM campaign_members"
        )
        return {(r[0], r[1]): r[2:] for r in rows}

    before = await state()
    for kind, n in steps:
        if kind == "advance":
            await advance(small, seconds=n)
        else:
            campaign, contact = members[n % len(members)]
            count = (await db.fetchone("SELECT count(*) FROM events"))[0]
            r = await small.post(
                "/_emulator/events",
                json={
                    "campaignId": campaign,
                    "contactId": contact,
                    "type": kind,
                    "content": "hello",
                },
            )
            if r.status_code == 409:  # an open or click without any email sent
                assert kind in ("EMAIL_OPENED", "LINK_CLICKED")
                assert (await db.fetchone("SELECT count(*) FROM events"))[0] == count
                continue
            assert r.status_code == 201, r.text
            assert (await db.fetchone("SELECT count(*) FROM events"))[0] == count + 1
            row = await db.fetchone(
                "SELECT type, contactId, campaignId FROM events WHERE id = ?", (r.json()["id"],)
            )
            assert row == (kind, contact, campaign)
        after = await state()
        for key, (eng, seq, opens, clicks, replies) in after.items():
            old = before[key]
            assert engagement_rank(eng) >= engagement_rank(old[0]), (key, old[0], eng)
            assert SEQUENCE_ORDER[seq] >= SEQUENCE_ORDER[old[1]]
            assert (opens, clicks, replies) >= (old[2], old[3], old[4])
            assert opens >= old[2] and clicks >= old[3] and replies >= old[4]
        before = after
