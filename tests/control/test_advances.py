"""/_emulator/clock/advances: a clock advance in the background, followed through HTTP while it
runs (how far it got, events so far), its result the synchronous advance's, one at a time,
stopped by DELETE or a reset, bad input and unknown ids in the documented error shape."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from emulator.app import create_app
from tests.conftest import make_settings, open_client
from tests.simulation.sim_helpers import small_fixtures

pytestmark = pytest.mark.anyio
FOUR_WEEKS = 28 * 86400  # the generated campaigns' sequences end within four weeks


@pytest.fixture(scope="module")
def members(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """2,000 contacts in 3 ACTIVE campaigns: four weeks are several chunks of about 0.1 to 1
    s each (one chunk is at most a simulated week), long enough to be followed."""
    return small_fixtures(tmp_path_factory.mktemp("advances") / "fx", contacts=2000)


@pytest.fixture
async def api(members: Path) -> AsyncIterator[httpx.AsyncClient]:
    async with open_client(create_app(make_settings(fixtures=str(members)))) as client:
        yield client


async def follow(client: httpx.AsyncClient, location: str) -> list[dict[str, Any]]:
    """Every distinct state GET `location` showed until the advance ended (polled each 5 ms)."""
    seen: list[dict[str, Any]] = []
    with anyio.fail_after(120):
        while True:
            answer = await client.get(location)
            assert answer.status_code == 200, answer.text
            state = answer.json()
            if not seen or state != seen[-1]:
                seen.append(state)
            if state["status"] != "running":
                return seen
            await anyio.sleep(0.005)


async def start(client: httpx.AsyncClient, body: dict[str, Any]) -> httpx.Response:
    started = await client.post("/_emulator/clock/advances", json=body)
    assert started.status_code == 202, started.text
    return started


async def test_a_background_advance_is_followed_until_done_with_the_synchronous_result(
    api: httpx.AsyncClient, members: Path
) -> None:
    clock = (await api.get("/_emulator/clock")).json()["now"]
    started = await start(api, {"seconds": FOUR_WEEKS})
    run = started.json()
    assert started.headers["location"] == f"/_emulator/clock/advances/{run['id']}"
    assert run["status"] == "running" and run["previous"] == clock == run["reached"]
    assert run["events"] == 0 and run["percent"] == 0 and run["result"] is None
    seen = await follow(api, started.headers["location"])
    done = seen[-1]
    assert done["status"] == "done" and done["message"] is None and done["finishedAt"]
    assert done["percent"] == 100 and done["reached"] == done["target"] == done["result"]["now"]
    assert done["events"] == done["result"]["events"] > 0
    # it was followed: states between the start and the end, each further on than the last
    middle = [s for s in seen if s["status"] == "running" and 0 < s["events"] < done["events"]]
    assert middle, seen
    for before, after in pairwise(seen):
        assert before["reached"] <= after["reached"] and before["events"] <= after["events"]
        assert before["percent"] <= after["percent"]
    assert (await api.get("/_emulator/clock")).json()["now"] == done["reached"]
    listed = (await api.get("/_emulator/clock/advances")).json()["data"]
    assert [a["id"] for a in listed] == [run["id"]] and listed[0] == done

    # the same advance, synchronous, on a fresh emulator: the same result to the event
    async with open_client(create_app(make_settings(fixtures=str(members)))) as fresh:
        sync = await fresh.post("/_emulator/clock/advance", json={"seconds": FOUR_WEEKS})
        assert sync.status_code == 200
        assert sync.json() == done["result"]


async def test_one_background_advance_at_a_time(api: httpx.AsyncClient) -> None:
    first = await start(api, {"seconds": FOUR_WEEKS})
    second = await api.post("/_emulator/clock/advances", json={"seconds": 60})
    assert second.status_code == 409 and second.headers["retry-after"] == "1"
    body = second.json()
    assert body["status"] == "error" and first.json()["id"] in body["message"]
    assert body["message"].startswith("busy: clock advance")
    await follow(api, first.headers["location"])
    # once it ended the next one starts
    assert (await start(api, {"seconds": 60})).json()["status"] == "running"


async def test_delete_stops_it_after_the_current_chunk_and_what_it_did_stands(
    api: httpx.AsyncClient,
) -> None:
    started = await start(api, {"seconds": FOUR_WEEKS})
    location = started.headers["location"]
    stopped = await api.delete(location)
    assert stopped.status_code == 200, stopped.text
    run = stopped.json()
    assert run["status"] == "cancelled" and location.rsplit("/", 1)[1] in run["message"]
    assert run["message"].startswith(f"stopped at {run['reached']}: DELETE ")
    assert run["previous"] < run["reached"] < run["target"] and 0 < run["percent"] < 100
    assert run["result"]["now"] == run["reached"] and run["result"]["events"] == run["events"]
    # the clock stays where the advance got, with the events it wrote
    assert (await api.get("/_emulator/clock")).json()["now"] == run["reached"]
    page = (await api.get("/_emulator/events", params={"limit": 1000})).json()["data"]
    assert page and all(e["occurredAt"] <= run["reached"] for e in page)
    # stopping it again answers the same; GET shows it too
    again = await api.delete(location)
    assert again.status_code == 200 and again.json() == run
    assert (await api.get(location)).json() == run


async def test_delete_of_an_ended_advance_is_a_conflict(api: httpx.AsyncClient) -> None:
    started = await start(api, {"seconds": 0})
    assert (await follow(api, started.headers["location"]))[-1]["status"] == "done"
    refused = await api.delete(started.headers["location"])
    assert refused.status_code == 409
    assert refused.json()["message"].endswith("has already finished: done")


async def test_a_reset_stops_the_running_advance_and_its_status_says_so(
    api: httpx.AsyncClient,
) -> None:
    clock = (await api.get("/_emulator/clock")).json()["now"]
    started = await start(api, {"seconds": FOUR_WEEKS})
    run_id = started.json()["id"]
    reset = await api.post("/_emulator/reset")
    assert reset.status_code == 200, reset.text
    assert reset.json()["cancelled"]["advances"] == [run_id]
    run = (await api.get(started.headers["location"])).json()
    assert run["status"] == "cancelled" and "a reset (POST /_emulator/reset)" in run["message"]
    assert run["reached"] < run["target"]
    # the reset won: the clock and the events are the fixtures' again
    assert (await api.get("/_emulator/clock")).json()["now"] == clock
    assert (await api.get("/_emulator/events")).json()["data"] == []
    # a reset with no advance running stops none
    assert (await api.post("/_emulator/reset")).json()["cancelled"]["advances"] == []


BAD: list[tuple[Any, str]] = [
    ({}, ""),
    ({"seconds": 1, "until": "2030-01-01T00:00:00Z"}, ""),
    ({"seconds": -1}, "seconds"),
    ({"seconds": "soon"}, "seconds"),
    ({"until": "yesterday"}, "until"),
    ({"until": "2000-01-01T00:00:00Z"}, "until"),
    ({"seconds": 10**12}, "seconds"),
    ({"seconds": None}, "seconds"),
    ([1, 2], ""),
]


@pytest.mark.parametrize(("body", "field"), BAD)
async def test_bad_input_is_a_400_and_starts_nothing(
    api: httpx.AsyncClient, body: Any, field: str
) -> None:
    refused = await api.post("/_emulator/clock/advances", json=body)
    assert refused.status_code == 400, refused.text
    answer = refused.json()
    assert answer["status"] == "error" and answer["message"]
    assert [e["field"] for e in answer["errors"]] == [field]
    assert (await api.get("/_emulator/clock/advances")).json()["data"] == []


async def test_a_body_that_is_not_json_is_a_400(api: httpx.AsyncClient) -> None:
    refused = await api.post(
        "/_emulator/clock/advances", content=b"{", headers={"content-type": "application/json"}
    )
    assert refused.status_code == 400 and refused.json()["status"] == "error"


@pytest.mark.parametrize("method", ["GET", "DELETE"])
async def test_an_unknown_advance_is_a_404(api: httpx.AsyncClient, method: str) -> None:
    answer = await api.request(method, "/_emulator/clock/advances/nope")
    assert answer.status_code == 404
    assert answer.json() == {"status": "error", "message": "unknown clock advance"}


async def test_finished_advances_are_kept_in_a_bounded_list(api: httpx.AsyncClient) -> None:
    ids = []
    for _ in range(22):
        started = await start(api, {"seconds": 1})
        await follow(api, started.headers["location"])
        ids.append(started.json()["id"])
    listed = [a["id"] for a in (await api.get("/_emulator/clock/advances")).json()["data"]]
    assert listed == list(reversed(ids))[:20]  # newest first, the oldest two gone
    assert (await api.get(f"/_emulator/clock/advances/{ids[0]}")).status_code == 404


async def test_a_workspace_has_its_own_advances_under_its_prefix(api: httpx.AsyncClient) -> None:
    created = await api.post("/_emulator/workspaces")
    assert created.status_code == 201, created.text
    prefix = f"/w/{created.json()['id']}"
    started = await api.post(f"{prefix}/_emulator/clock/advances", json={"seconds": 3600})
    assert started.status_code == 202, started.text
    location = started.headers["location"]
    assert location == f"{prefix}/_emulator/clock/advances/{started.json()['id']}"
    assert (await follow(api, location))[-1]["status"] == "done"
    assert (await api.get(f"{prefix}/_emulator/clock")).json()["now"] > (
        await api.get("/_emulator/clock")
    ).json()["now"]
    assert (await api.get("/_emulator/clock/advances")).json()["data"] == []
    assert (await api.get(location.removeprefix(prefix))).status_code == 404


async def test_format_jsonl_streams_the_advance_until_it_ends(api: httpx.AsyncClient) -> None:
    started = await start(api, {"seconds": FOUR_WEEKS})
    lines: list[dict[str, Any]] = []
    with anyio.fail_after(120):
        url = started.headers["location"]
        async with api.stream("GET", url, params={"format": "jsonl"}) as stream:
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("application/x-ndjson")
            async for line in stream.aiter_lines():
                if line:
                    lines.append(json.loads(line))
    assert lines[0]["id"] == started.json()["id"]
    assert [s["status"] for s in lines[:-1]] == ["running"] * (len(lines) - 1)
    assert lines[-1]["status"] == "done" and lines[-1] == (await api.get(url)).json()
    assert any(0 < s["events"] < lines[-1]["events"] for s in lines), lines  # followed
    for before, after in pairwise(lines):
        assert before["reached"] <= after["reached"] and before["events"] <= after["events"]
    # an ended advance streams its one last line
    again = await api.get(url, params={"format": "jsonl"})
    assert [json.loads(x) for x in again.text.splitlines()] == [lines[-1]]


async def test_an_unknown_format_is_a_400(api: httpx.AsyncClient) -> None:
    started = await start(api, {"seconds": 0})
    refused = await api.get(started.headers["location"], params={"format": "xml"})
    assert refused.status_code == 400
    assert refused.json()["errors"] == [{"field": "format", "message": "must be json or jsonl"}]
