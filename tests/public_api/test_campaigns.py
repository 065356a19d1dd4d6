"""GET /v1/campaigns: pagination envelope, filters by name, sender identity and status."""

from __future__ import annotations

import math
from functools import partial

import httpx
import pytest
from starlette.applications import Starlette

from tests.conftest import ALL
from tests.public_api.checks import assert_error, assert_guarded, assert_paging_errors, get_ok
from tests.public_api.paging import fixtures

pytestmark = pytest.mark.anyio


get = partial(get_ok, path="/v1/campaigns")


async def test_lists_every_campaign_in_the_pagination_envelope(client: httpx.AsyncClient) -> None:
    fx = fixtures()
    body = await get(client, pageSize="3")
    assert body["status"] == "success"
    total = len(fx.campaigns)
    assert body["pagination"] == {
        "page": 1,
        "pageSize": 3,
        "total": total,
        "totalPages": math.ceil(total / 3),
    }
    seen = []
    for page in range(1, body["pagination"]["totalPages"] + 2):
        seen += [c["id"] for c in (await get(client, page=str(page), pageSize="3"))["data"]]
    assert seen == sorted(c.id for c in fx.campaigns)


async def test_campaign_fields_and_references(client: httpx.AsyncClient) -> None:
    fx = fixtures()
    users = {u.id: u.name for u in fx.users}
    identities = {i.id: i.name for i in fx.identities}
    expected = {c.id: c for c in fx.campaigns}
    for item in (await get(client, pageSize="100"))["data"]:
        c = expected[item["id"]]
        assert item == {
            "id": c.id,
            "name": c.name,
            "description": c.description,
            "status": c.status,
            "createdBy": {"id": c.createdBy, "name": users[c.createdBy]},
            "crmOwnerId": c.crmOwnerId,
            "senderIdentity": {"id": c.senderIdentityId, "name": identities[c.senderIdentityId]},
            "createdAt": c.createdAt,
        }


async def test_search_by_name_ignores_case(client: httpx.AsyncClient) -> None:
    name = fixtures().campaigns[0].name
    term = name.split()[0].upper()
    found = (await get(client, search=term, pageSize="100"))["data"]
    assert fixtures().campaigns[0].id in [c["id"] for c in found]
    assert all(term.casefold() in c["name"].casefold() for c in found)
    assert (await get(client, search="no campaign is called this"))["data"] == []


async def test_filters_by_identity_and_status(client: httpx.AsyncClient) -> None:
    fx = fixtures()
    identity = fx.campaigns[0].senderIdentityId
    found = (await get(client, identitySenderId=str(identity)))["data"]
    assert [c["id"] for c in found] == [
        c.id for c in fx.campaigns if c.senderIdentityId == identity
    ]
    for status in ("DRAFT", "PENDING", "ACTIVE", "COMPLETED"):
        body = await get(client, status=status)
        assert [c["id"] for c in body["data"]] == [c.id for c in fx.campaigns if c.status == status]
        assert body["pagination"]["total"] == len(body["data"])
    assert (await get(client, identitySenderId="999999"))["pagination"]["total"] == 0


async def test_empty_result_has_zero_pages(client: httpx.AsyncClient) -> None:
    body = await get(client, search="zzzz-nothing")
    assert body["pagination"] == {"page": 1, "pageSize": 25, "total": 0, "totalPages": 0}


async def test_bad_parameters_are_400(client: httpx.AsyncClient) -> None:
    await assert_paging_errors(client, "/v1/campaigns")
    for params, field in [
        ({"status": "active"}, "status"),
        ({"status": "RUNNING"}, "status"),
        ({"identitySenderId": "one"}, "identitySenderId"),
    ]:
        assert_error(await client.get("/v1/campaigns", params=params, headers=ALL), 400, field)


async def test_needs_campaigns_read(client: httpx.AsyncClient, app: Starlette) -> None:
    await assert_guarded(client, app, "GET", "/v1/campaigns", "CAMPAIGNS_READ")
