"""The contact search's trigram index never changes an answer: after every kind of writer
(and a restore, a reset, a fixture load, which replace the database under it), a search
answers exactly the contacts whose first name, last name, "first last" or e-mail contains
the term ignoring case the Unicode way, as computed here from the whole listing."""

from __future__ import annotations

import asyncio
import itertools
import os
import sqlite3
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from emulator.app import create_app
from emulator.store import contact_search
from emulator.store.db import Store
from tests.conftest import ALL, make_settings, open_client
from tests.public_api.test_page_cache import BY_ID, Writer, other_fixtures, write

pytestmark = pytest.mark.anyio

# Letters whose casefold is not their lower case, or that fold to several letters (ß -> ss,
# ﬁ -> fi, İ -> i + a dot, final sigma -> sigma, the Kelvin sign -> k), NUL, U+FFFF (NUL's
# stand-in in the index), a line break (between the index's two lines), and plain ones.
ODD = "aAsSßẞſﬁΣσςİiKk\x00\uffff\n én-"
Term = st.text(ODD, min_size=1, max_size=5)
Search = st.tuples(
    st.just("search"), Term | st.sampled_from(["new", "MERGED", "gmail", "an ", "maria o"])
)
Ready = st.tuples(st.just("ready"))  # the index whole: the searches after it go through it
# the contacts written since the index took them in, taken in now (else searches read them)
Flushed = st.tuples(st.just("flushed"))
Named = st.tuples(st.just("named"), st.text(ODD, min_size=1, max_size=8), st.text(ODD, max_size=8))
_nonce = itertools.count()


def expected(contacts: list[dict[str, Any]], term: str) -> list[int]:
    """The ids the documented rule gives, from the contacts as listed (the term trimmed;
    nothing left of it: no filter)."""
    folded = term.strip().casefold()
    found = []
    for c in contacts:
        first, last, email = c["firstName"], c["lastName"], c["professionalEmail"]
        texts = [t for t in (first, last, email) if t is not None]
        if first is not None and last is not None:
            texts.append(f"{first} {last}")
        if any(folded in t.casefold() for t in texts):
            found.append(c["id"])
    return found


async def every_contact(client: httpx.AsyncClient) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    page = 1
    while True:
        params = {"page": str(page), "pageSize": "100", "nonce": str(next(_nonce))}
        data = (await client.get("/v1/contacts", params=params, headers=ALL)).json()["data"]
        if not data:
            return out
        out += data
        page += 1


