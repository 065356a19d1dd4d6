"""GET /v1/saved-views: meta envelope, filter by type."""

from __future__ import annotations

import httpx
import pytest
from starlette.applications import Starlette

from tests.conftest import ALL
from tests.public_api.checks import assert_error, assert_guarded, assert_paging_errors
from tests.public_api.paging import fixtures, walk

pytestmark = pytest.mark.anyio


async def test_lists_every_saved_view(client: httpx.AsyncClient) -> None:
    fx = fixtures()
    users = {u.id: u.name for u in fx.users}
    ids, total = await walk(client, "/v1/saved-views", 2)
    assert ids == sorted(v.id for v in fx.savedViews) and total == len(fx.savedViews)
    response = await client.get("/v1/saved-views", params={"pageSize": "100"}, headers=ALL)
    for item, view in zip(response.json()["data"], fx.savedViews, strict=True):
        assert item == {
            "id": view.id,
            "name": view.name,
            "type": view.type,
            "view": view.view,
            "createdBy": {"id": view.createdBy, "name": users[view.createdBy]},
            "createdAt": view.createdAt,
            "updatedAt": view.updatedAt,
        }


async def test_filters_by_type(client: httpx.AsyncClient) -> None:
    for kind in ("LEAD", "COMPANY"):
        ids, total = await walk(client, "/v1/saved-views", 1, params={"type": kind})
        assert ids == [v.id for v in fixtures().savedViews if v.type == kind]
        assert total == len(ids)


async def test_bad_parameters_are_400(client: httpx.AsyncClient) -> None:
    await assert_paging_errors(client, "/v1/saved-views")
    for kind in ("lead", "CONTACTS", "COMPANIES"):
        response = await client.get("/v1/saved-views", params={"type": kind}, headers=ALL)
        assert_error(response, 400, "type")


async def test_needs_saved_views_read(client: httpx.AsyncClient, app: Starlette) -> None:
    await assert_guarded(client, app, "GET", "/v1/saved-views", "SAVED_VIEWS_READ")
