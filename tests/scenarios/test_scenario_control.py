"""POST /_emulator/scenarios/run (isolated from the serving state) and /_emulator/tasks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ALL

pytestmark = pytest.mark.anyio
SCENARIOS = Path(__file__).resolve().parents[2] / "fixtures" / "scenarios"


def inline(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((SCENARIOS / name).read_text())
    data["fixtures"]["directory"] = str(SCENARIOS / "_small")
    return data


async def test_run_inline_scenario_leaves_serving_state_alone(client: httpx.AsyncClient) -> None:
    before = (await client.get("/v1/company/1", headers=ALL)).json()
    answer = await client.post("/_emulator/scenarios/run", json=inline("link-templates.json"))
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["passed"] == 1 and body["results"][0]["outcome"] == "pass"
    assert (await client.get("/v1/company/1", headers=ALL)).json() == before
    journal = (await client.get("/_emulator/journal")).json()
    assert journal["total"] == 0
    assert (await client.get("/_emulator/crm/companies")).json()["meta"]["total"] == (
        len(
            json.loads(
                (Path(__file__).resolve().parents[2] / "fixtures/default/crm.json").read_text()
            )["companies"]
        )
    )


async def test_run_reports_first_failed_expectation(client: httpx.AsyncClient) -> None:
    data = inline("link-templates.json")
    data["expect"]["platform"][1]["fields"]["companyCRMId"] = "nope"
    body = (await client.post("/_emulator/scenarios/run", json=data)).json()
    result = body["results"][0]
    assert result["outcome"] == "fail"
    assert result["failure"]["at"] == "expect.platform[1].fields.companyCRMId"
    assert (result["failure"]["expected"], result["failure"]["actual"]) == (
        '"nope"',
        '"crm-co-000002"',
    )


async def test_run_by_path_and_bad_bodies(client: httpx.AsyncClient, tmp_path: Path) -> None:
    path = SCENARIOS / "task-batch-get-omits-unknown-ids.json"
    body = (await client.post("/_emulator/scenarios/run", json={"path": str(path)})).json()
    assert body["passed"] == 1 and body["results"][0]["file"] == str(path)
    bad = await client.post(
        "/_emulator/scenarios/run", json={"name": "x", "steps": [{"step": "fly"}]}
    )
    assert bad.status_code == 400
    assert bad.json()["errors"][0]["field"] == "steps[0].step"
    missing = await client.post(
        "/_emulator/scenarios/run", json={"path": str(tmp_path / "none.json")}
    )
    assert missing.status_code == 400 and missing.json()["errors"][0]["field"] == "path"
    not_json = await client.post(
        "/_emulator/scenarios/run", content=b"{", headers={"content-type": "application/json"}
    )
    assert not_json.status_code == 400


async def test_tasks_list_create_complete(client: httpx.AsyncClient) -> None:
    listing = (await client.get("/_emulator/tasks")).json()
    # the default fixtures' tasks.json: 7 tasks, 3 completed on the platform (4, 6, 7); 1 and
    # 2 are completed on the CRM only (the platform learns it at the next read-back)
    assert listing["meta"]["total"] == 7
    fixture_open = [t["id"] for t in listing["data"] if not t["completed"]]
    assert fixture_open == [1, 2, 3, 5]
    made = await client.post("/_emulator/tasks", json={"contactId": 1, "campaignId": 1})
    assert made.status_code == 201, made.text
    task = made.json()
    assert task["completed"] is False and task["stepIndex"] == 5 and task["crmTaskId"] is None
    again = await client.post("/_emulator/tasks", json={"contactId": 1, "campaignId": 1})
    assert again.status_code == 400 and again.json()["errors"][0]["field"] == "stepIndex"
    no_task_step = await client.post("/_emulator/tasks", json={"contactId": 1, "campaignId": 2})
    assert no_task_step.status_code == 400
    unknown = await client.post("/_emulator/tasks", json={"contactId": 99999, "campaignId": 1})
    assert unknown.status_code == 400 and unknown.json()["errors"][0]["field"] == "contactId"
    second = (await client.post("/_emulator/tasks", json={"contactId": 2, "campaignId": 1})).json()

    done = (await client.post("/_emulator/tasks/complete", json={"ids": [task["id"], 777]})).json()
    assert done == {"completed": [task["id"]], "unknown": [777]}
    open_tasks = (await client.get("/_emulator/tasks?completed=false")).json()
    assert [t["id"] for t in open_tasks["data"]] == [*fixture_open, second["id"]]
    closed = (await client.get("/_emulator/tasks?completed=true&pageSize=100")).json()["data"]
    mine = next(t for t in closed if t["id"] == task["id"])
    assert mine["completed"] is True and mine["completedAt"]
    everything = (await client.post("/_emulator/tasks/complete", json={"all": True})).json()
    assert everything["completed"] == [*fixture_open, second["id"]]
    for body in ({}, {"ids": [1], "all": True}, {"ids": "x"}):
        assert (await client.post("/_emulator/tasks/complete", json=body)).status_code == 400
    assert (await client.get("/_emulator/tasks?completed=maybe")).status_code == 400
