"""The encoded-page cache of GET /v1/contacts never hides a write made before a page was asked."""

from __future__ import annotations

import asyncio
import itertools
import json
import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette

from emulator.app import create_app
from emulator.fixtures.loader import DEFAULT_FIXTURES
from tests.conftest import ALL, make_settings, open_client
from tests.public_api.paging import fixtures

pytestmark = pytest.mark.anyio

WITH_EMAIL = [c for c in fixtures().contacts if c.professionalEmail]
# Contacts that end a page of 7, 50 or 100 (a write exactly at a page's last id).
LAST_OF_A_PAGE = [c for c in WITH_EMAIL if c.id % 7 == 0 or c.id % 50 == 0]
WITH_DOMAIN = [c for c in fixtures().companies if c.domain]
MEMBERS = [(c.id, c.campaignIds[0]) for c in fixtures().contacts if c.campaignIds]


async def page(client: httpx.AsyncClient, number: int, size: int) -> dict[str, Any]:
    response = await client.get(
        "/v1/contacts", params={"page": number, "pageSize": size}, headers=ALL
    )
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def check_page(doc: dict[str, Any], names: dict[int, str | None], number: int, size: int) -> None:
    """The page agrees with the model: the right ids, their current names, the current total."""
    ids = sorted(names)
    assert doc["meta"]["total"] == len(ids)
    assert [c["id"] for c in doc["data"]] == ids[(number - 1) * size : number * size]
    for contact in doc["data"]:
        assert contact["firstName"] == names[contact["id"]]


Read = st.tuples(st.just("read"), st.integers(1, 3), st.sampled_from([7, 100]))
Create = st.tuples(st.just("create"), st.text("abcxyz", min_size=1, max_size=8))
Merge = st.tuples(
    st.just("merge"), st.sampled_from(WITH_EMAIL), st.text("pqrs", min_size=1, max_size=8)
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(st.one_of(Read, Read, Create, Merge), min_size=1, max_size=20))
async def test_every_page_shows_every_earlier_write(steps: list[tuple[Any, ...]]) -> None:
    names: dict[int, str | None] = {c.id: c.firstName for c in fixtures().contacts}
    async with open_client(create_app(make_settings())) as client:
        for step in steps:
            match step:
                case ("read", number, size):
                    # Twice: the second answer comes from the cache the first one filled.
                    check_page(await page(client, number, size), names, number, size)
                    check_page(await page(client, number, size), names, number, size)
                case ("create", name):
                    response = await client.post(
                        "/v1/contact", json={"firstName": name}, headers=ALL
                    )
                    assert response.status_code == 201, response.text
                    names[response.json()["data"]["id"]] = name
                case ("merge", contact, name):
                    body = {
                        "firstName": name,
                        "professionalEmail": contact.professionalEmail,
                        "mergeWithExisting": True,
                    }
                    response = await client.post("/v1/contact", json=body, headers=ALL)
                    assert response.json()["message"] == "merged", response.text
                    names[contact.id] = name


async def test_a_write_racing_page_reads_is_in_every_page_asked_after_it(
    client: httpx.AsyncClient,
) -> None:
    last = (len(fixtures().contacts) + 1 + 99) // 100
    await page(client, last, 100)  # cached before the write

    async def create() -> int:
        response = await client.post("/v1/contact", json={"firstName": "Racer"}, headers=ALL)
        return int(response.json()["data"]["id"])

    # Reads in flight around the write may or may not see it; none may keep it hidden later.
    results = await asyncio.gather(
        *[page(client, last, 100) for _ in range(5)],
        create(),
        *[page(client, last, 100) for _ in range(5)],
    )
    created = results[5]
    after = await page(client, last, 100)
    assert created in [c["id"] for c in after["data"]]
    assert after["meta"]["total"] == len(fixtures().contacts) + 1


