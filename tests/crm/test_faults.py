"""Switches and injected faults of the reference CRM, set through /_emulator/crm/settings."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from emulator.crm.faults import (
    DropConnection,
    ErrorStatus,
    FaultCounter,
    LatencyOnly,
    MalformedBody,
    applies,
    endpoint_key,
    fault_kind,
)
from emulator.fixtures.models import FaultRule
from tests.conftest import CRM_KEY

pytestmark = pytest.mark.anyio


async def configure(client: httpx.AsyncClient, **settings: Any) -> dict[str, Any]:
    r = await client.put("/_emulator/crm/settings", json=settings)
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


async def health(client: httpx.AsyncClient) -> int:
    return (await client.get("/crm/health", headers=CRM_KEY)).status_code


async def test_settings_round_trip_and_defaults(client: httpx.AsyncClient) -> None:
    shown = await configure(
        client, syncBack="none", faults=[{"endpoint": "GET /users", "status": 500}]
    )
    assert (await client.get("/_emulator/crm/settings")).json() == shown
    # the key is redacted (no control token) and a redacted key sent back keeps the key
    assert shown["apiKey"] == "***" and shown["faults"][0]["times"] is None
    assert (await client.put("/_emulator/crm/settings", json=shown)).status_code == 200
    assert await health(client) == 200  # the round trip kept the key, not set it to ***


@pytest.mark.parametrize(
    "body,named",
    [
        ({"faults": [{"endpoint": "GET /nowhere", "status": 500}]}, "faults[0].endpoint"),
        ({"faults": [{"status": 200}]}, "faults[0].status"),
        ({"faults": [{"rate": 1.5}]}, "faults[0].rate"),
        ({"faults": [{"times": -1}]}, "faults[0].times"),
        ({"usersStatus": 418}, "usersStatus"),
        ({"syncBack": "some"}, "syncBack"),
        ({"apiKey": ""}, "apiKey"),
    ],
)
async def test_bad_settings_are_400(
    client: httpx.AsyncClient, body: dict[str, Any], named: str
) -> None:
    r = await client.put("/_emulator/crm/settings", json=body)
    assert r.status_code == 400
    assert named in r.json()["message"]


async def test_api_key_and_header_come_from_settings(client: httpx.AsyncClient) -> None:
    await configure(client, apiKey="s3cret", apiKeyHeader="X-CRM-Token")
    assert await health(client) == 401
    r = await client.get("/crm/health", headers={"x-crm-token": "s3cret"})
    assert r.status_code == 200


@pytest.mark.parametrize("status", [404, 405, 501])
async def test_users_endpoint_can_be_absent(client: httpx.AsyncClient, status: int) -> None:
    await configure(client, usersStatus=status)
    r = await client.get("/crm/users", headers=CRM_KEY)
    assert r.status_code == status
    assert set(r.json()) == {"error", "message"}


# --- sync-back modes --------------------------------------------------------------------


async def first_company(client: httpx.AsyncClient) -> dict[str, Any]:
    r = await client.get("/_emulator/crm/companies", params={"pageSize": 100})
    return next(c for c in r.json()["data"] if c["fields"].get("domain"))  # type: ignore[no-any-return]


async def synced(client: httpx.AsyncClient, domain: str) -> dict[str, Any]:
    r = await client.post(
        "/crm/companies/sync",
        headers=CRM_KEY,
        json={"companies": [{"externalId": "x", "domain": domain}]},
    )
    (result,) = r.json()["results"]
    return result  # type: ignore[no-any-return]


async def test_sync_back_none_all_and_nulls(client: httpx.AsyncClient) -> None:
    company = await first_company(client)
    domain = company["fields"]["domain"]
    await configure(client, syncBack="none")
    assert "properties" not in await synced(client, domain)
    await configure(client, syncBack="all")
    assert (await synced(client, domain))["properties"] == company["fields"]
    await configure(client, syncBack="nulls")
    props = (await synced(client, domain))["properties"]
    assert props == {
        "accountTier": company["fields"]["accountTier"],
        "totalDeals": None,
        "lifetimeValue": company["fields"]["lifetimeValue"],
        "accountOwner": None,
    }


# --- per-record failures ----------------------------------------------------------------


async def test_sync_errors_land_in_errors_not_results(client: httpx.AsyncClient) -> None:
    """Errors rule 1: partial failure, matched items in results and failed ones in errors."""
    company = await first_company(client)
    await configure(client, syncErrors=["bad-1", "bad-2"])
    r = await client.post(
        "/crm/companies/sync",
        headers=CRM_KEY,
        json={
            "companies": [
                {"externalId": "good", "domain": company["fields"]["domain"]},
                {"externalId": "bad-1", "domain": company["fields"]["domain"]},
                {"externalId": "bad-2", "domain": "unknown.example"},
            ]
        },
    )
    assert r.status_code == 200
    body = r.json()
    assert [x["externalId"] for x in body["results"]] == ["good"]
    assert [e["externalId"] for e in body["errors"]] == ["bad-1", "bad-2"]
    assert all(isinstance(e["error"], str) and e["error"] for e in body["errors"])


async def test_update_failures_fail_only_their_items(client: httpx.AsyncClient) -> None:
    company = await first_company(client)
    await configure(client, updateFailures=[company["crmId"]])
    created = await client.post(
        "/crm/companies", headers=CRM_KEY, json={"companies": [{"externalId": "n", "name": "New"}]}
    )
    new_id = created.json()["results"][0]["crmId"]
    r = await client.put(
        "/crm/companies",
        headers=CRM_KEY,
        json={
            "companies": [
                {"crmId": company["crmId"], "campaignOpens": "2"},
                {"crmId": new_id, "campaignOpens": "3"},
            ]
        },
    )
    first, second = r.json()["results"]
    assert first["crmId"] == company["crmId"] and first["success"] is False and first["error"]
    assert second == {"crmId": new_id, "success": True}
    fields = (await client.get(f"/_emulator/crm/companies/{company['crmId']}")).json()["fields"]
    assert "campaignOpens" not in fields  # a failed item changes nothing


# --- faults per call --------------------------------------------------------------------


async def test_status_fault_answers_the_status_in_the_crm_error_shape(
    client: httpx.AsyncClient,
) -> None:
    await configure(client, faults=[{"endpoint": "POST /companies", "status": 503}])
    r = await client.post(
        "/crm/companies", headers=CRM_KEY, json={"companies": [{"externalId": "1"}]}
    )
    assert r.status_code == 503
    assert r.json() == {"error": "service_unavailable", "message": "Injected fault: status 503"}
    assert "retry-after" not in r.headers
    total = (await client.get("/_emulator/crm/companies")).json()["meta"]["total"]
    await configure(client)
    assert (await client.get("/_emulator/crm/companies")).json()["meta"][
        "total"
    ] == total  # nothing created
    assert await health(client) == 200


async def test_429_carries_retry_after(client: httpx.AsyncClient) -> None:
    await configure(
        client, faults=[{"endpoint": "GET /health", "status": 429, "retryAfterSeconds": 7}]
    )
    r = await client.get("/crm/health", headers=CRM_KEY)
    assert (r.status_code, r.headers["retry-after"]) == (429, "7")
    await configure(client, faults=[{"endpoint": "GET /health", "status": 429}])
    assert (await client.get("/crm/health", headers=CRM_KEY)).headers["retry-after"] == "1"


async def test_faults_come_before_the_key_check(client: httpx.AsyncClient) -> None:
    await configure(client, faults=[{"endpoint": "*", "status": 502}])
    assert (await client.get("/crm/health")).status_code == 502


async def test_times_limits_a_rule_and_rules_chain(client: httpx.AsyncClient) -> None:
    await configure(
        client,
        faults=[
            {"endpoint": "GET /health", "status": 503, "times": 2},
            {"endpoint": "GET /health", "status": 429, "times": 1},
        ],
    )
    assert [await health(client) for _ in range(5)] == [503, 503, 429, 200, 200]
    assert (await client.get("/crm/users", headers=CRM_KEY)).status_code == 200  # other endpoint


async def test_counters_restart_on_settings_replacement_and_reset(
    client: httpx.AsyncClient,
) -> None:
    rule = {"endpoint": "GET /tasks/:taskId", "status": 500, "times": 1}
    await configure(client, faults=[rule])
    statuses = [(await client.get("/crm/tasks/x", headers=CRM_KEY)).status_code for _ in range(2)]
    assert statuses == [500, 404]
    await configure(client, faults=[rule])
    assert (await client.get("/crm/tasks/x", headers=CRM_KEY)).status_code == 500
    assert (await client.post("/_emulator/reset")).status_code == 200
    # Reset brings back the fixture settings (no faults) ...
    assert (await client.get("/crm/tasks/x", headers=CRM_KEY)).status_code == 404
    await configure(client, faults=[rule])
    assert (await client.get("/crm/tasks/x", headers=CRM_KEY)).status_code == 500


async def test_rate_is_a_deterministic_fraction(client: httpx.AsyncClient) -> None:
    rule = {"endpoint": "GET /health", "status": 500, "rate": 0.3, "seed": 11}
    await configure(client, faults=[rule])
    first = [await health(client) for _ in range(60)]
    await configure(client, faults=[rule])
    second = [await health(client) for _ in range(60)]
    assert first == second
    assert 5 <= first.count(500) <= 35
    expected = [500 if applies(FaultRule(**rule), n) else 200 for n in range(1, 61)]  # type: ignore[arg-type]
    assert first == expected


async def test_latency_delays_the_answer(client: httpx.AsyncClient) -> None:
    await configure(client, faults=[{"endpoint": "GET /health", "latencyMs": 150}])
    started = time.monotonic()
    assert await health(client) == 200
    assert time.monotonic() - started >= 0.15


async def test_malformed_body_is_200_and_not_json(client: httpx.AsyncClient) -> None:
    await configure(client, faults=[{"endpoint": "POST /contacts/sync", "malformedBody": True}])
    r = await client.post("/crm/contacts/sync", headers=CRM_KEY, json={"contacts": []})
    assert r.status_code == 200
    with pytest.raises(ValueError):
        r.json()


async def test_reset_clears_what_the_crm_was_sent(client: httpx.AsyncClient) -> None:
    before = (await client.get("/_emulator/crm/contacts")).json()["meta"]["total"]
    tasks_before = (await client.get("/_emulator/crm/tasks")).json()["meta"]["total"]
    assert tasks_before == 4  # the default fixtures' crm.json tasks
    await client.post("/crm/contacts", headers=CRM_KEY, json={"contacts": [{"externalId": "r1"}]})
    await client.post("/crm/tasks", headers=CRM_KEY, json={"subject": "s"})
    await client.post("/crm/activities", headers=CRM_KEY, json={"type": "EMAIL"})
    await configure(client, syncBack="none")
    assert (await client.get("/_emulator/crm/contacts")).json()["meta"]["total"] == before + 1
    await client.post("/_emulator/reset")
    assert (await client.get("/_emulator/crm/contacts")).json()["meta"]["total"] == before
    for kind, seeded in (("tasks", tasks_before), ("activities", 0)):
        assert (await client.get(f"/_emulator/crm/{kind}")).json()["meta"]["total"] == seeded
    assert (await client.get("/_emulator/crm/settings")).json()["syncBack"] == "complete"
    # Ids count from the start again, and the fixtures' records are back as they were.
    r = await client.post(
        "/crm/contacts", headers=CRM_KEY, json={"contacts": [{"externalId": "r2"}]}
    )
    again = r.json()["results"][0]["crmId"]
    listed = (await client.get("/_emulator/crm/contacts", params={"externalId": "r2"})).json()
    assert listed["meta"]["total"] == 1 and listed["data"][0]["crmId"] == again


async def test_inspection_is_paged_and_unknown_kinds_are_404(client: httpx.AsyncClient) -> None:
    r = await client.get("/_emulator/crm/contacts", params={"page": 2, "pageSize": 5})
    body = r.json()
    assert body["meta"]["page"] == 2 and body["meta"]["pageSize"] == 5 and len(body["data"]) == 5
    assert (await client.get("/_emulator/crm/gadgets")).status_code == 404
    assert (await client.get("/_emulator/crm/contacts/nope")).status_code == 404
    assert (await client.get("/_emulator/crm/contacts", params={"pageSize": 0})).status_code == 400


# --- pure rules -------------------------------------------------------------------------


def test_endpoint_keys_accept_either_path_notation() -> None:
    assert endpoint_key("patch /tasks/{taskId}/") == "PATCH /tasks/:taskId"
    assert endpoint_key(" * ") == "*"


def test_counter_only_counts_calls_a_rule_sees() -> None:
    rules = [
        FaultRule(endpoint="GET /users", status=500, times=1),
        FaultRule(endpoint="*", status=503, times=1),
    ]
    counter = FaultCounter()
    taken = [counter.next(rules, "GET /users") for _ in range(3)]
    assert [r.status if r else None for r in taken] == [500, 503, None]


def test_fault_kind_drop_wins_over_status_then_malformed() -> None:
    assert fault_kind(FaultRule(dropConnection=True, status=503)) == DropConnection()
    assert fault_kind(FaultRule(status=503, malformedBody=True)) == ErrorStatus(503, None)
    assert fault_kind(FaultRule(status=429)) == ErrorStatus(429, 1)
    assert fault_kind(FaultRule(status=503, retryAfterSeconds=7)) == ErrorStatus(503, 7)
    assert fault_kind(FaultRule(malformedBody=True)) == MalformedBody()
    assert fault_kind(FaultRule(latencyMs=50)) == LatencyOnly()
