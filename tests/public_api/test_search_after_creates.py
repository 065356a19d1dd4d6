"""A search's total kept from before creates is patched by testing only the contacts they
added (store/pages.py, `grown_page`): every answer, first asked or asked again after creates,
updates and deletes in any order, is the one a recount of every contact gives."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from emulator.app import create_app
from emulator.store import contact_search
from tests.conftest import ALL, make_settings, open_client

pytestmark = pytest.mark.anyio

# Names and terms that overlap (Unicode folds included: "ß" folds to "ss", "K" (Kelvin) to k).
PIECES = ["Ann", "son", "ber", "ß", "Sson", "x", "\u212aa", "Jo"]
TERMS = ["son", "ANN", "sson", "ber", "ssb", "kaj", "anns", "ann"]
Name = st.lists(st.sampled_from(PIECES), min_size=1, max_size=3).map("".join)
Ask = st.tuples(st.just("ask"), st.sampled_from(TERMS), st.integers(1, 3), st.integers(1, 4))
Create = st.tuples(st.just("create"), Name, Name, st.booleans())
# A contact counted before: from the lowest ids, or from the highest (maybe one just created).
Update = st.tuples(st.just("update"), st.integers(0, 5), st.booleans(), Name)
Delete = st.tuples(st.just("delete"), st.integers(0, 2))
Steps = st.lists(st.one_of(Ask, Create, Update, Delete), max_size=20)


async def recount(store: Any, term: str) -> list[int]:
    """The ids the search's rule gives, every contact read now."""
    rows = await store.fetchall(
        "SELECT id, firstName, lastName, professionalEmail FROM contacts ORDER BY id"
    )
    folded = term.casefold()
    ids = []
    for contact_id, first, last, email in rows:
        texts = [t for t in (first, last, email) if t is not None]
        if first is not None and last is not None:
            texts.append(f"{first} {last}")
        if any(folded in t.casefold() for t in texts):
            ids.append(contact_id)
    return ids


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(steps=Steps)
@example(steps=[("ask", "son", 1, 2), ("create", "Sson", "x", False), ("ask", "son", 1, 2)])
@example(
    steps=[
        ("ask", "ann", 1, 2),
        ("create", "Ann", "x", False),
        ("update", 0, False, "x"),
        ("create", "Ann", "x", False),
        ("ask", "ann", 2, 3),
    ]
)
async def test_a_search_after_creates_answers_what_a_recount_gives(
    steps: list[tuple[Any, ...]],
) -> None:
    app = create_app(make_settings())
    async with open_client(app) as client:
        store = app.state.services.emulator.db
        await contact_search.ensure(store)
        created: list[int] = []
        for n, step in enumerate([*steps, *(("ask", t, 1, 4) for t in TERMS)]):
            match step:
                case ("ask", term, page, size):
                    query = {"search": term, "page": str(page), "pageSize": str(size)}
                    response = await client.get("/v1/contacts", params=query, headers=ALL)
                    assert response.status_code == 200, response.text
                    body = response.json()
                    ids = await recount(store, term)
                    shown = [c["id"] for c in body["data"]]
                    assert (body["meta"]["total"], shown) == (
                        len(ids),
                        ids[(page - 1) * size : page * size],
                    ), step
                case ("create", first, last, with_email):
                    contact = {"firstName": first, "lastName": last}
                    if with_email:
                        contact["professionalEmail"] = f"{last}.{n}@{first}.example"
                    response = await client.post("/v1/contact", json=contact, headers=ALL)
                    assert response.status_code == 201, response.text
                    created.append(response.json()["data"]["id"])
                case ("update", at, from_top, name):
                    order = "DESC" if from_top else "ASC"
                    await store.execute(
                        "UPDATE contacts SET lastName = ? WHERE id ="
                        f" (SELECT id FROM contacts ORDER BY id {order} LIMIT 1 OFFSET ?)",
                        (name, at),
                    )
                case ("delete", at):  # a contact this test created (none is a list member)
                    if created:
                        gone = created.pop(at % len(created))
                        await store.execute("DELETE FROM contacts WHERE id = ?", (gone,))
