"""GET /v1/companies, GET /v1/company/{id} and POST /v1/company through HTTP."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emulator.fixtures.models import Company as CompanyFixture
from tests.conftest import ALL, NO_CONTACTS_READ, READONLY
from tests.public_api.paging import fixtures, list_members, walk

pytestmark = pytest.mark.anyio


def company_ids(keep: Any = lambda c: True) -> list[int]:
    return sorted(c.id for c in fixtures().companies if keep(c))


def searched(term: str) -> Any:
    def keep(c: CompanyFixture) -> bool:
        return any(term.casefold() in (v or "").casefold() for v in (c.name, c.domain))

    return keep


FILTERS: list[tuple[dict[str, str], Any]] = [
    ({}, lambda c: True),
    ({"search": "co"}, searched("co")),
    ({"search": "HEALTH"}, searched("health")),
    ({"search": ".io"}, searched(".io")),
    ({"listId": "5"}, lambda c: c.id in list_members(5)),
    ({"updatedAtTo": "2026-07-01"}, lambda c: c.updatedAt <= "2026-07-01T23:59:59.999Z"),
    (
        {"updatedAtFrom": "2026-07-01T00:00:00+02:00", "search": "a"},
        lambda c: c.updatedAt >= "2026-06-30T22:00:00.000Z" and searched("a")(c),
    ),
]


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(page_size=st.integers(1, 100), which=st.integers(0, len(FILTERS) - 1))
async def test_walking_all_pages_yields_each_match_once_in_order(
    shared_client: httpx.AsyncClient, page_size: int, which: int
) -> None:
    params, keep = FILTERS[which]
    ids, total = await walk(shared_client, "/v1/companies", page_size, params=params)
    expected = company_ids(keep)
    assert ids == expected
    assert total == len(expected)


async def test_list_companies_shape(shared_client: httpx.AsyncClient) -> None:
    response = await shared_client.get("/v1/companies?pageSize=100", headers=READONLY)
    assert response.status_code == 200
    doc = response.json()
    assert set(doc) == {"data", "meta"}
    assert doc["meta"] == {"page": 1, "pageSize": 100, "total": len(fixtures().companies)}
    by_id = {c.id: c for c in fixtures().companies}
    for item in doc["data"]:
        fx = by_id[item["id"]]
        assert item["name"] == fx.name
        assert item["hiringOnNetwork"] == fx.hiringOnNetwork
        assert item["isCompanyInCRM"] is (fx.companyCRMId is not None)
        if fx.companyCRMId is None:
            assert item["companyCRMUrl"] is None
        else:
            assert item["companyCRMUrl"].endswith(f"/companies/{fx.companyCRMId}")


async def test_get_company_and_fields(shared_client: httpx.AsyncClient) -> None:
    fx = fixtures().companies[2]
    response = await shared_client.get(f"/v1/company/{fx.id}", headers=ALL)
    assert response.status_code == 200
    body = response.json()
    assert (body["status"], body["message"]) == ("success", "Company retrieved")
    assert body["data"]["domain"] == fx.domain
    assert body["data"]["createdAt"] == fx.createdAt
    response = await shared_client.get(
        f"/v1/company/{fx.id}?fields=domain&fields=isCompanyInCRM", headers=ALL
    )
    assert response.json()["data"] == {
        "id": fx.id,
        "domain": fx.domain,
        "isCompanyInCRM": fx.companyCRMId is not None,
    }


@pytest.mark.parametrize(("ident", "status"), [("999999", 404), ("x", 400), ("-3", 400)])
async def test_get_company_bad_or_unknown_id(
    shared_client: httpx.AsyncClient, ident: str, status: int
) -> None:
    response = await shared_client.get(f"/v1/company/{ident}", headers=ALL)
    assert response.status_code == status


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("page=0", "page"),
        ("page=abc", "page"),
        ("page=1e3", "page"),
        ("page=99999999999999999999999", "page"),
        ("pageSize=0", "pageSize"),
        ("pageSize=101", "pageSize"),
        ("pageSize=", "pageSize"),
        ("fields=nope", "fields"),
        ("updatedAtFrom=2026-02-30", "updatedAtFrom"),
        ("updatedAtTo=now", "updatedAtTo"),
        ("listId=1", "listId"),  # a CONTACTS list
    ],
)
async def test_list_rejects_bad_parameters(
    shared_client: httpx.AsyncClient, query: str, field: str
) -> None:
    response = await shared_client.get(f"/v1/companies?{query}", headers=ALL)
    assert response.status_code == 400, response.text
    assert response.json()["errors"][0]["field"] == field


async def test_list_unknown_list_is_404(shared_client: httpx.AsyncClient) -> None:
    response = await shared_client.get("/v1/companies?listId=12345", headers=ALL)
    assert response.status_code == 404


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/companies"),
        ("GET", "/v1/company/1"),
        ("POST", "/v1/company"),
        ("POST", "/v1/companies/search"),
    ],
)
async def test_missing_or_unknown_key_is_401(
    shared_client: httpx.AsyncClient, method: str, path: str
) -> None:
    for headers in ({}, {"x-api-key": "wrong"}):
        response = await shared_client.request(method, path, headers=headers, json={})
        assert response.status_code == 401


async def test_scopes(shared_client: httpx.AsyncClient) -> None:
    response = await shared_client.post("/v1/company", json={"name": "N"}, headers=READONLY)
    assert response.status_code == 403
    assert "COMPANIES_WRITE" in response.json()["message"]
    for headers in (READONLY, NO_CONTACTS_READ):
        assert (await shared_client.get("/v1/companies", headers=headers)).status_code == 200
        search = await shared_client.post("/v1/companies/search", json={}, headers=headers)
        assert search.status_code == 200


# ---- create and merge -------------------------------------------------------------------


async def test_create_company_answers_201(client: httpx.AsyncClient) -> None:
    body = {
        "name": "Fresh Works",
        "domain": "freshworks.example",
        "website": "https://www.freshworks.example",
        "companyNetworkUrl": "https://www.network.com/company/fresh-works",
    }
    response = await client.post("/v1/company", json=body, headers=ALL)
    assert response.status_code == 201, response.text
    doc = response.json()
    assert doc["status"] == "success"
    data = doc["data"]
    assert set(data) == {"id", "name", "domain", "companyNetworkUrl", "createdAt", "updatedAt"}
    assert data["createdAt"] == data["updatedAt"]
    stored = (await client.get(f"/v1/company/{data['id']}", headers=ALL)).json()["data"]
    for key, value in body.items():
        assert stored[key] == value
    assert stored["isCompanyInCRM"] is False


async def test_merge_by_domain_website_network_url_and_name(client: httpx.AsyncClient) -> None:
    fx = fixtures().companies
    with_domain = next(c for c in fx if c.domain)
    with_url = next(c for c in fx if c.companyNetworkUrl and c.id != with_domain.id)
    assert with_domain.domain is not None and with_url.companyNetworkUrl is not None
    cases = [
        ({"domain": f"HTTP://www.{with_domain.domain.upper()}/about?x=1"}, with_domain),
        ({"website": f"{with_domain.domain}/"}, with_domain),
        (
            {
                "companyNetworkUrl": with_url.companyNetworkUrl.replace("https://www.", "") + "/",
                "name": "Renamed Co",
            },
            with_url,
        ),
        ({"name": f"  {fx[5].name.upper()} "}, fx[5]),
    ]
    for body, target in cases:
        response = await client.post("/v1/company", json=body, headers=ALL)
        assert response.status_code == 200, (body, response.text)
        assert response.json()["message"] == "merged"
        assert response.json()["data"]["id"] == target.id
    renamed = (await client.get(f"/v1/company/{with_url.id}", headers=ALL)).json()["data"]
    assert renamed["name"] == "Renamed Co"
    assert renamed["companyNetworkUrl"] == with_url.companyNetworkUrl  # same URL: kept spelling
    assert renamed["updatedAt"] > with_url.updatedAt
    kept = (await client.get(f"/v1/company/{with_domain.id}", headers=ALL)).json()["data"]
    assert kept["domain"] == with_domain.domain
    assert kept["updatedAt"] == with_domain.updatedAt  # nothing changed
    # the renamed company now matches by its new name, not its old one
    again = await client.post("/v1/company", json={"name": "renamed co"}, headers=ALL)
    assert again.json()["data"]["id"] == with_url.id
    total = (await client.get("/v1/companies", headers=ALL)).json()["meta"]["total"]
    assert total == len(fx)


async def test_merge_with_existing_false_creates(client: httpx.AsyncClient) -> None:
    fx = fixtures().companies[0]
    response = await client.post(
        "/v1/company",
        json={"name": fx.name, "domain": fx.domain, "mergeWithExisting": False},
        headers=ALL,
    )
    assert response.status_code == 201
    assert response.json()["data"]["id"] != fx.id


@pytest.mark.parametrize(
    "body",
    [{}, {"domain": "nobody.example"}, {"name": "   "}, {"website": "https://nobody.example"}],
)
async def test_create_needs_a_name(client: httpx.AsyncClient, body: dict[str, Any]) -> None:
    response = await client.post("/v1/company", json=body, headers=ALL)
    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "name"


async def test_list_id_adds_the_company(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/company", json={"name": "Listed", "listId": 7}, headers=ALL)
    assert response.status_code == 201
    listed = (await client.get("/v1/companies?listId=7", headers=ALL)).json()
    assert response.json()["data"]["id"] in [c["id"] for c in listed["data"]]
    assert listed["meta"]["total"] == len(list_members(7)) + 1


@pytest.mark.parametrize(("list_id", "status"), [(4242, 404), (1, 400)])
async def test_bad_list_id_writes_nothing(
    client: httpx.AsyncClient, list_id: int, status: int
) -> None:
    fx = fixtures().companies[0]
    for body in (
        {"name": "Ghost", "listId": list_id},
        {"domain": fx.domain, "name": "Changed Name", "listId": list_id},
    ):
        response = await client.post("/v1/company", json=body, headers=ALL)
        assert response.status_code == status
    total = (await client.get("/v1/companies", headers=ALL)).json()["meta"]["total"]
    assert total == len(fixtures().companies)
    stored = (await client.get(f"/v1/company/{fx.id}", headers=ALL)).json()["data"]
    assert stored["name"] == fx.name


@pytest.mark.parametrize(
    ("content", "field"),
    [
        (b"", ""),
        (b"{", ""),
        (b"[1]", ""),
        (b"\xc3\x28", ""),
        (b'{"name": "\\udfff"}', ""),
        (b'{"name": 1}', "name"),
        (b'{"domain": []}', "domain"),
        (b'{"website": "not a url"}', "website"),
        (b'{"companyNetworkUrl": "x"}', "companyNetworkUrl"),
        (b'{"listId": -1}', "listId"),
        (b'{"listId": true}', "listId"),
        (b'{"mergeWithExisting": null}', "mergeWithExisting"),
    ],
)
async def test_post_company_rejects_bad_bodies(
    shared_client: httpx.AsyncClient, content: bytes, field: str
) -> None:
    response = await shared_client.post(
        "/v1/company", content=content, headers={**ALL, "content-type": "application/json"}
    )
    assert response.status_code == 400, response.text
    assert response.json()["errors"][0]["field"] == field


async def test_odd_unicode_company_name(client: httpx.AsyncClient) -> None:
    name = "Ünïcødé 株式会社 \u200b\U0001f3e2"
    response = await client.post("/v1/company", json={"name": name}, headers=ALL)
    assert response.status_code == 201
    again = await client.post("/v1/company", json={"name": f" {name} "}, headers=ALL)
    assert again.status_code == 200
    assert again.json()["data"]["id"] == response.json()["data"]["id"]
    assert again.json()["data"]["name"] == name
