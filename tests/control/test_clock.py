"""/_emulator/clock, /clock/advance and /events: shapes, frozen and realtime time, persistence,
and bad input (400 in the /v1 error shape, never 500)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette

from emulator.app import create_app
from emulator.clock import parse_clock
from emulator.fixtures.loader import DEFAULT_FIXTURES, FixtureError, load_fixture_dir
from tests.conftest import ALL, make_settings, open_client

pytestmark = pytest.mark.anyio
START = json.loads((DEFAULT_FIXTURES / "clock.json").read_text())["start"]


async def test_clock_is_frozen_at_the_fixture_start(client: httpx.AsyncClient) -> None:
    clock = (await client.get("/_emulator/clock")).json()
    assert clock == {"now": START, "mode": "frozen", "speed": None, "start": START}
    await anyio.sleep(0.01)
    assert (await client.get("/_emulator/clock")).json()["now"] == START
    # what the emulator writes carries the clock's time
    made = await client.post(
        "/v1/contact", headers=ALL, json={"firstName": "Clock", "lastName": "Test"}
    )
    assert made.status_code == 201, made.text
    created = (await client.get(f"/v1/contact/{made.json()['data']['id']}", headers=ALL)).json()[
        "data"
    ]
    assert created["createdAt"] == START == created["updatedAt"]
    assert (await client.get("/_emulator/health")).json()["now"] == START


async def test_advance_by_seconds_and_until(client: httpx.AsyncClient) -> None:
    r = (await client.post("/_emulator/clock/advance", json={"seconds": 90.5})).json()
    assert r["previous"] == START and r["now"] == "2026-11-02T09:01:30.500Z"
    r = (
        await client.post("/_emulator/clock/advance", json={"until": "2026-11-03T00:00:00+02:00"})
    ).json()
    assert r["now"] == "2026-11-02T22:00:00.000Z"
    # "until" equal to now is allowed (runs what is due now), earlier is not
    same = await client.post("/_emulator/clock/advance", json={"until": r["now"]})
    assert same.status_code == 200 and same.json()["events"] == 0
    zero = await client.post("/_emulator/clock/advance", json={"seconds": 0})
    assert zero.status_code == 200 and zero.json()["now"] == r["now"]
    assert (await client.get("/_emulator/clock")).json()["now"] == r["now"]


BAD_ADVANCE: list[Any] = [
    {},
    {"seconds": -1},
    {"seconds": 1, "until": "2030-01-01T00:00:00Z"},
    {"until": "yesterday"},
    {"until": "2020-01-01T00:00:00Z"},
    {"seconds": "10"},
    {"seconds": 1e300},
    {"until": 5},
    [],
    "x",
    None,
    {"seconds": True},
    {"until": "2999-01-01T00:00:00Z"},
]


@pytest.mark.parametrize("body", BAD_ADVANCE)
async def test_bad_advances_are_400(client: httpx.AsyncClient, body: Any) -> None:
    r = await client.post("/_emulator/clock/advance", json=body)
    assert r.status_code == 400, r.text
    assert r.json()["status"] == "error" and r.json()["message"]
    assert (await client.get("/_emulator/clock")).json()["now"] == START


JSON = {"content-type": "application/json"}


async def test_malformed_json_is_400(client: httpx.AsyncClient) -> None:
    for path in ("/_emulator/clock/advance", "/_emulator/events"):
        r = await client.post(path, content=b"{not json", headers=JSON)
        assert r.status_code == 400 and r.json()["status"] == "error"
        assert (await client.post(path, content=b"")).status_code == 400


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3)
    ),
    max_leaves=8,
)
event_bodies = st.fixed_dictionaries(
    {},
    optional={
        "campaignId": st.integers(min_value=-2, max_value=10) | json_values,
        "contactId": st.integers(min_value=-2, max_value=300) | json_values,
        "type": st.sampled_from(["EMAIL_SENT", "MESSAGE_REPLIED", "TASK_CREATED", "nope"])
        | json_values,
        "content": json_values,
        "subject": json_values,
        "channel": st.sampled_from(["EMAIL", "SMS"]) | json_values,
        "time": st.sampled_from(["2020-01-01T00:00:00Z", "garbage", START]) | json_values,
    },
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    body=event_bodies | json_values,
    advance_body=st.dictionaries(
        st.sampled_from(["seconds", "until", "x"]), json_values, max_size=2
    ),
)
async def test_hostile_bodies_never_500(
    shared_client: httpx.AsyncClient, body: Any, advance_body: dict[str, Any]
) -> None:
    r = await shared_client.post("/_emulator/events", json=body)
    assert r.status_code in (201, 400, 404, 409), r.text
    assert r.status_code == 201 or r.json()["status"] == "error"
    a = await shared_client.post("/_emulator/clock/advance", json=advance_body)
    assert a.status_code in (200, 400), a.text


async def test_injected_event_and_its_listing(client: httpx.AsyncClient) -> None:
    db_member = (await client.get("/_emulator/events")).json()
    assert db_member == {"data": [], "nextAfterId": None}
    camp = (await client.get("/v1/campaigns", headers=ALL)).json()["data"][0]["id"]
    contacts = (await client.get("/v1/contacts", headers=ALL, params={"pageSize": 100})).json()[
        "data"
    ]
    member = None
    for c in contacts:  # a member of campaign `camp` (contacts.json campaignIds)
        r = await client.post(
            "/_emulator/events",
            json={
                "campaignId": camp,
                "contactId": c["id"],
                "type": "EMAIL_SENT",
                "subject": "Hi",
                "content": "Hello there",
            },
        )
        if r.status_code == 201:
            member = c["id"]
            break
        assert r.status_code == 404
    assert member is not None
    sent = r.json()
    assert sent["type"] == "EMAIL_SENT" and sent["occurredAt"] == START and sent["messageId"]
    later = "2026-11-03T10:00:00.000Z"
    reply = await client.post(
        "/_emulator/events",
        json={
            "campaignId": camp,
            "contactId": member,
            "type": "MESSAGE_REPLIED",
            "content": "Sure",
            "time": later,
        },
    )
    assert reply.status_code == 201 and reply.json()["occurredAt"] == later
    assert (await client.get("/_emulator/clock")).json()["now"] == later  # moved to `time`
    far = await client.post(
        "/_emulator/events",
        json={
            "campaignId": camp,
            "contactId": member,
            "type": "PROFILE_VISITED",
            "time": "2999-01-01",
        },
    )
    assert far.status_code == 400 and far.json()["errors"][0]["field"] == "time"
    early = await client.post(
        "/_emulator/events",
        json={"campaignId": camp, "contactId": member, "type": "PROFILE_VISITED", "time": START},
    )
    assert early.status_code == 400
    listed = (
        await client.get("/_emulator/events", params={"contactId": member, "campaignId": camp})
    ).json()
    mine = [e for e in listed["data"] if e["id"] in (sent["id"], reply.json()["id"])]
    assert [e["type"] for e in mine] == ["EMAIL_SENT", "MESSAGE_REPLIED"]
    assert (
        mine[1]["data"]["content"] == "Sure" and mine[1]["data"]["inReplyTo"] == sent["messageId"]
    )
    assert mine[1]["data"]["channel"] == "EMAIL" and mine[1]["data"]["subject"] == "Re: your note"
    contact = (await client.get(f"/v1/contact/{member}", headers=ALL)).json()["data"]
    assert contact["updatedAt"] == later
    for bad in ({"limit": "0"}, {"limit": "x"}, {"afterId": "-1"}, {"contactId": "a"}):
        r = await client.get("/_emulator/events", params=bad)
        assert r.status_code == 400 and r.json()["status"] == "error"


async def test_open_without_an_email_is_409(app: Starlette, client: httpx.AsyncClient) -> None:
    r = await client.post(
        "/_emulator/events", json={"campaignId": 999, "contactId": 1, "type": "EMAIL_OPENED"}
    )
    assert r.status_code == 404
    campaign, contact = await app.state.services.emulator.db.fetchone(
        "SELECT campaignId, contactId FROM campaign_members m WHERE NOT EXISTS (SELECT 1 FROM"
        " conversations c WHERE c.contactId = m.contactId AND c.campaignId = m.campaignId)"
    )
    for kind in ("EMAIL_OPENED", "LINK_CLICKED"):
        r = await client.post(
            "/_emulator/events", json={"campaignId": campaign, "contactId": contact, "type": kind}
        )
        assert r.status_code == 409 and r.json()["status"] == "error"
    assert (await client.get("/_emulator/events")).json()["data"] == []


async def test_realtime_clock_moves_and_runs_the_simulation() -> None:
    app = create_app(make_settings(clockSpeed=7200.0))  # two virtual hours per wall second
    async with open_client(app) as client:
        first = (await client.get("/_emulator/clock")).json()
        assert first["mode"] == "realtime" and first["speed"] == 7200.0
        await anyio.sleep(1.2)
        now = (await client.get("/_emulator/clock")).json()["now"]
        assert now > first["now"]
        # the ticker ran the simulation (fixture campaigns start at the clock start)
        assert (await client.get("/_emulator/events")).json()["data"]
        assert await app.state.services.emulator.db.get_meta("clock") > START


async def test_a_kept_database_keeps_its_time(tmp_path: Path) -> None:
    settings_ = make_settings(db=str(tmp_path / "state.db"))
    async with open_client(create_app(settings_)) as client:
        moved = (await client.post("/_emulator/clock/advance", json={"seconds": 3600})).json()[
            "now"
        ]
    async with open_client(create_app(settings_)) as client:
        assert (await client.get("/_emulator/clock")).json() == {
            "now": moved,
            "mode": "frozen",
            "speed": None,
            "start": START,
        }
        await client.post("/_emulator/reset")
        assert (await client.get("/_emulator/clock")).json()["now"] == START


def test_parse_clock() -> None:
    assert parse_clock("frozen") is None
    assert parse_clock("realtime") == 1.0
    assert parse_clock("REALTIME:60") == 60.0
    for bad in ("realtime:0", "realtime:-2", "realtime:x", "fast", "frozen:2", "realtime:inf"):
        with pytest.raises(ValueError):
            parse_clock(bad)


def test_clock_file_is_validated(tmp_path: Path) -> None:
    (tmp_path / "clock.json").write_text('{"start": "2026-02-30T00:00:00Z"}')
    with pytest.raises(FixtureError, match=r"clock\.json: start"):
        load_fixture_dir(tmp_path)
    (tmp_path / "clock.json").write_text('{"start": "2026-02-03T04:05:06+01:00"}')
    assert load_fixture_dir(tmp_path).clockStart == "2026-02-03T03:05:06.000Z"
    (tmp_path / "clock.json").write_text('{"begin": 1}')
    with pytest.raises(FixtureError, match=r"clock\.json"):
        load_fixture_dir(tmp_path)
