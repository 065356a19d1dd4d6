"""Actions runs on the clock: the timeline's counts, the status endpoint, completion deliveries."""

from __future__ import annotations

import json
from datetime import timedelta

import httpx
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette

from emulator.simulation.actions.timeline import Timeline
from emulator.simulation.dispatch import DeliveryListener
from emulator.wire import parse_iso
from tests.conftest import ALL
from tests.simulation.webhooks.delivery_harness import T0, fail_first, scripted_receiver

pytestmark = pytest.mark.anyio

ORDER = ["QUEUED", "PENDING", "PROCESSING", "END"]


@settings(max_examples=60, deadline=None)
@given(
    run_id=st.integers(1, 10_000),
    contacts=st.lists(st.integers(1, 500), min_size=1, max_size=40),
    actions=st.lists(
        st.sampled_from(["VERIFY_LEAD_EMAIL", "ENRICH_WITH_EMAIL"]), min_size=1, max_size=2
    ),
    moments=st.lists(st.integers(-1_000, 80_000), min_size=1, max_size=30),
)
def test_counts_always_sum_to_total_and_only_move_forward(
    run_id: int, contacts: list[int], actions: list[str], moments: list[int]
) -> None:
    timeline = Timeline(run_id, T0, contacts, actions)
    total = len(contacts) * len(actions)
    previous_rank, previous_done = 0, 0
    for ms in sorted(moments):
        state = timeline.state(T0 + timedelta(milliseconds=max(ms, 0)))
        counts = msgspec.structs.asdict(state.counts)
        assert sum(counts.values()) == total and min(counts.values()) >= 0
        done = counts["completed"] + counts["failed"]
        rank = ORDER.index(state.overallStatus if state.overallStatus in ORDER[:3] else "END")
        assert rank >= previous_rank and done >= previous_done
        assert (rank == 3) == (done == total)
        if state.overallStatus == "COMPLETED":
            assert counts["failed"] == 0
        if state.overallStatus == "FAILED":
            assert counts["completed"] == 0
        if state.overallStatus == "PARTIAL":
            assert counts["completed"] and counts["failed"]
        previous_rank, previous_done = rank, done
    # the same run always ends the same way
    end = T0 + timedelta(hours=1)
    assert Timeline(run_id, T0, contacts, actions).state(end) == timeline.state(end)


async def test_a_run_sends_one_completion_per_contact_with_retries(
    client: httpx.AsyncClient, app: Starlette
) -> None:
    listener = DeliveryListener(app.state.services.emulator)
    with scripted_receiver(fail_first(1)) as receiver:
        started = await client.post(
            "/v1/actions",
            headers=ALL,
            json={
                "actions": [{"type": "VERIFY_LEAD_EMAIL"}, {"type": "ENRICH_WITH_EMAIL"}],
                "contactIds": [3, 1, 2],
                "webhookUrl": f"{receiver.url}/done",
            },
        )
        assert started.status_code == 200, started.text
        run = started.json()["data"]
        t0 = parse_iso(run["createdAt"])
        await listener(t0 + timedelta(seconds=15))  # contact 3 ended; its first attempt fails
        stored = await app.state.services.emulator.db.fetchone(
            "SELECT overallStatus, statusCounts FROM actions_runs WHERE id = ?",
            (run["actionsId"],),
        )
        assert stored is not None and stored[0] == "PROCESSING"
        assert sum(json.loads(stored[1]).values()) == 6
        assert [g.json["data"]["contactId"] for g in receiver.received] == [3]
        await listener(t0 + timedelta(minutes=2))
    bodies = [g.json for g in receiver.received]
    firsts = {b["data"]["contactId"]: b for b in bodies}
    assert sorted(firsts) == [1, 2, 3] and len(bodies) == 6  # each refused once, then accepted
    for body in firsts.values():
        assert body["eventType"] == "ACTIONS_CONTACT_COMPLETED"
        assert body["data"]["actionsId"] == run["actionsId"]
        assert [a["type"] for a in body["data"]["actions"]] == [
            "VERIFY_LEAD_EMAIL",
            "ENRICH_WITH_EMAIL",
        ]
    assert firsts[3]["timestamp"] < firsts[1]["timestamp"] < firsts[2]["timestamp"]
    listed = await client.get(f"/_emulator/actions/{run['actionsId']}/deliveries")
    assert listed.status_code == 200
    attempts = [
        (d["contactId"], d["attemptNumber"], d["statusCode"]) for d in listed.json()["data"]
    ]
    assert attempts == [
        (3, 1, 500),
        (1, 1, 500),
        (2, 1, 500),
        (3, 2, 200),
        (1, 2, 200),
        (2, 2, 200),
    ]
    assert (await client.get("/_emulator/actions/999999/deliveries")).status_code == 404


async def test_status_follows_the_virtual_clock(client: httpx.AsyncClient) -> None:
    started = await client.post(
        "/v1/actions",
        headers=ALL,
        json={
            "actions": [{"type": "VERIFY_LEAD_EMAIL"}],
            "contactIds": list(range(1, 21)),
        },
    )
    run_id = started.json()["data"]["actionsId"]
    seen = []
    for step in (0, 6, 5, 5, 3, 10, 60):  # seconds: QUEUED .. PENDING .. PROCESSING .. end
        response = await client.post("/_emulator/clock/advance", json={"seconds": step})
        assert response.status_code == 200, response.text
        status = (await client.get(f"/v1/actions/{run_id}/status", headers=ALL)).json()["data"]
        counts = status["statusCounts"]
        assert sum(counts.values()) == status["totalActions"] == 20
        done = counts["completed"] + counts["failed"]
        assert status["progress"] == pytest.approx(done / 20 * 100, abs=0.01)
        seen.append((status["overallStatus"], done))
    assert [s for s, _ in seen[:4]] == ["QUEUED", "PENDING", "PROCESSING", "PROCESSING"]
    assert seen[3][1] == 2 and seen[4][1] == 5  # t0 + 16 s: two contacts ended; + 19 s: five
    assert seen[-1][0] in ("COMPLETED", "PARTIAL", "FAILED") and seen[-1][1] == 20
