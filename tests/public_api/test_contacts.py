"""GET /v1/contacts, GET /v1/contact/{id} and POST /v1/contact through HTTP."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emulator.app import create_app
from emulator.fixtures.models import Contact as ContactFixture
from emulator.settings import RateLimit
from emulator.wire import parse_iso
from tests.conftest import ALL, NO_CONTACTS_READ, READONLY, make_settings, open_client
from tests.public_api.paging import fixtures, list_members, walk

pytestmark = pytest.mark.anyio


def fold(text: str | None) -> str:
    return (text or "").casefold()


def contact_ids(keep: Any = lambda c: True) -> list[int]:
    return sorted(c.id for c in fixtures().contacts if keep(c))


def searched(term: str) -> Any:
    def keep(c: ContactFixture) -> bool:
        names = [c.firstName, c.lastName, c.professionalEmail]
        if c.firstName is not None and c.lastName is not None:
            names.append(f"{c.firstName} {c.lastName}")
        return any(fold(term) in fold(n) for n in names if n is not None)

    return keep


# ---- listing ----------------------------------------------------------------------------

FILTERS: list[tuple[dict[str, str], Any]] = [
    ({}, lambda c: True),
    ({"search": "an"}, searched("an")),
    ({"search": "O'BRIEN"}, searched("O'BRIEN")),
    ({"search": "ingrid silva"}, searched("ingrid silva")),
    ({"search": "ZOË"}, searched("ZOË")),
    ({"search": "mÜller"}, searched("mÜller")),
    ({"search": "østergaard"}, searched("østergaard")),  # "Ø" in the data: casefold only
    ({"search": "100%_"}, searched("100%_")),
    ({"companyId": "10"}, lambda c: c.companyId == 10),
    ({"listId": "2"}, lambda c: c.id in list_members(2)),
    (
        {"updatedAtFrom": "2026-08-16T07:57:40.222Z"},
        lambda c: c.updatedAt >= "2026-08-16T07:57:40.222Z",
    ),
    (
        {"updatedAtTo": "2026-06-30", "search": "a"},
        lambda c: c.updatedAt <= "2026-06-30T23:59:59.999Z" and searched("a")(c),
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
    ids, total = await walk(shared_client, "/v1/contacts", page_size, params=params)
    expected = contact_ids(keep)
    assert ids == expected
    assert total == len(expected)


async def test_list_defaults_to_page_1_of_25(shared_client: httpx.AsyncClient) -> None:
    response = await shared_client.get("/v1/contacts", headers=ALL)
    assert response.status_code == 200
    doc = response.json()
    assert doc["meta"] == {"page": 1, "pageSize": 25, "total": len(fixtures().contacts)}
    assert [c["id"] for c in doc["data"]] == contact_ids()[:25]
    first = doc["data"][0]
    assert set(first) >= {"id", "firstName", "company", "isInCRM", "createdAt", "updatedAt"}


async def test_list_past_the_last_page_is_empty(shared_client: httpx.AsyncClient) -> None:
    response = await shared_client.get("/v1/contacts?page=1000", headers=ALL)
    assert response.status_code == 200
    assert response.json()["data"] == []
    assert response.json()["meta"]["total"] == len(fixtures().contacts)


async def test_list_fields_comma_separated_or_repeated(shared_client: httpx.AsyncClient) -> None:
    for query in (
        "fields=firstName,professionalEmail",
        "fields=firstName&fields=professionalEmail",
    ):
        response = await shared_client.get(f"/v1/contacts?pageSize=3&{query}", headers=ALL)
        assert response.status_code == 200
        for item in response.json()["data"]:
            assert list(item) == ["id", "firstName", "professionalEmail"]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("page=0", "page"),
        ("page=-1", "page"),
        ("page=abc", "page"),
        ("page=1.5", "page"),
        ("page=99999999999999999999999", "page"),
        ("pageSize=0", "pageSize"),
        ("pageSize=101", "pageSize"),
        ("pageSize=abc", "pageSize"),
        ("pageSize=99999999999999999999999", "pageSize"),
        ("pageSize=%C2%B2", "pageSize"),
        ("fields=firstName,nope", "fields"),
        ("updatedAtFrom=2024-13-01", "updatedAtFrom"),
        ("updatedAtTo=yesterday", "updatedAtTo"),
        ("updatedAtFrom=0001-01-01T00:00:00%2B01:00", "updatedAtFrom"),
        ("companyId=abc", "companyId"),
        ("listId=x", "listId"),
        ("listId=5", "listId"),  # a COMPANIES list
    ],
)
async def test_list_rejects_bad_parameters(
    shared_client: httpx.AsyncClient, query: str, field: str
) -> None:
    response = await shared_client.get(f"/v1/contacts?{query}", headers=ALL)
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["status"] == "error"
    assert body["errors"][0]["field"] == field


async def test_list_unknown_list_is_404(shared_client: httpx.AsyncClient) -> None:
    response = await shared_client.get("/v1/contacts?listId=999", headers=ALL)
    assert response.status_code == 404
    assert response.json() == {"status": "error", "message": "List 999 not found"}


async def test_unknown_field_names_the_field(shared_client: httpx.AsyncClient) -> None:
    response = await shared_client.get("/v1/contact/1?fields=bogus", headers=ALL)
    assert response.status_code == 400
    assert "bogus" in response.json()["message"]


# ---- auth -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"), [("GET", "/v1/contacts"), ("GET", "/v1/contact/1"), ("POST", "/v1/contact")]
)
async def test_missing_or_unknown_key_is_401(
    shared_client: httpx.AsyncClient, method: str, path: str
) -> None:
    for headers in ({}, {"x-api-key": "nope"}, {"x-api-key": ""}):
        response = await shared_client.request(method, path, headers=headers, json={})
        assert response.status_code == 401
        assert response.json()["status"] == "error"


async def test_key_without_contacts_read_is_403(shared_client: httpx.AsyncClient) -> None:
    for path in ("/v1/contacts", "/v1/contact/1"):
        response = await shared_client.get(path, headers=NO_CONTACTS_READ)
        assert response.status_code == 403
        assert "CONTACTS_READ" in response.json()["message"]


async def test_readonly_key_cannot_post_a_contact(shared_client: httpx.AsyncClient) -> None:
    response = await shared_client.post("/v1/contact", json={"firstName": "A"}, headers=READONLY)
    assert response.status_code == 403
    assert "CONTACTS_WRITE" in response.json()["message"]


# ---- single contact ---------------------------------------------------------------------


async def test_get_contact_shows_company_and_crm_link(shared_client: httpx.AsyncClient) -> None:
    fx = fixtures()
    contact = next(c for c in fx.contacts if c.companyId is not None)
    response = await shared_client.get(f"/v1/contact/{contact.id}", headers=ALL)
    assert response.status_code == 200
    body = response.json()
    assert (body["status"], body["message"]) == ("success", "Contact retrieved")
    data = body["data"]
    company = next(co for co in fx.companies if co.id == contact.companyId)
    assert data["company"] == {
        "id": company.id,
        "name": company.name,
        "domain": company.domain,
        "companyNetworkUrl": company.companyNetworkUrl,
    }
    assert data["isInCRM"] is (contact.contactCRMId is not None)
    in_crm = next(c for c in fx.contacts if c.contactCRMId is not None)
    data = (await shared_client.get(f"/v1/contact/{in_crm.id}", headers=ALL)).json()["data"]
    assert data["isInCRM"] is True
    assert data["contactCRMUrl"].endswith(f"/{in_crm.contactCRMId}")


async def test_get_contact_with_fields(shared_client: httpx.AsyncClient) -> None:
    response = await shared_client.get("/v1/contact/2?fields=lastName", headers=ALL)
    assert response.json()["data"] == {"id": 2, "lastName": fixtures().contacts[1].lastName}


@pytest.mark.parametrize(
    ("ident", "status"),
    [("999999", 404), ("abc", 400), ("0", 400), ("99999999999999999999999", 400)],
)
async def test_get_contact_bad_or_unknown_id(
    shared_client: httpx.AsyncClient, ident: str, status: int
) -> None:
    response = await shared_client.get(f"/v1/contact/{ident}", headers=ALL)
    assert response.status_code == status
    assert response.json()["status"] == "error"


async def test_get_contact_is_rate_limited() -> None:
    app = create_app(make_settings(rateLimit=RateLimit(limit=3)))
    async with open_client(app) as client:
        for remaining in (2, 1, 0):
            response = await client.get("/v1/contact/1", headers=ALL)
            assert response.status_code == 200
            assert response.headers["X-RateLimit-Limit"] == "3"
            assert response.headers["X-RateLimit-Remaining"] == str(remaining)
            assert int(response.headers["X-RateLimit-Reset-Seconds"]) > 0
        response = await client.get("/v1/contact/1", headers=ALL)
        assert response.status_code == 429
        assert response.json() == {
            "status": "error",
            "message": "Rate limit exceeded. Please retry after the specified time.",
        }
        retry = int(response.headers["Retry-After"])
        assert 1 <= retry <= 60
        assert response.headers["X-RateLimit-Retry-After-Seconds"] == str(retry)
        assert response.headers["X-RateLimit-Remaining"] == "0"
        # the limit is per key and per documented route
        other = await client.get("/v1/contact/1", headers=READONLY)
        assert other.status_code == 200
        listing = await client.get("/v1/contacts", headers=ALL)
        assert listing.status_code == 200
        assert "X-RateLimit-Limit" not in listing.headers


async def test_rate_limit_headers_ride_on_errors_too() -> None:
    app = create_app(make_settings(rateLimit=RateLimit(limit=3)))
    async with open_client(app) as client:
        response = await client.get("/v1/contact/999999", headers=ALL)
        assert response.status_code == 404
        assert response.headers["X-RateLimit-Remaining"] == "2"


# ---- create and merge -------------------------------------------------------------------


async def test_create_contact_answers_201_and_reads_back(client: httpx.AsyncClient) -> None:
    body = {
        "firstName": "Zoë",
        "lastName": "Ångström",
        "professionalEmail": "zoe@new-co.example",
        "jobTitle": "CTO",
        "networkProfileUrl": "https://www.network.com/in/zoe-a",
        "mobilePhone": "+1 555 0100",
        "phones": "+1 555 0101, +1 555 0102",
        "networkHeadline": "CTO 🚀",
        "contactCountry": "Sweden",
    }
    response = await client.post("/v1/contact", json=body, headers=ALL)
    assert response.status_code == 201, response.text
    doc = response.json()
    assert doc["status"] == "success"
    data = doc["data"]
    assert set(data) == {
        "id",
        "firstName",
        "lastName",
        "professionalEmail",
        "networkProfileUrl",
        "companyId",
        "createdAt",
    }
    assert data["id"] > max(c.id for c in fixtures().contacts)
    assert data["companyId"] is None
    stored = (await client.get(f"/v1/contact/{data['id']}", headers=ALL)).json()["data"]
    for key, value in body.items():
        assert stored[key] == value
    assert stored["createdAt"] == stored["updatedAt"] == data["createdAt"]
    assert stored["isInCRM"] is False


async def test_create_contact_time_comes_from_the_emulator_clock(
    client: httpx.AsyncClient, app: Any
) -> None:
    before = await client.post("/v1/contact", json={"firstName": "Now"}, headers=ALL)
    app.state.services.emulator.clock.advance(86400 * 400)
    after = await client.post("/v1/contact", json={"firstName": "Later"}, headers=ALL)
    gap = parse_iso(after.json()["data"]["createdAt"]) - parse_iso(
        before.json()["data"]["createdAt"]
    )
    assert 400 <= gap.days <= 401


async def test_merge_fills_given_fields_and_keeps_the_rest(client: httpx.AsyncClient) -> None:
    target = next(c for c in fixtures().contacts if c.professionalEmail and c.jobTitle)
    assert target.professionalEmail is not None
    response = await client.post(
        "/v1/contact",
        json={
            "professionalEmail": target.professionalEmail.upper(),
            "jobTitle": "Chief Merger",
            "lastName": None,
        },
        headers=ALL,
    )
    assert response.status_code == 200
    assert response.json()["message"] == "merged"
    assert response.json()["data"]["id"] == target.id
    assert response.json()["data"]["createdAt"] == target.createdAt
    stored = (await client.get(f"/v1/contact/{target.id}", headers=ALL)).json()["data"]
    assert stored["jobTitle"] == "Chief Merger"
    assert stored["lastName"] == target.lastName  # null is "not given"
    assert stored["professionalEmail"] == target.professionalEmail  # same e-mail, kept spelling
    assert stored["updatedAt"] > target.updatedAt
    total = (await client.get("/v1/contacts", headers=ALL)).json()["meta"]["total"]
    assert total == len(fixtures().contacts)


async def test_merge_without_changes_keeps_updated_at(client: httpx.AsyncClient) -> None:
    target = next(c for c in fixtures().contacts if c.professionalEmail)
    response = await client.post(
        "/v1/contact", json={"professionalEmail": target.professionalEmail}, headers=ALL
    )
    assert response.status_code == 200
    stored = (await client.get(f"/v1/contact/{target.id}", headers=ALL)).json()["data"]
    assert stored["updatedAt"] == target.updatedAt


async def test_merge_by_profile_url_when_no_email_matches(client: httpx.AsyncClient) -> None:
    target = next(c for c in fixtures().contacts if c.networkProfileUrl)
    assert target.networkProfileUrl is not None
    url = target.networkProfileUrl.upper().replace("HTTPS://WWW.", "http://") + "/?utm=x"
    response = await client.post(
        "/v1/contact",
        json={"networkProfileUrl": url, "professionalEmail": "fresh@x.example"},
        headers=ALL,
    )
    assert response.status_code == 200
    assert response.json()["data"]["id"] == target.id
    stored = (await client.get(f"/v1/contact/{target.id}", headers=ALL)).json()["data"]
    assert stored["professionalEmail"] == "fresh@x.example"
    assert stored["networkProfileUrl"] == target.networkProfileUrl
    # the new e-mail now matches too
    again = await client.post(
        "/v1/contact", json={"professionalEmail": "FRESH@x.example"}, headers=ALL
    )
    assert again.json()["data"]["id"] == target.id


async def test_merge_moves_the_contact_to_the_given_company(client: httpx.AsyncClient) -> None:
    target = next(c for c in fixtures().contacts if c.professionalEmail and c.companyId)
    other = next(co for co in fixtures().companies if co.id != target.companyId and co.domain)
    response = await client.post(
        "/v1/contact",
        json={"professionalEmail": target.professionalEmail, "company": {"domain": other.domain}},
        headers=ALL,
    )
    assert (response.status_code, response.json()["data"]["id"]) == (200, target.id)
    assert response.json()["data"]["companyId"] == other.id
    stored = (await client.get(f"/v1/contact/{target.id}", headers=ALL)).json()["data"]
    assert stored["company"]["name"] == other.name


async def test_merge_with_existing_false_always_creates(client: httpx.AsyncClient) -> None:
    target = next(c for c in fixtures().contacts if c.professionalEmail)
    response = await client.post(
        "/v1/contact",
        json={"professionalEmail": target.professionalEmail, "mergeWithExisting": False},
        headers=ALL,
    )
    assert response.status_code == 201
    assert response.json()["data"]["id"] != target.id


async def test_create_contact_with_new_company_creates_it(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/v1/contact",
        json={
            "firstName": "Ann",
            "company": {
                "name": "Brand New Ltd",
                "domain": "brandnew.example",
                "industry": "Robotics",
            },
        },
        headers=ALL,
    )
    assert response.status_code == 201
    company_id = response.json()["data"]["companyId"]
    assert company_id > max(co.id for co in fixtures().companies)
    company = (await client.get(f"/v1/company/{company_id}", headers=ALL)).json()["data"]
    assert (company["name"], company["domain"], company["industry"]) == (
        "Brand New Ltd",
        "brandnew.example",
        "Robotics",
    )
    contact = (
        await client.get(f"/v1/contact/{response.json()['data']['id']}", headers=ALL)
    ).json()["data"]
    assert contact["company"]["name"] == "Brand New Ltd"


async def test_create_contact_with_known_company_domain_reuses_it(
    client: httpx.AsyncClient,
) -> None:
    company = next(co for co in fixtures().companies if co.domain)
    response = await client.post(
        "/v1/contact",
        json={"firstName": "Bo", "company": {"domain": f"https://WWW.{company.domain}/team"}},
        headers=ALL,
    )
    assert response.status_code == 201
    assert response.json()["data"]["companyId"] == company.id
    companies = (await client.get("/v1/companies", headers=ALL)).json()["meta"]["total"]
    assert companies == len(fixtures().companies)


async def test_company_without_name_or_match_is_400_and_writes_nothing(
    client: httpx.AsyncClient,
) -> None:
    response = await client.post(
        "/v1/contact",
        json={"firstName": "Cy", "company": {"domain": "unknown.example"}},
        headers=ALL,
    )
    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "company.name"
    total = (await client.get("/v1/contacts", headers=ALL)).json()["meta"]["total"]
    assert total == len(fixtures().contacts)


async def test_list_id_adds_the_contact_to_the_list(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/contact", json={"firstName": "Di", "listId": 4}, headers=ALL)
    assert response.status_code == 201
    listed = (await client.get("/v1/contacts?listId=4", headers=ALL)).json()
    assert [c["id"] for c in listed["data"]] == [response.json()["data"]["id"]]


@pytest.mark.parametrize(("list_id", "status"), [(999, 404), (5, 400)])
async def test_bad_list_id_writes_nothing(
    client: httpx.AsyncClient, list_id: int, status: int
) -> None:
    target = next(c for c in fixtures().contacts if c.professionalEmail)
    for body in (
        {"firstName": "Eve", "listId": list_id, "company": {"name": "Never Made Inc"}},
        {"professionalEmail": target.professionalEmail, "jobTitle": "Changed", "listId": list_id},
    ):
        response = await client.post("/v1/contact", json=body, headers=ALL)
        assert response.status_code == status, response.text
    contacts = (await client.get("/v1/contacts", headers=ALL)).json()["meta"]["total"]
    companies = (await client.get("/v1/companies", headers=ALL)).json()["meta"]["total"]
    assert (contacts, companies) == (len(fixtures().contacts), len(fixtures().companies))
    stored = (await client.get(f"/v1/contact/{target.id}", headers=ALL)).json()["data"]
    assert stored["jobTitle"] == target.jobTitle


@pytest.mark.parametrize(
    ("content", "field"),
    [
        (b"", ""),
        (b"{", ""),
        (b"[]", ""),
        (b"null", ""),
        (b'"x"', ""),
        (b"\xff\xfe", ""),
        (b'{"firstName": "\\ud800"}', ""),
        (b'{"firstName": 5}', "firstName"),
        (b'{"professionalEmail": "not-an-email"}', "professionalEmail"),
        (b'{"professionalEmail": ""}', "professionalEmail"),
        (b'{"networkProfileUrl": "no url here"}', "networkProfileUrl"),
        (b'{"listId": "1"}', "listId"),
        (b'{"listId": 0}', "listId"),
        (b'{"listId": 99999999999999999999999}', "listId"),
        (b'{"listId": 1.5}', "listId"),
        (b'{"mergeWithExisting": "yes"}', "mergeWithExisting"),
        (b'{"company": "Acme"}', "company"),
        (b'{"company": {"name": 1}}', "company.name"),
        (b'{"firstName": "' + b"x" * 10_001 + b'"}', "firstName"),
    ],
)
async def test_post_contact_rejects_bad_bodies(
    shared_client: httpx.AsyncClient, content: bytes, field: str
) -> None:
    response = await shared_client.post(
        "/v1/contact", content=content, headers={**ALL, "content-type": "application/json"}
    )
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["status"] == "error"
    assert body["errors"][0]["field"] == field


async def test_odd_unicode_round_trips(client: httpx.AsyncClient) -> None:
    name = "N\u0000ul \u202eRTL\u202c 𝔘𝔫𝔦 \U0001f600 e\u0301"
    response = await client.post(
        "/v1/contact", json={"firstName": name, "lastName": "\t"}, headers=ALL
    )
    assert response.status_code == 201
    stored = (await client.get(f"/v1/contact/{response.json()['data']['id']}", headers=ALL)).json()[
        "data"
    ]
    assert stored["firstName"] == name
    plain = await client.post("/v1/contact", json={"firstName": "𝔘𝔫𝔦 \U0001f600"}, headers=ALL)
    found = (await client.get("/v1/contacts", params={"search": "𝔘𝔫𝔦"}, headers=ALL)).json()
    assert [c["id"] for c in found["data"]] == [stored["id"], plain.json()["data"]["id"]]


async def test_key_without_contacts_read_may_still_write(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/contact", json={"firstName": "W"}, headers=NO_CONTACTS_READ)
    assert response.status_code == 201
