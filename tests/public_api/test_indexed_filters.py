"""The /v1 list filters answer through their indexes (the trigram index of a search alone,
list_members' key of a list filter alone, the updatedAt hour counts) exactly what the rule
gives: every id on every page and `meta.total`, before the indexes are built and after,
after any writer (restores, resets and fixture loads included), alone and combined."""

from __future__ import annotations

import itertools
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from emulator.app import create_app
from emulator.store import contact_search, updated_counts
from tests.conftest import ALL, make_settings, open_client
from tests.public_api.paging import fixtures
from tests.public_api.test_page_cache import Writer, other_fixtures, write

pytestmark = pytest.mark.anyio

_nonce = itertools.count()
COMPANY_IDS = sorted({c.companyId for c in fixtures().contacts if c.companyId is not None})

# A bound is picked among the rows' own updatedAt values (by position, as they are when the
# query runs), whole or as its date alone, nudged a millisecond, or out of every range.
Bound = st.one_of(
    st.tuples(st.just("row"), st.integers(0, 10_000), st.sampled_from(["whole", "date", "+1ms"])),
    st.tuples(
        st.just("fixed"), st.sampled_from(["2000-01-01", "2999-12-31", "2026-06-01T10:30:00.000Z"])
    ),
)
ContactQuery = st.tuples(
    st.just("contacts"),
    st.fixed_dictionaries(
        {},
        optional={
            "updatedAtFrom": Bound,
            "updatedAtTo": Bound,
            "listId": st.sampled_from([1, 2, 4]),
            "companyId": st.sampled_from(COMPANY_IDS[:5]),
            "search": st.sampled_from(["an", "son", "ARI", "example", "new", "zzq"]),
        },
    ),
)
CompanyQuery = st.tuples(
    st.just("companies"),
    st.fixed_dictionaries(
        {},
        optional={
            "updatedAtFrom": Bound,
            "updatedAtTo": Bound,
            "listId": st.sampled_from([5, 7]),
        },
    ),
)
Ready = st.tuples(st.just("ready"))


async def every(client: httpx.AsyncClient, kind: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for page in itertools.count(1):
        params = {"page": str(page), "pageSize": "100", "nonce": str(next(_nonce))}
        data = (await client.get(f"/v1/{kind}", params=params, headers=ALL)).json()["data"]
        if not data:
            return out
        out += data


def bound(spec: tuple[Any, ...], rows: list[dict[str, Any]]) -> str:
    if spec[0] == "fixed" or not rows:
        return str(spec[-1]) if spec[0] == "fixed" else "2026-01-01"
    _, at, form = spec
    stamp = str(rows[at % len(rows)]["updatedAt"])
    if form == "date":
        return stamp[:10]
    if form == "+1ms":  # YYYY-MM-DDTHH:MM:SS.mmmZ: the next millisecond, carried naively
        millis = int(stamp[20:23])
        return stamp if millis == 999 else f"{stamp[:20]}{millis + 1:03d}Z"
    return stamp


def in_range(stamp: str, low: str | None, high: str | None) -> bool:
    """The documented inclusive bounds; a date alone is the day's first (from) or last (to)
    millisecond."""
    if low is not None:
        low = low + "T00:00:00.000Z" if len(low) == 10 else low
        if stamp < low:
            return False
    if high is not None:
        high = high + "T23:59:59.999Z" if len(high) == 10 else high
        if stamp > high:
            return False
    return True


def searched(contact: dict[str, Any], term: str) -> bool:
    first, last, email = contact["firstName"], contact["lastName"], contact["professionalEmail"]
    texts = [t for t in (first, last, email) if t is not None]
    if first is not None and last is not None:
        texts.append(f"{first} {last}")
    return any(term.casefold() in t.casefold() for t in texts)


async def members(app: Any, list_id: int, table: str) -> set[int]:
    """The reference for a list filter: the unindexed query, every member looked up."""
    rows = await app.state.services.emulator.db.fetchall(
        f"SELECT id FROM {table} WHERE id IN (SELECT entityId FROM list_members WHERE listId = ?)",
        (list_id,),
    )
    return {row[0] for row in rows}


async def expected(
    app: Any, client: httpx.AsyncClient, kind: str, query: dict[str, Any]
) -> tuple[dict[str, str], list[int]]:
    rows = await every(client, kind)
    params = {k: str(v) for k, v in query.items() if not k.startswith("updatedAt")}
    low = high = None
    if "updatedAtFrom" in query:
        low = params["updatedAtFrom"] = bound(query["updatedAtFrom"], rows)
    if "updatedAtTo" in query:
        high = params["updatedAtTo"] = bound(query["updatedAtTo"], rows)
    listed = None
    if "listId" in query:
        listed = await members(app, query["listId"], kind)
    ids = [
        r["id"]
        for r in rows
        if in_range(r["updatedAt"], low, high)
        and (listed is None or r["id"] in listed)
        and ("companyId" not in query or r.get("companyId") == query["companyId"])
        and ("search" not in query or searched(r, query["search"]))
    ]
    return params, ids


async def answered(client: httpx.AsyncClient, kind: str, params: dict[str, str]) -> list[int]:
    """Every id on every page of the listing; each page's total is the ids' count."""
    ids: list[int] = []
    totals = set()
    for page in itertools.count(1):
        response = await client.get(
            f"/v1/{kind}", params={**params, "page": str(page), "pageSize": "7"}, headers=ALL
        )
        assert response.status_code == 200, response.text
        body = response.json()
        totals.add(body["meta"]["total"])
        if not body["data"]:
            assert totals == {len(ids)}, (params, totals, len(ids))
            return ids
        ids += [r["id"] for r in body["data"]]


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(steps=st.lists(st.one_of(ContactQuery, CompanyQuery, Ready, Writer), max_size=14))
@example(steps=[("ready",), ("contacts", {"updatedAtFrom": ("row", 3, "whole")})])
@example(steps=[("ready",), ("create", None, True), ("contacts", {"listId": 1})])
@example(steps=[("ready",), ("contacts", {"search": "son"}), ("create", "new", False)])
@example(
    steps=[
        ("snapshot",),
        ("ready",),
        ("create", None, True),
        ("restore",),
        ("contacts", {"updatedAtTo": ("row", 0, "date")}),
        ("ready",),
        ("contacts", {"updatedAtFrom": ("row", 0, "+1ms"), "listId": 2}),
    ]
)
async def test_every_filter_answers_what_the_rule_gives(
    steps: list[tuple[Any, ...]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    root = tmp_path_factory.getbasetemp()
    state: dict[str, Any] = {"other": other_fixtures(root)}
    asked: list[tuple[str, dict[str, Any]]] = []
    app = create_app(make_settings(allowPaths=[str(root)], seedCache=str(root / "seeds")))
    async with open_client(app) as client:
        store = app.state.services.emulator.db
        for step in [*steps, ("ready",), ("check",)]:
            match step:
                case (("contacts" | "companies") as kind, query):
                    asked.append((kind, query))
                    params, ids = await expected(app, client, kind, query)
                    assert await answered(client, kind, params) == ids, params
                case ("ready",):
                    await contact_search.ensure(store)
                    await updated_counts.ensure(store)
                    assert contact_search.ready(store) and updated_counts.ready(store)
                case ("check",):  # every query again, through the indexes, after the writes
                    for kind, query in asked:
                        params, ids = await expected(app, client, kind, query)
                        assert await answered(client, kind, params) == ids, params
                case _:
                    await write(client, step, state)
