"""GET /v1/identities: pagination envelope and a Unicode-aware, case-insensitive name search."""

from __future__ import annotations

import math
from functools import partial

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette

from tests.public_api.checks import assert_guarded, assert_paging_errors, get_ok
from tests.public_api.paging import fixtures

pytestmark = pytest.mark.anyio


get = partial(get_ok, path="/v1/identities")


async def test_lists_identities_with_their_fields(client: httpx.AsyncClient) -> None:
    fx = fixtures()
    body = await get(client, pageSize="2")
    total = len(fx.identities)
    assert body["status"] == "success"
    assert body["pagination"] == {
        "page": 1,
        "pageSize": 2,
        "total": total,
        "totalPages": math.ceil(total / 2),
    }
    first = fx.identities[0]
    assert body["data"][0] == {
        "id": first.id,
        "name": first.name,
        "firstName": first.firstName,
        "lastName": first.lastName,
        "jobTitle": first.jobTitle,
        "email": first.email,
        "networkUrl": first.networkUrl,
        "timezone": first.timezone,
        "createdAt": first.createdAt,
    }
    last_page = await get(client, page=str(math.ceil(total / 2)), pageSize="2")
    assert last_page["data"][-1]["id"] == fx.identities[-1].id
    assert (await get(client, page="99"))["data"] == []


async def test_search_folds_case_beyond_ascii(client: httpx.AsyncClient) -> None:
    accented = [i for i in fixtures().identities if not i.name.isascii()]
    assert accented, "the default fixtures hold a non-ASCII identity name"
    name = accented[0].name
    for term in (name.upper(), name.lower(), name.split()[0].swapcase()):
        found = (await get(client, search=term))["data"]
        assert [i["id"] for i in found] == [accented[0].id], term


async def test_search_treats_wildcards_literally(client: httpx.AsyncClient) -> None:
    assert (await get(client, search="%"))["data"] == []
    assert (await get(client, search="_"))["data"] == []


def drawn_terms() -> list[str]:
    """Hypothesis-drawn search terms (drawn synchronously, then sent by the async test)."""
    drawn: list[str] = []

    @settings(max_examples=50, deadline=None, suppress_health_check=list(HealthCheck))
    @given(term=st.text(min_size=1, max_size=6))
    def draw(term: str) -> None:
        drawn.append(term)

    draw()
    return drawn


async def test_search_matches_exactly_the_names_containing_the_term(
    client: httpx.AsyncClient,
) -> None:
    names = {i.id: i.name for i in fixtures().identities}
    for term in drawn_terms() + [n[1:4] for n in names.values()]:
        if not term.strip():
            continue
        found = [i["id"] for i in (await get(client, search=term, pageSize="100"))["data"]]
        folded = term.strip().casefold()
        assert found == [i for i, n in names.items() if folded in n.casefold()], term


async def test_bad_parameters_are_400(client: httpx.AsyncClient) -> None:
    await assert_paging_errors(client, "/v1/identities")


async def test_needs_identities_read(client: httpx.AsyncClient, app: Starlette) -> None:
    await assert_guarded(client, app, "GET", "/v1/identities", "IDENTITIES_READ")
