"""GET /v1/lists (meta envelope, search, type, entitiesCount) and POST /v1/lists."""

from __future__ import annotations

from functools import partial

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette

from tests.conftest import ALL, READONLY
from tests.public_api.checks import (
    assert_bad_bodies,
    assert_error,
    assert_guarded,
    assert_paging_errors,
    get_ok,
)
from tests.public_api.paging import fixtures, walk

pytestmark = pytest.mark.anyio


get = partial(get_ok, path="/v1/lists")


async def test_lists_every_list_with_counts_and_creator(client: httpx.AsyncClient) -> None:
    fx = fixtures()
    users = {u.id: u.name for u in fx.users}
    ids, total = await walk(client, "/v1/lists", 2)
    assert ids == sorted(li.id for li in fx.lists) and total == len(fx.lists)
    body = await get(client, pageSize="100")
    assert set(body) == {"data", "meta"}
    for item, li in zip(body["data"], fx.lists, strict=True):
        assert item == {
            "id": li.id,
            "name": li.name,
            "description": li.description,
            "type": li.type,
            "entitiesCount": len(set(li.members)),
            "createdBy": {"id": li.createdBy, "name": users[li.createdBy]},
            "createdAt": li.createdAt,
        }


async def test_filters_by_type_and_search(client: httpx.AsyncClient) -> None:
    fx = fixtures()
    for kind in ("CONTACTS", "COMPANIES"):
        found = (await get(client, type=kind))["data"]
        assert [li["id"] for li in found] == [li.id for li in fx.lists if li.type == kind]
    described = next(li for li in fx.lists if li.description)
    word = described.description.split()[-1].strip("()").upper()
    found = (await get(client, search=word))["data"]
    assert described.id in [li["id"] for li in found]
    for li in found:
        text = f"{li['name']} {li['description'] or ''}".casefold()
        assert word.casefold() in text
    by_name = (await get(client, search=fx.lists[0].name.lower()))["data"]
    assert fx.lists[0].id in [li["id"] for li in by_name]


async def test_create_list_answers_201_and_is_listed(client: httpx.AsyncClient) -> None:
    body = {"type": "COMPANIES", "name": "Ünïcode accounts 🚀", "description": None, "folderId": 7}
    response = await client.post("/v1/lists", json=body, headers=ALL)
    assert response.status_code == 201, response.text
    doc = response.json()
    assert doc["status"] == "success" and doc["message"]
    created = doc["data"]
    assert created["name"] == body["name"] and created["type"] == "COMPANIES"
    assert created["entitiesCount"] == 0 and created["description"] is None
    assert created["createdBy"]["id"] == min(u.id for u in fixtures().users)
    assert created["id"] > max(li.id for li in fixtures().lists)
    found = (await get(client, search="ÜNÏCODE"))["data"]
    assert found == [created]
    minimal = await client.post("/v1/lists", json={"type": "CONTACTS", "name": "x"}, headers=ALL)
    assert minimal.status_code == 201 and minimal.json()["data"]["name"] == "x"


async def test_create_list_validation(client: httpx.AsyncClient) -> None:
    good = {"type": "CONTACTS", "name": "Good"}
    for body, field in [
        ({"name": "No type"}, "type"),
        ({"type": "CONTACTS"}, "name"),
        ({**good, "type": "LEADS"}, "type"),
        ({**good, "type": "contacts"}, "type"),
        ({**good, "name": ""}, "name"),
        ({**good, "name": "n" * 256}, "name"),
        ({**good, "folderId": 0}, "folderId"),
    ]:
        assert_error(await client.post("/v1/lists", json=body, headers=ALL), 400, field)
    await assert_bad_bodies(
        client,
        "POST",
        "/v1/lists",
        [
            ("name", {**good, "name": 5}),
            ("type", {**good, "type": ["CONTACTS"]}),
            ("description", {**good, "description": {}}),
            ("folderId", {**good, "folderId": "3"}),
        ],
    )
    assert (await get(client))["meta"]["total"] == len(fixtures().lists)  # nothing was written


async def test_any_nonempty_name_is_accepted(client: httpx.AsyncClient) -> None:
    names: list[str] = []

    @settings(max_examples=50, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.text(min_size=1, max_size=255))
    def draw(name: str) -> None:
        names.append(name)

    draw()
    for name in names:
        response = await client.post(
            "/v1/lists", json={"type": "CONTACTS", "name": name}, headers=ALL
        )
        assert response.status_code == 201, (name, response.text)
        assert response.json()["data"]["name"] == name


async def test_bad_parameters_are_400(client: httpx.AsyncClient) -> None:
    await assert_paging_errors(client, "/v1/lists")
    for kind in ("LEAD", "contacts", "ANY"):
        assert_error(await client.get("/v1/lists", params={"type": kind}, headers=ALL), 400, "type")


async def test_scopes(client: httpx.AsyncClient, app: Starlette) -> None:
    await assert_guarded(client, app, "GET", "/v1/lists", "LISTS_READ")
    body = {"type": "CONTACTS", "name": "Scoped"}
    await assert_guarded(client, app, "POST", "/v1/lists", "LISTS_WRITE", body)
    assert_error(await client.post("/v1/lists", json=body, headers=READONLY), 403)
