"""/_emulator/v1-faults: faults and overrides on /v1, their counters, and the journal's mark."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from emulator.app import create_app
from tests.conftest import ALL, READONLY, make_settings
from tests.servers import serve_app

pytestmark = pytest.mark.anyio


async def add(client: httpx.AsyncClient, **fault: Any) -> dict[str, Any]:
    r = await client.post("/_emulator/v1-faults", json=fault)
    assert r.status_code == 201, r.text
    return r.json()  # type: ignore[no-any-return]


async def test_status_fault_on_a_route_answers_instead_of_the_handler(
    client: httpx.AsyncClient,
) -> None:
    fault = await add(client, method="GET", route="/v1/contact/{contactId}", status=500)
    r = await client.get("/v1/contact/1", headers=ALL)
    assert r.status_code == 500
    assert r.json() == {"status": "error", "message": "Injected fault: status 500"}
    assert (await client.get("/v1/contacts", headers=ALL)).status_code == 200  # other route
    call = (await client.get("/_emulator/requests", params={"status": "500"})).json()["data"][0]
    assert call["fault"] == {"id": fault["id"], "effects": ["status 500"]}
    listed = (await client.get("/_emulator/v1-faults")).json()["data"]
    assert [(f["id"], f["matched"], f["fired"]) for f in listed] == [(fault["id"], 1, 1)]


async def test_override_with_body_and_headers_and_times(client: httpx.AsyncClient) -> None:
    await add(
        client,
        path="/v1/contact/2",
        status=200,
        body={"id": 2, "firstName": "Overridden"},
        headers={"X-Override": "yes"},
        times=1,
    )
    first = await client.get("/v1/contact/2", headers=ALL)
    assert first.json() == {"id": 2, "firstName": "Overridden"}
    assert first.headers["x-override"] == "yes"
    second = await client.get("/v1/contact/2", headers=ALL)
    assert second.status_code == 200 and second.json() != first.json()


async def test_429_gets_a_retry_after_by_default(client: httpx.AsyncClient) -> None:
    await add(client, route="/v1/contacts", status=429)
    r = await client.get("/v1/contacts", headers=ALL)
    assert (r.status_code, r.headers["retry-after"]) == (429, "1")


async def test_latency_delays_the_real_answer(client: httpx.AsyncClient) -> None:
    await add(client, route="/v1/contacts", latencyMs=300)
    t0 = time.perf_counter()
    r = await client.get("/v1/contacts", headers=ALL)
    assert time.perf_counter() - t0 >= 0.3
    assert r.status_code == 200 and r.json()["data"]
    call = (await client.get("/_emulator/requests")).json()["data"][0]
    assert call["durationMs"] >= 300 and call["fault"]["effects"] == ["latency 300 ms"]


async def test_malformed_cuts_the_real_body_off(client: httpx.AsyncClient) -> None:
    whole = (await client.get("/v1/contact/1", headers=ALL)).content
    await add(client, route="/v1/contact/{contactId}", malformed=True)
    r = await client.get("/v1/contact/1", headers=ALL)
    assert r.status_code == 200
    assert int(r.headers["content-length"]) == len(r.content)
    with pytest.raises(ValueError):
        r.json()
    assert r.content == whole[: len(whole) // 2]


async def test_match_by_key_query_and_json_subset(client: httpx.AsyncClient) -> None:
    await add(client, route="/v1/contacts", keyId="Demo: read only", status=503)
    await add(client, route="/v1/companies", query={"page": "2"}, status=502)
    await add(client, method="POST", route="/v1/contact", json={"email": "x@y.z"}, status=409)
    assert (await client.get("/v1/contacts", headers=ALL)).status_code == 200
    assert (await client.get("/v1/contacts", headers=READONLY)).status_code == 503
    assert (await client.get("/v1/companies", headers=ALL)).status_code == 200
    assert (await client.get("/v1/companies?page=2", headers=ALL)).status_code == 502
    other = await client.post("/v1/contact", headers=ALL, json={"email": "a@b.c"})
    assert other.status_code != 409
    hit = await client.post("/v1/contact", headers=ALL, json={"email": "x@y.z", "firstName": "X"})
    assert hit.status_code == 409
    # the body read ahead for the match still reaches the journal
    call = (await client.get("/_emulator/requests")).json()["data"][0]
    assert call["requestBody"] == {"email": "x@y.z", "firstName": "X"}


async def test_probability_with_a_seed_draws_the_same_calls_every_time() -> None:
    outcomes = []
    for _ in range(2):
        app = create_app(make_settings())
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(
                transport=transport, base_url="http://e.localhost"
            ) as client:
                await add(client, route="/v1/contacts", status=500, probability=0.5, seed=7)
                codes = [
                    (await client.get("/v1/contacts", headers=ALL)).status_code for _ in range(20)
                ]
                outcomes.append(codes)
    assert outcomes[0] == outcomes[1]
    assert 0 < outcomes[0].count(500) < 20


async def test_first_fault_wins_and_times_chain(client: httpx.AsyncClient) -> None:
    await add(client, route="/v1/contacts", status=503, times=2)
    await add(client, route="/v1/contacts", status=429, times=1)
    codes = [(await client.get("/v1/contacts", headers=ALL)).status_code for _ in range(4)]
    assert codes == [503, 503, 429, 200]


async def test_delete_one_all_and_reset_remove_faults(client: httpx.AsyncClient) -> None:
    a = await add(client, route="/v1/contacts", status=500)
    await add(client, route="/v1/companies", status=500)
    assert (await client.delete(f"/_emulator/v1-faults/{a['id']}")).json()["id"] == a["id"]
    assert (await client.delete(f"/_emulator/v1-faults/{a['id']}")).status_code == 404
    assert (await client.get("/v1/contacts", headers=ALL)).status_code == 200
    assert (await client.delete("/_emulator/v1-faults")).json() == {"status": "ok", "cleared": 1}
    await add(client, route="/v1/contacts", status=500)
    await client.post("/_emulator/reset")
    assert (await client.get("/_emulator/v1-faults")).json() == {"data": []}
    assert (await client.get("/v1/contacts", headers=ALL)).status_code == 200


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"route": "/v1/contacts", "status": 500, "nope": 1}, "nope"),
        ({"route": "/v1/nowhere", "status": 500}, "route"),
        ({"route": "/v1/contacts"}, ""),
        ({"route": "/v1/contacts", "status": 700}, "status"),
        ({"route": "/v1/contacts", "drop": True, "status": 500}, "drop"),
        ({"route": "/v1/contacts", "body": {}}, "status"),
        ({"path": "/crm/health", "status": 500}, "path"),
        ({"method": "BREW", "status": 500}, "method"),
        ({"status": 500, "times": 0}, "times"),
        ({"status": 500, "probability": 2}, "probability"),
        ({"latencyMs": 600_000}, "latencyMs"),
        ({"status": "500"}, "status"),
        ({"status": 500, "headers": {"X-A": "b\nc"}}, "headers"),
        ({"status": 500, "headers": {"bad name": "x"}}, "headers"),
        ({"status": 500, "headers": {"Content-Length": "3"}}, "headers"),
    ],
)
async def test_bad_faults_are_400_with_the_field(
    client: httpx.AsyncClient, body: dict[str, Any], field: str
) -> None:
    r = await client.post("/_emulator/v1-faults", json=body)
    assert r.status_code == 400, r.text
    errors = r.json()["errors"]
    assert any(e["field"] == field or field in e["message"] for e in errors), errors
    assert (await client.get("/_emulator/v1-faults")).json() == {"data": []}


async def test_malformed_json_body_is_400(client: httpx.AsyncClient) -> None:
    r = await client.post(
        "/_emulator/v1-faults", content=b"{", headers={"content-type": "application/json"}
    )
    assert r.status_code == 400 and r.json()["status"] == "error"


def test_drop_closes_the_connection_unanswered_and_the_journal_says_so() -> None:
    with serve_app(create_app(make_settings())) as base, httpx.Client(base_url=base) as client:
        r = client.post(
            "/_emulator/v1-faults", json={"route": "/v1/contacts", "drop": True, "times": 1}
        )
        assert r.status_code == 201
        with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
            client.get("/v1/contacts", headers=ALL)
        assert client.get("/v1/contacts", headers=ALL).status_code == 200
        data = client.get("/_emulator/requests").json()["data"]
        assert [c["status"] for c in data] == [200, None]
        assert data[1]["fault"]["effects"] == ["drop"]
        unanswered = client.get("/_emulator/requests", params={"status": "none"}).json()
        assert unanswered["meta"]["total"] == 1
