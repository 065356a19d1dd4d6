"""POST /v1/actions starts a queued run; GET /v1/actions/{id}/status reports it (scope ALL)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from tests.conftest import ALL, READONLY
from tests.public_api.checks import assert_bad_bodies, assert_error, assert_guarded
from tests.public_api.paging import fixtures

pytestmark = pytest.mark.anyio

RUN = {
    "actions": [{"type": "VERIFY_LEAD_EMAIL"}, {"type": "ENRICH_WITH_EMAIL"}],
    "contactIds": [1, 2, 3],
}


async def status(client: httpx.AsyncClient, run_id: int) -> dict[str, Any]:
    response = await client.get(f"/v1/actions/{run_id}/status", headers=ALL)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert body["status"] == "success"
    data: dict[str, Any] = body["data"]
    return data


async def test_start_queues_every_action_for_every_contact(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/v1/actions", json={**RUN, "webhookUrl": "https://hooks.example.com/a"}, headers=ALL
    )
    assert response.status_code == 200, response.text
    created = response.json()["data"]
    assert set(created) == {"actionsId", "createdAt"}
    assert created["actionsId"] > max(r.id for r in fixtures().actionsRuns)
    run = await status(client, created["actionsId"])
    assert run == {
        "actionsId": created["actionsId"],
        "entity": "CONTACT",
        "overallStatus": "QUEUED",
        "totalActions": 6,
        "statusCounts": {
            "pending": 0,
            "processing": 0,
            "completed": 0,
            "failed": 0,
            "queued": 6,
            "cancelled": 0,
        },
        "progress": 0.0,
        "createdAt": created["createdAt"],
    }


async def test_status_of_fixture_runs(client: httpx.AsyncClient) -> None:
    for run in fixtures().actionsRuns:
        got = await status(client, run.id)
        total = len(run.actions) * len(run.contactIds)
        counts = run.statusCounts
        done = counts.completed + counts.failed + counts.cancelled
        assert got["totalActions"] == total
        assert got["overallStatus"] == run.overallStatus
        assert got["statusCounts"]["pending"] == counts.pending
        assert got["progress"] == pytest.approx(100 * done / total if total else 0.0, abs=0.01)
        assert 0 <= got["progress"] <= 100


async def test_progress_counts_finished_actions(client: httpx.AsyncClient, app: Starlette) -> None:
    run_id = (await client.post("/v1/actions", json=RUN, headers=ALL)).json()["data"]["actionsId"]
    # Unscheduled (like a fixture run): the stored counts are the answer.
    await app.state.services.emulator.db.execute(
        "DELETE FROM actions_schedule WHERE runId = ?", (run_id,)
    )
    await app.state.services.emulator.db.execute(
        "UPDATE actions_runs SET overallStatus = 'PROCESSING', statusCounts = ? WHERE id = ?",
        ('{"pending":1,"processing":1,"completed":2,"failed":1,"queued":0,"cancelled":1}', run_id),
    )
    got = await status(client, run_id)
    assert got["overallStatus"] == "PROCESSING" and got["progress"] == pytest.approx(66.67)


async def test_unknown_contacts_are_named_and_nothing_is_started(
    client: httpx.AsyncClient,
) -> None:
    response = await client.post(
        "/v1/actions", json={**RUN, "contactIds": [1, 999_998, 999_999]}, headers=ALL
    )
    assert_error(response, 400, "contactIds")
    assert "999998" in response.text and "999999" in response.text
    assert ", 1," not in response.json()["message"]
    unused = max(r.id for r in fixtures().actionsRuns) + 1
    assert_error(await client.get(f"/v1/actions/{unused}/status", headers=ALL), 404)


async def test_body_validation(client: httpx.AsyncClient) -> None:
    for body, field in [
        ({"contactIds": [1]}, "actions"),
        ({"actions": [{"type": "X"}]}, "contactIds"),
        ({**RUN, "actions": []}, "actions"),
        ({**RUN, "contactIds": []}, "contactIds"),
        ({**RUN, "actions": [{}]}, "actions[0].type"),
        ({**RUN, "actions": [{"type": ""}]}, "actions[0].type"),
        ({**RUN, "contactIds": [0]}, "contactIds[0]"),
        ({**RUN, "webhookUrl": "nowhere"}, "webhookUrl"),
    ]:
        assert_error(await client.post("/v1/actions", json=body, headers=ALL), 400, field)
    await assert_bad_bodies(
        client,
        "POST",
        "/v1/actions",
        [
            ("contactIds[0]", {**RUN, "contactIds": ["1"]}),
            ("actions[0]", {**RUN, "actions": ["X"]}),
            ("contactIds", {**RUN, "contactIds": 1}),
        ],
    )


async def test_malformed_and_unknown_ids(client: httpx.AsyncClient) -> None:
    for bad in ("abc", "0", "-3", "2.0"):
        response = await client.get(f"/v1/actions/{bad}/status", headers=ALL)
        assert_error(response, 400, "actionsId")


async def test_both_need_scope_all(client: httpx.AsyncClient, app: Starlette) -> None:
    await assert_guarded(client, app, "POST", "/v1/actions", "ALL", RUN)
    await assert_guarded(client, app, "GET", "/v1/actions/1/status", "ALL")
    assert_error(await client.get("/v1/actions/1/status", headers=READONLY), 403)