async def test_reset_and_snapshot_restore_are_seen_by_a_cached_page(
    client: httpx.AsyncClient,
) -> None:
    first = await page(client, 1, 100)
    snapshot = await client.post("/_emulator/snapshots")
    assert snapshot.status_code == 201, snapshot.text
    contact = next(c for c in WITH_EMAIL if c.id <= 100)
    body = {
        "firstName": "Changed",
        "professionalEmail": contact.professionalEmail,
        "mergeWithExisting": True,
    }
    assert (await client.post("/v1/contact", json=body, headers=ALL)).status_code == 200
    changed = await page(client, 1, 100)
    assert [c["firstName"] for c in changed["data"] if c["id"] == contact.id] == ["Changed"]
    restored = await client.post(f"/_emulator/snapshots/{snapshot.json()['id']}/restore")
    assert restored.status_code == 200, restored.text
    assert await page(client, 1, 100) == first
    created = await client.post("/v1/contact", json={"firstName": "X"}, headers=ALL)
    assert created.status_code == 201
    assert (await page(client, 1, 100))["meta"]["total"] == first["meta"]["total"] + 1
    assert (await client.post("/_emulator/reset")).status_code == 200
    assert await page(client, 1, 100) == first


# Every listing filter: the whole table (items reused across writes above a page), then each
# filtered listing (kept only while no write touched any contact or list membership).
FILTERS: list[dict[str, str]] = [
    {},
    {"search": "an"},
    {"search": "new"},  # 3 characters: through the trigram index (store/contact_search.py)
    {"companyId": str(fixtures().contacts[0].companyId)},
    {"listId": "1"},
    {"listId": "4"},
    {"updatedAtFrom": "2026-10-01"},
]
ReadAny = st.tuples(
    st.just("read"),
    st.integers(1, 4),
    st.sampled_from([7, 50, 100]),
    st.integers(0, len(FILTERS) - 1),
)
# Every kind of writer of what a contact page shows (see emulator/store/contact_changes.py).
Writer = st.one_of(
    st.tuples(st.just("create"), st.sampled_from([None, "new", "rename"]), st.booleans()),
    st.tuples(st.just("merge"), st.sampled_from(WITH_EMAIL) | st.sampled_from(LAST_OF_A_PAGE)),
    st.tuples(st.just("member"), st.sampled_from(WITH_EMAIL), st.sampled_from([1, 4])),
    st.tuples(st.just("company"), st.sampled_from(WITH_DOMAIN)),
    st.tuples(st.just("link"), st.integers(0, 9)),
    st.tuples(st.just("event"), st.sampled_from(MEMBERS)),
    st.tuples(st.just("advance"), st.integers(1, 72)),
    st.tuples(st.just("webhook")),
    st.tuples(st.just("list")),
    st.tuples(st.just("snapshot")),
    st.tuples(st.just("restore")),
    st.tuples(st.just("reset")),
    st.tuples(st.just("fixtures")),
)
_nonce = itertools.count()


async def listing(client: httpx.AsyncClient, query: dict[str, str]) -> httpx.Response:
    response = await client.get("/v1/contacts", params=query, headers=ALL)
    assert response.status_code == 200, response.text
    return response


async def check_against_fresh(client: httpx.AsyncClient, query: dict[str, str]) -> None:
    """The answer (maybe kept) is byte for byte the answer computed now: a query string never
    asked before (an unknown parameter, ignored) has nothing kept."""
    kept = await listing(client, query)
    fresh = await listing(client, {**query, "nonce": str(next(_nonce))})
    assert kept.content == fresh.content, query


async def check_against_model(app: Starlette, kept: dict[str, Any], query: dict[str, str]) -> None:
    """A page of the whole table or of a list alone holds the ids a plain read of the table
    gives, in order, and their number as its total (the pages' totals are carried across
    writes, and a list's total is kept for pages asked at the same version)."""
    store = app.state.services.emulator.db
    if set(query) == {"page", "pageSize"}:
        rows = await store.fetchall("SELECT id FROM contacts ORDER BY id")
    elif set(query) == {"page", "pageSize", "listId"}:
        rows = await store.fetchall(
            "SELECT entityId FROM list_members WHERE listId = ? ORDER BY entityId",
            (int(query["listId"]),),
        )
    else:
        return
    ids = [row[0] for row in rows]
    number, size = int(query["page"]), int(query["pageSize"])
    assert kept["meta"]["total"] == len(ids), query
    assert [c["id"] for c in kept["data"]] == ids[(number - 1) * size : number * size], query


