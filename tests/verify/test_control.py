"""/_emulator/verify: runs in the background against this emulator's /crm or another CRM."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from emulator.verify.catalogue import CHECKS
from emulator.verify.runs import VerifyRuns
from tests.servers import serve_app, unused_url
from tests.verify.strange_crm import HEADER, KEY, StrangeCrm

pytestmark = pytest.mark.anyio


async def finished(client: httpx.AsyncClient, run_id: str, tries: int = 400) -> dict[str, Any]:
    for _ in range(tries):
        body: dict[str, Any] = (await client.get(f"/_emulator/verify/{run_id}")).json()
        if body["status"] != "running":
            return body
        await asyncio.sleep(0.025)
    raise AssertionError("verify run did not finish")


async def test_default_run_verifies_the_own_reference_crm(client: httpx.AsyncClient) -> None:
    started = await client.post("/_emulator/verify")
    assert started.status_code == 202
    run = started.json()
    assert run["status"] == "running" and run["crmUrl"].endswith("/crm")
    assert started.headers["Location"] == f"/_emulator/verify/{run['id']}"
    done = await finished(client, run["id"])
    assert done["status"] == "pass" and done["report"]["exitCode"] == 0
    assert done["report"]["summary"]["pass"] == len(CHECKS) and done["report"]["runId"] == run["id"]
    page = await client.get(f"/_emulator/verify/{run['id']}/report.html")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "Verdict: PASS" in page.text


async def test_another_crm_failing_and_unreachable(client: httpx.AsyncClient) -> None:
    with serve_app(StrangeCrm({"users-500"}).app, lifespan="off") as url:
        body = {"crmUrl": url, "apiKey": KEY, "apiKeyHeader": HEADER}
        run = (await client.post("/_emulator/verify", json=body)).json()
        done = await finished(client, run["id"])
    assert done["status"] == "fail"
    assert [c["id"] for c in done["report"]["checks"] if c["outcome"] == "fail"] == [
        "get-users/list"
    ]
    run = (
        await client.post("/_emulator/verify", json={"crmUrl": unused_url(), "apiKey": "k"})
    ).json()
    done = await finished(client, run["id"])
    assert done["status"] == "error" and "cannot be reached" in done["message"]


async def test_bad_requests_and_unknown_runs(client: httpx.AsyncClient) -> None:
    for body, field in (
        ({"crmUrl": "ftp://x"}, "crmUrl"),
        ({"crmUrl": "http://x"}, "apiKey"),
        ({"apiKeyHeader": " "}, "apiKeyHeader"),
        ({"crmUrl": 3}, "crmUrl"),
    ):
        r = await client.post("/_emulator/verify", json=body)
        assert r.status_code == 400 and r.json()["errors"][0]["field"] == field, r.text
    assert (
        await client.post(
            "/_emulator/verify", content=b"{", headers={"content-type": "application/json"}
        )
    ).status_code == 400
    assert (await client.get("/_emulator/verify/nope")).status_code == 404
    assert (await client.get("/_emulator/verify/nope/report.html")).status_code == 404


async def test_registry_keeps_the_newest_finished_runs() -> None:
    class Instant:
        base_url = "http://crm"

    runs = VerifyRuns(keep=2, running=1)
    started = []
    for _ in range(3):
        run = runs.start(Instant())  # type: ignore[arg-type]
        started.append(run.id)
        for _ in range(50):  # the fake prober crashes the run at once: status error
            if run.status != "running":
                break
            await asyncio.sleep(0.01)
        assert run.status == "error"
    assert runs.get(started[0]) is None and runs.get(started[2]) is not None


async def test_a_deep_run_of_the_own_reference_crm(client: httpx.AsyncClient) -> None:
    started = await client.post("/_emulator/verify", json={"deep": True, "examples": 2, "seed": 9})
    assert started.status_code == 202, started.text
    done = await finished(client, started.json()["id"], tries=2400)
    deep = done["report"]["deep"]
    assert done["status"] == "pass" and deep["outcome"] == "pass", deep
    assert (deep["seed"], deep["examples"], deep["sequences"]) == (9, 2, 2)
    page = await client.get(f"/_emulator/verify/{started.json()['id']}/report.html")
    assert "verify --deep: PASS" in page.text


async def test_deep_options_are_checked(client: httpx.AsyncClient) -> None:
    for body in ({"examples": 3}, {"seed": 1}, {"deep": True, "examples": 0}, {"deep": "yes"}):
        answer = await client.post("/_emulator/verify", json=body)
        assert answer.status_code == 400, (body, answer.text)
