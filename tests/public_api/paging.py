"""Helpers of the /v1 tests: walking every page of a listing, and the fixtures as plain data."""

from __future__ import annotations

from functools import cache
from typing import Any

import httpx

from emulator.fixtures.loader import DEFAULT_FIXTURES, load_fixture_dir
from emulator.fixtures.models import FixtureSet

ALL = {"x-api-key": "demo-all"}


@cache
def fixtures() -> FixtureSet:
    """The default fixtures, read once: the tests compute expected answers from them."""
    return load_fixture_dir(DEFAULT_FIXTURES)


def list_members(list_id: int) -> set[int]:
    return {m for li in fixtures().lists if li.id == list_id for m in li.members}


async def walk(
    client: httpx.AsyncClient,
    url: str,
    page_size: int,
    *,
    params: dict[str, str] | None = None,
    body: dict[str, Any] | None = None,
) -> tuple[list[int], int]:
    """Every id of a MetaList listing, page by page (GET with `params`, POST with `body`).

    Checks on the way: meta echoes page and pageSize, total never changes, every page but
    the last is full, and the page after the last is empty.
    """
    ids: list[int] = []
    totals: set[int] = set()
    page = 1
    while True:
        if body is None:
            query = {**(params or {}), "page": str(page), "pageSize": str(page_size)}
            response = await client.get(url, params=query, headers=ALL)
        else:
            payload = {**body, "page": page, "pageSize": page_size}
            response = await client.post(url, json=payload, headers=ALL)
        assert response.status_code == 200, response.text
        doc = response.json()
        meta = doc["meta"]
        assert (meta["page"], meta["pageSize"]) == (page, page_size)
        totals.add(meta["total"])
        data = doc["data"]
        if not data:
            break
        ids += [item["id"] for item in data]
        if len(data) < page_size:
            empty = await (
                client.get(
                    url,
                    params={**(params or {}), "page": str(page + 1), "pageSize": str(page_size)},
                    headers=ALL,
                )
                if body is None
                else client.post(
                    url, json={**body, "page": page + 1, "pageSize": page_size}, headers=ALL
                )
            )
            assert empty.json()["data"] == []
            break
        page += 1
    assert len(totals) == 1, totals
    return ids, totals.pop()