async def search(client: httpx.AsyncClient, term: str) -> list[int]:
    """Every id the search lists, page by page; each page's total is their count (the first
    page's is counted apart from the ids, the later ones are the kept id list's length)."""
    ids: list[int] = []
    totals = set()
    page = 1
    while True:
        params = {"search": term, "page": str(page), "pageSize": "100"}
        response = await client.get("/v1/contacts", params=params, headers=ALL)
        assert response.status_code == 200, response.text
        body = response.json()
        totals.add(body["meta"]["total"])
        if not body["data"]:
            assert totals == {len(ids)}, (term, totals, len(ids))
            return ids
        ids += [c["id"] for c in body["data"]]
        page += 1


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    steps=st.lists(
        st.one_of(Search, Search, Named, Ready, Flushed, Writer), min_size=1, max_size=20
    )
)
@example(
    steps=[
        ("named", "Straße", "ﬁsh"),
        ("ready",),
        ("search", "ss"),
        ("search", "ASSE"),
        ("search", "fis"),
    ]
)
@example(steps=[("ready",), ("search", "new"), ("create", None, False), ("search", "new")])
@example(
    steps=[
        ("ready",),
        ("named", "Anna", "Newman"),
        ("search", "new"),
        ("flushed",),
        ("search", "new"),
        ("merge", BY_ID[7]),
        ("search", "merged"),
        ("search", "maria o"),  # contact 7's name before the merge: no longer found
        ("flushed",),
        ("search", "merged"),
        ("search", "maria o"),
    ]
)
@example(steps=[("ready",), ("merge", BY_ID[7]), ("search", "merged"), ("reset",)])
@example(steps=[("ready",), ("fixtures",), ("search", "loa"), ("ready",), ("search", "loa")])
@example(steps=[("snapshot",), ("ready",), ("create", None, False), ("restore",), ("ready",)])
@example(steps=[("named", "a\x00ssn", "x"), ("ready",), ("search", "ssn"), ("search", "a\x00s")])
async def test_a_search_answers_what_the_rule_gives_after_any_writer(
    steps: list[tuple[Any, ...]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    root = tmp_path_factory.getbasetemp()
    state: dict[str, Any] = {"other": other_fixtures(root)}
    terms: list[str] = []
    app = create_app(make_settings(allowPaths=[str(root)], seedCache=str(root / "seeds")))
    async with open_client(app) as client:
        for step in [*steps, ("check",)]:
            match step:
                case ("search", term):
                    terms.append(term)
                    contacts = await every_contact(client)
                    assert await search(client, term) == expected(contacts, term), term
                case ("ready",):
                    await contact_search.ensure(app.state.services.emulator.db)
                    assert contact_search.ready(app.state.services.emulator.db)
                case ("flushed",):
                    store = app.state.services.emulator.db
                    if contact_search.ready(store):
                        while await store.read(contact_search.flush):
                            pass
                        left = await store.fetchone(
                            f"SELECT count(*) FROM {contact_search.PENDING}"
                        )
                        assert left == (0,)
                case ("named", first, last):
                    body = {"firstName": first, "lastName": last or None}
                    response = await client.post("/v1/contact", json=body, headers=ALL)
                    assert response.status_code in (201, 400), response.text
                case ("check",):  # every term again, after the last write
                    contacts = await every_contact(client)
                    for term in terms:
                        assert await search(client, term) == expected(contacts, term), term
                case _:
                    await write(client, step, state)


def test_the_index_narrows_only_terms_it_can_hold() -> None:
    assert contact_search.usable("abc") and contact_search.usable("ß x")
    assert not contact_search.usable("ab")  # shorter than a trigram
    assert not contact_search.usable("a\x00bc")  # NUL is U+FFFF in the index
    assert not contact_search.usable("a\uffffbc") and not contact_search.usable("ab\ncd")
    clause, params = contact_search.matches_clause('a"b')
    assert params == ('"a""b"', 'a"b') and "MATCH ?" in clause


async def test_a_flush_takes_the_noted_contacts_in_a_hundred_at_a_time() -> None:
    """What the index holds after the flushes is each contact's document; a deleted
    contact leaves it; each flush but the last says that some are left."""
    store = await Store.open()
    try:
        await contact_search.ensure(store)
        names = [("Zoë", f"Ünal {i}", f"Z{i}@Example.COM" if i % 3 else None) for i in range(250)]

        def insert(conn: sqlite3.Connection) -> None:
            conn.executemany(
                "INSERT INTO contacts(firstName, lastName, professionalEmail, createdAt,"
                " updatedAt) VALUES (?, ?, ?, 'now', 'now')",
                names,
            )
            conn.execute("DELETE FROM contacts WHERE id = 7")
            conn.execute("UPDATE contacts SET firstName = 'ẞen' WHERE id = 8")

        await store.write(insert)
        answers = []
        while True:
            answers.append(await store.read(contact_search.flush))
            if not answers[-1]:
                break
        assert answers == [True, True, False]
        rows = await store.fetchall(
            "SELECT id, firstName, lastName, professionalEmail FROM contacts ORDER BY id"
        )
        indexed = await store.fetchall("SELECT rowid, doc FROM temp.contact_search ORDER BY 1")
        assert indexed == [(i, contact_search.search_doc(*rest)) for i, *rest in rows]
        assert 7 not in {i for i, _ in indexed} and len(indexed) == 249
        assert await store.fetchone(f"SELECT count(*) FROM {contact_search.PENDING}") == (0,)
    finally:
        await store.close()


async def _store_of(contacts: int) -> Store:
    store = await Store.open()
    await store.executemany(
        "INSERT INTO contacts(firstName, lastName, createdAt, updatedAt)"
        " VALUES ('Ada', ?, 'now', 'now')",
        [(f"L{i}",) for i in range(contacts)],
    )
    return store


async def test_a_search_while_the_index_is_built_waits_for_it_after_one_read_every_contact() -> (
    None
):
    """The first search while the index is not ready reads every contact at once; after
    one did (and took this long), a search waits for the build, which then has the database
    thread to itself, and ends as soon as the index is whole."""
    store = await _store_of(3 * contact_search.CHUNK)
    try:
        await contact_search.settle(store)  # no search read every contact yet: no wait
        assert not contact_search.ready(store)
        contact_search.read_all(store, 30.0)  # a slow read of every contact
        await asyncio.wait_for(contact_search.settle(store), timeout=20)
        assert contact_search.ready(store)  # it waited for the build, not 60 s
    finally:
        await store.close()


async def test_a_search_waits_for_the_build_a_bounded_while() -> None:
    store = await _store_of(3 * contact_search.CHUNK)
    try:
        contact_search.warm(store)
        contact_search.read_all(store, 0.0)  # reading every contact took no time: no wait
        await contact_search.settle(store)
        assert not contact_search.ready(store)
        await contact_search.ensure(store)
    finally:
        await store.close()


async def test_a_search_over_http_before_the_index_is_whole_answers_the_same() -> None:
    """The listing of a search measures its read of every contact, and the next search
    waits for the index: both answer what the index answers once whole."""
    app = create_app(make_settings())
    async with open_client(app) as client:
        store = app.state.services.emulator.db
        first = (await client.get("/v1/contacts", params={"search": "mar"}, headers=ALL)).json()
        assert contact_search._read_all.get(store) is not None or contact_search.ready(store)
        second = (await client.get("/v1/contacts", params={"search": "mar"}, headers=ALL)).json()
        await contact_search.ensure(store)
        whole = (await client.get("/v1/contacts", params={"search": "mar"}, headers=ALL)).json()
        assert first == second == whole
        assert whole["data"]


def _bytes_written() -> int:
    """What this process has handed to write system calls so far (Linux's /proc)."""
    with open("/proc/self/io") as io:
        return next(int(line.split()[1]) for line in io if line.startswith("wchar:"))


@pytest.mark.skipif(not os.path.exists("/proc/self/io"), reason="Linux's /proc/self/io")
async def test_writes_after_the_index_is_built_write_no_file() -> None:
    """Once built (its merge included), the index leaves the TEMP tables' journal in memory:
    a create writes nothing to a file (a journal file left open by the merge took ~56 KB of
    writes a create)."""
    store = await Store.open()
    try:
        await store.executemany(
            "INSERT INTO contacts(firstName, lastName, professionalEmail, createdAt, updatedAt)"
            " VALUES (?, ?, ?, 'now', 'now')",
            [(f"Ada{i}", f"Lovelace{i}", f"ada.lovelace{i}@example{i}.com") for i in range(5000)],
        )
        await contact_search.ensure(store)
        before = _bytes_written()
        for i in range(50):
            await store.execute(
                "INSERT INTO contacts(firstName, lastName, createdAt, updatedAt)"
                " VALUES ('Grace', ?, 'now', 'now')",
                (f"Hopper{i}",),
            )
        assert _bytes_written() - before < 50 * 4096
    finally:
        await store.close()