async def write(client: httpx.AsyncClient, step: tuple[Any, ...], state: dict[str, Any]) -> None:
    n = next(_nonce)
    match step:
        case ("create", company, listed):
            body: dict[str, Any] = {"firstName": f"New {n}"}
            if company == "new":
                body["company"] = {"name": f"Company {n}", "domain": f"co{n}.example"}
            elif company == "rename":  # merges into a company its contacts embed, renamed
                body["company"] = {"name": f"Renamed {n}", "domain": WITH_DOMAIN[0].domain}
            if listed:
                body["listId"] = 1
            response = await client.post("/v1/contact", json=body, headers=ALL)
            assert response.status_code == 201, response.text
        case ("merge", contact):
            body = {
                "firstName": f"Merged {n}",
                "professionalEmail": contact.professionalEmail,
                "mergeWithExisting": True,
            }
            response = await client.post("/v1/contact", json=body, headers=ALL)
            assert response.status_code == 200, response.text
        case ("member", contact, list_id):  # no field changes: only the list's members
            body = {
                "professionalEmail": contact.professionalEmail,
                "mergeWithExisting": True,
                "listId": list_id,
            }
            response = await client.post("/v1/contact", json=body, headers=ALL)
            assert response.status_code == 200, response.text
        case ("company", company):
            body = {"name": f"Company {n}", "domain": company.domain}
            response = await client.post("/v1/company", json=body, headers=ALL)
            assert response.status_code == 200, response.text
        case ("link", k):
            connection = (await client.get("/_emulator/connection")).json()
            connection["contactLinkTemplate"] = f"https://crm{k}.example/c/{{{{crmId}}}}"
            response = await client.put("/_emulator/connection", json=connection)
            assert response.status_code == 200, response.text
            # The link templates are re-read (the fresh answers share them: checked alone).
            one = (await client.get("/v1/contact/4", headers=ALL)).json()["data"]
            assert one["contactCRMUrl"].startswith(f"https://crm{k}.example/c/"), one
        case ("event", (contact_id, campaign_id)):
            body = {"campaignId": campaign_id, "contactId": contact_id, "type": "MESSAGE_REPLIED"}
            response = await client.post("/_emulator/events", json={**body, "content": "Hi"})
            assert response.status_code in (201, 404, 409), response.text
        case ("advance", hours):
            response = await client.post("/_emulator/clock/advance", json={"seconds": hours * 3600})
            assert response.status_code == 200, response.text
        case ("webhook",):
            response = await client.patch("/v1/webhooks/1", json={"name": f"Hook {n}"}, headers=ALL)
            assert response.status_code == 200, response.text
        case ("list",):
            body = {"name": f"List {n}", "type": "CONTACTS"}
            response = await client.post("/v1/lists", json=body, headers=ALL)
            assert response.status_code in (200, 201), response.text
        case ("snapshot",):
            response = await client.post("/_emulator/snapshots")
            assert response.status_code == 201, response.text
            state["snapshot"] = response.json()["id"]
        case ("restore",):
            if "snapshot" in state:
                response = await client.post(f"/_emulator/snapshots/{state['snapshot']}/restore")
                assert response.status_code == 200, response.text
        case ("reset",):
            assert (await client.post("/_emulator/reset")).status_code == 200
        case ("fixtures",):  # another directory: the default one with contact 1 renamed
            response = await client.post(
                "/_emulator/fixtures", json={"directory": str(state["other"])}
            )
            assert response.status_code == 200, response.text


