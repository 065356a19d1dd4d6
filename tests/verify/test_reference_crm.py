"""verify against the reference CRM: every check passes; its switches and faults show in the verdict."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from emulator.app import create_app
from emulator.verify.catalogue import CHECKS
from emulator.verify.report import to_json
from tests.conftest import make_settings
from tests.verify.conftest import failing, outcomes, verify_app

pytestmark = pytest.mark.anyio
KEY = "crm-demo-key"


@pytest.fixture
async def crm() -> AsyncIterator[Starlette]:
    app = create_app(make_settings())
    async with app.router.lifespan_context(app):
        yield app


async def switch(app: Starlette, **changes: Any) -> None:
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://emulator.localhost"
    ) as c:
        settings = (await c.get("/_emulator/crm/settings")).json()
        r = await c.put("/_emulator/crm/settings", json={**settings, **changes})
        assert r.status_code == 200, r.text


async def test_the_reference_crm_passes_every_check_and_the_key_never_shows(crm: Starlette) -> None:
    report = await verify_app(crm, "http://emulator.localhost/crm", KEY, run_id="cafe0001")
    assert report.exitCode == 0 and report.status == "pass", failing(report)
    assert report.summary == {"pass": len(CHECKS), "fail": 0, "warn": 0, "skip": 0}
    assert [c.id for c in report.checks] == [c.id for c in CHECKS]
    assert KEY.encode() not in to_json(report)
    keyed = [x for c in report.checks for x in c.exchanges if x.key == "valid"]
    assert keyed and all(KEY not in (x.request or "") + x.response for x in keyed)


async def test_probe_records_carry_the_marker(crm: Starlette) -> None:
    report = await verify_app(crm, "http://emulator.localhost/crm", KEY, run_id="cafe0002")
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=crm), base_url="http://emulator.localhost"
    ) as c:
        for kind in ("companies", "contacts"):
            create = next(x for x in report.checks if x.id == f"post-{kind}/create")
            sent = json.loads(create.exchanges[0].request or "")[kind]
            for item in sent:
                assert item["externalId"].startswith("verify-cafe0002-")
                page = (
                    await c.get(f"/_emulator/crm/{kind}", params={"externalId": item["externalId"]})
                ).json()
                (stored,) = page["data"]
                assert "verify probe" in json.dumps(stored) and "verify.invalid" in json.dumps(
                    stored
                )


@pytest.mark.parametrize("status", [404, 405, 501])
async def test_users_switched_off_is_allowed(crm: Starlette, status: int) -> None:
    await switch(crm, usersStatus=status)
    report = await verify_app(crm, "http://emulator.localhost/crm", KEY)
    assert report.exitCode == 0, failing(report)
    users = next(c for c in report.checks if c.id == "get-users/list")
    assert users.outcome == "pass" and "owner selection off" in users.message


@pytest.mark.parametrize(("mode", "keeps"), [("none", "skip"), ("all", "pass"), ("nulls", "pass")])
async def test_sync_back_modes(crm: Starlette, mode: str, keeps: str) -> None:
    await switch(crm, syncBack=mode)
    report = await verify_app(crm, "http://emulator.localhost/crm", KEY)
    assert report.exitCode == 0, failing(report)
    assert outcomes(report)["put-companies/keeps-fields"] == keeps


@pytest.mark.parametrize(
    ("fault", "check"),
    [
        ({"endpoint": "PATCH /tasks/batch", "status": 500}, "patch-tasks-batch/complete"),
        ({"endpoint": "POST /tasks/batch", "malformedBody": True}, "post-tasks-batch/known-ids"),
        ({"endpoint": "GET /users", "status": 500}, "get-users/list"),
        ({"endpoint": "POST /associations", "status": 400}, "post-associations/link"),
    ],
)
async def test_a_faulty_endpoint_fails_its_checks_only(
    crm: Starlette, fault: dict[str, Any], check: str
) -> None:
    await switch(crm, faults=[fault])
    report = await verify_app(crm, "http://emulator.localhost/crm", KEY)
    assert report.exitCode == 1
    # The reference CRM answers an injected fault before it checks the key: the endpoint's
    # auth checks fail too, and nothing else does.
    assert {endpoint for _, endpoint in failing(report)} == {fault["endpoint"]}
    assert (check, fault["endpoint"]) in failing(report)


async def test_a_wrong_key_fails_and_says_so(crm: Starlette) -> None:
    report = await verify_app(crm, "http://emulator.localhost/crm", "not-the-key")
    assert report.exitCode == 1
    health = next(c for c in report.checks if c.id == "get-health/status")
    assert health.outcome == "fail" and "API key was rejected" in health.message