def other_fixtures(root: Path) -> Path:
    """The default fixtures with the first contact renamed (a fixture load changes a page)
    and another API key in place of demo-readonly."""
    other = root / "other-fixtures"
    if not other.exists():
        shutil.copytree(DEFAULT_FIXTURES, other)
        contacts = json.loads((other / "contacts.json").read_text())
        contacts[0]["firstName"] = "Loaded"
        (other / "contacts.json").write_text(json.dumps(contacts))
        keys = json.loads((other / "api_keys.json").read_text())
        keys = [k for k in keys if k["key"] != "demo-readonly"]
        keys.append({"key": "other-all", "name": "Other", "scopes": ["ALL"]})
        (other / "api_keys.json").write_text(json.dumps(keys))
    return other


async def test_api_keys_are_read_again_after_a_fixture_load_reset_and_restore(
    tmp_path: Path,
) -> None:
    """The key ring is kept across writes that leave `api_keys` alone, never past one."""
    other, readonly, new = (
        other_fixtures(tmp_path),
        {"x-api-key": "demo-readonly"},
        {"x-api-key": "other-all"},
    )

    async def status(client: httpx.AsyncClient, headers: dict[str, str]) -> int:
        return (await client.get("/v1/contacts", headers=headers)).status_code

    app = create_app(make_settings(allowPaths=[str(tmp_path)]))
    async with open_client(app) as client:
        assert (await status(client, readonly), await status(client, new)) == (200, 401)
        await client.patch("/v1/webhooks/1", json={"name": "x"}, headers=ALL)
        snapshot = (await client.post("/_emulator/snapshots")).json()["id"]
        loaded = await client.post("/_emulator/fixtures", json={"directory": str(other)})
        assert loaded.status_code == 200, loaded.text
        assert (await status(client, readonly), await status(client, new)) == (401, 200)
        restored = await client.post(f"/_emulator/snapshots/{snapshot}/restore")
        assert restored.status_code == 200, restored.text
        assert (await status(client, readonly), await status(client, new)) == (200, 401)
        assert (await client.post("/_emulator/fixtures", json={"directory": str(other)})).is_success
        assert (await client.post("/_emulator/reset")).status_code == 200
        assert (await status(client, readonly), await status(client, new)) == (401, 200)


BY_ID = {c.id: c for c in fixtures().contacts}


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(steps=st.lists(st.one_of(ReadAny, ReadAny, Writer), min_size=1, max_size=25))
# The edges of each rule, every run: a write at exactly a page's last id, a member added to
# an empty list, a new link template, a company renamed under its contacts, a reset and
# a fixture load (a database file restored) and a snapshot restore (bytes restored).
@example(steps=[("read", 1, 7, 0), ("merge", BY_ID[7])])
@example(steps=[("read", 1, 7, 4), ("member", BY_ID[7], 4)])
@example(steps=[("read", 1, 50, 0), ("link", 1)])
@example(steps=[("read", 1, 100, 0), ("company", next(c for c in WITH_DOMAIN if c.id == 45))])
@example(steps=[("merge", BY_ID[7]), ("read", 1, 7, 0), ("reset",)])
@example(steps=[("read", 1, 7, 0), ("fixtures",), ("snapshot",), ("merge", BY_ID[2]), ("restore",)])
async def test_every_kept_page_is_the_page_computed_now_whatever_wrote_before(
    steps: list[tuple[Any, ...]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """After any writer, every listing asked before (filtered or not) answers what a fresh
    read computes now, byte for byte."""
    root = tmp_path_factory.getbasetemp()
    state: dict[str, Any] = {"other": other_fixtures(root)}
    asked: list[dict[str, str]] = []
    # With a seed cache: start, reset and fixture loads restore a database file, snapshots
    # restore bytes (both ways of overwriting the whole database).
    app = create_app(make_settings(allowPaths=[str(root)], seedCache=str(root / "seeds")))
    async with open_client(app) as client:
        for step in steps:
            if step[0] == "read":
                _, number, size, which = step
                query = {**FILTERS[which], "page": str(number), "pageSize": str(size)}
                await check_against_fresh(client, query)
                await check_against_fresh(client, query)  # the second from what the first kept
                await check_against_model(app, (await listing(client, query)).json(), query)
                asked.append(query)
            else:
                await write(client, step, state)
                for query in asked:
                    await check_against_fresh(client, query)
                    await check_against_model(app, (await listing(client, query)).json(), query)
