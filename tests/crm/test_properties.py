"""Hypothesis properties of the reference CRM, through HTTP: matching and the task state machine."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import CRM_KEY

pytestmark = pytest.mark.anyio

# One app serves every example: each example resets it or uses ids of its own.
PROPERTY = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

LABEL = st.text("abcdefghijklmnopqrstuvxyz0123456789-", min_size=1, max_size=12).filter(
    lambda s: s[0] != "-" and s[-1] != "-"
)
# Reserved test TLDs: never one of the fixture records' domains.
DOMAIN = st.builds(
    lambda label, tld: f"{label}.{tld}", LABEL, st.sampled_from(["test", "example", "co.test"])
)


@st.composite
def recased(draw: st.DrawFn, text: str) -> str:
    flips = draw(st.lists(st.booleans(), min_size=len(text), max_size=len(text)))
    return "".join(c.upper() if flip else c for c, flip in zip(text, flips, strict=True))


@st.composite
def domain_spelling(draw: st.DrawFn, domain: str) -> str:
    """Any way the platform may write `domain`: scheme, www., case, port, path, query, spaces."""
    scheme = draw(st.sampled_from(["", "http://", "https://", "HTTPS://"]))
    www = draw(st.sampled_from(["", "www.", "WWW."]))
    port = draw(st.sampled_from(["", ":443", ":8080"]))
    tail = draw(st.sampled_from(["", "/", "/about", "/a/b?x=1", "?q=1", "#top", "."]))
    pad = draw(st.sampled_from(["", " ", "\t"]))
    if tail == "." and port:
        tail = ""
    return f"{pad}{scheme}{www}{draw(recased(domain))}{port}{tail}{pad}"


@st.composite
def url_spelling(draw: st.DrawFn, url: str) -> str:
    """Any way of writing a profile or page URL: scheme, www., case, slash, query, fragment."""
    scheme = draw(st.sampled_from(["", "http://", "https://", "HTTP://"]))
    www = draw(st.sampled_from(["", "www.", "Www."]))
    tail = draw(st.sampled_from(["", "/", "//", "?utm=1", "/?a=b#c", "#x"]))
    return f"{scheme}{www}{draw(recased(url))}{tail}"


@st.composite
def spellings(draw: st.DrawFn, values: st.SearchStrategy[str], spell: Any) -> tuple[str, str, str]:
    """Two spellings of one value and one spelling of another (drawn before the test runs:
    a draw inside the async test could stop it halfway)."""
    mine, other = draw(st.lists(values, min_size=2, max_size=2, unique=True))
    return draw(spell(mine)), draw(spell(mine)), draw(spell(other))


async def sync_ids(
    client: httpx.AsyncClient, kind: str, items: list[dict[str, Any]]
) -> dict[str, str]:
    r = await client.post(f"/crm/{kind}/sync", headers=CRM_KEY, json={kind: items})
    assert r.status_code == 200, r.text
    return {x["externalId"]: x["crmId"] for x in r.json()["results"]}


async def matched_after_create(
    client: httpx.AsyncClient,
    kind: str,
    created: dict[str, Any],
    same: dict[str, Any],
    other: dict[str, Any],
) -> tuple[str, dict[str, str]]:
    """On a fresh CRM: create one record, then sync one item spelled like it and one not."""
    await client.post("/_emulator/reset")
    r = await client.post(
        f"/crm/{kind}", headers=CRM_KEY, json={kind: [{"externalId": "new", **created}]}
    )
    assert r.status_code == 201, r.text
    crm_id = r.json()["results"][0]["crmId"]
    items = [{"externalId": "same", **same}, {"externalId": "other", **other}]
    return crm_id, await sync_ids(client, kind, items)


@PROPERTY
@given(
    spelled=spellings(DOMAIN, domain_spelling),
    created_as=st.sampled_from(["domain", "website"]),
    synced_as=st.sampled_from(["domain", "website"]),
)
async def test_any_spelling_of_a_domain_matches_its_company_and_no_other(
    client: httpx.AsyncClient, spelled: tuple[str, str, str], created_as: str, synced_as: str
) -> None:
    first, second, other = spelled
    crm_id, found = await matched_after_create(
        client, "companies", {created_as: first}, {synced_as: second}, {synced_as: other}
    )
    assert found == {"same": crm_id}


PAGE = st.builds(lambda slug: f"network.test/company/{slug}", LABEL)
PROFILE = st.builds(lambda slug: f"network.test/in/{slug}", LABEL)


@PROPERTY
@given(page=spellings(PAGE, url_spelling), profile=spellings(PROFILE, url_spelling))
async def test_any_spelling_of_a_page_or_profile_url_matches_its_record_and_no_other(
    client: httpx.AsyncClient, page: tuple[str, str, str], profile: tuple[str, str, str]
) -> None:
    for kind, field, (first, second, other) in (
        ("companies", "companyNetworkUrl", page),
        ("contacts", "networkUrl", profile),
    ):
        crm_id, found = await matched_after_create(
            client, kind, {field: first}, {field: second}, {field: other}
        )
        assert found == {"same": crm_id}


@st.composite
def email_spelling(draw: st.DrawFn, email: str) -> str:
    return f"{draw(st.sampled_from(['', ' ']))}{draw(recased(email))}"


EMAIL = st.builds(lambda name: f"{name}@mail.test", LABEL)


@PROPERTY
@given(spelled=spellings(EMAIL, email_spelling))
async def test_contact_email_matches_case_insensitively_and_only_itself(
    client: httpx.AsyncClient, spelled: tuple[str, str, str]
) -> None:
    first, second, other = spelled
    crm_id, found = await matched_after_create(
        client, "contacts", {"email": first}, {"email": second}, {"email": other}
    )
    assert found == {"same": crm_id}


# --- tasks ------------------------------------------------------------------------------

INDEX = st.integers(0, 5)  # past the tasks created so far: an unknown id
OPERATION = st.one_of(
    st.tuples(st.just("create"), st.booleans()),
    st.tuples(st.just("get"), INDEX),
    st.tuples(st.just("patch"), INDEX, st.booleans()),
    st.tuples(st.just("batch_get"), st.lists(INDEX, max_size=4)),
    st.tuples(st.just("batch_patch"), st.lists(INDEX, max_size=4), st.booleans()),
)


@PROPERTY
@given(operations=st.lists(OPERATION, min_size=1, max_size=12))
async def test_task_state_stays_consistent_under_any_operations(
    client: httpx.AsyncClient, operations: list[tuple[Any, ...]]
) -> None:
    ids: list[str] = []
    model: dict[str, str | None] = {}  # id -> completedAt (None: open)

    def task_id(index: int) -> str:
        return ids[index] if index < len(ids) else f"unknown-{index}"

    def check(task: dict[str, Any]) -> None:
        assert (task["completedAt"] is not None) is task["completed"]
        assert task["completedAt"] == model[task["id"]]

    def complete(task: dict[str, Any], completed: bool) -> None:
        if completed:
            model[task["id"]] = model[task["id"]] or task["completedAt"]
        else:
            model[task["id"]] = None

    for op in operations:
        match op:
            case ("create", completed):
                r = await client.post(
                    "/crm/tasks", headers=CRM_KEY, json={"subject": "s", "completed": completed}
                )
                assert r.status_code == 201
                task = r.json()
                ids.append(task["id"])
                # created open whatever the body says (the spec)
                assert task["completed"] is False and task["completedAt"] is None
                model[task["id"]] = None
            case ("get", index):
                r = await client.get(f"/crm/tasks/{task_id(index)}", headers=CRM_KEY)
                assert r.status_code == (200 if index < len(ids) else 404)
                if r.status_code == 200:
                    check(r.json())
            case ("patch", index, completed):
                r = await client.patch(
                    f"/crm/tasks/{task_id(index)}", headers=CRM_KEY, json={"completed": completed}
                )
                assert r.status_code == (200 if index < len(ids) else 404)
                if r.status_code == 200:
                    complete(r.json(), completed)
                    check(r.json())
            case ("batch_get", indexes):
                r = await client.post(
                    "/crm/tasks/batch", headers=CRM_KEY, json={"ids": [task_id(i) for i in indexes]}
                )
                assert [t["id"] for t in r.json()] == list(
                    dict.fromkeys(task_id(i) for i in indexes if i < len(ids))
                )
                for task in r.json():
                    check(task)
            case ("batch_patch", indexes, completed):
                body = {"ids": [task_id(i) for i in indexes], "completed": completed}
                r = await client.patch("/crm/tasks/batch", headers=CRM_KEY, json=body)
                assert {t["id"] for t in r.json()} == {task_id(i) for i in indexes if i < len(ids)}
                for task in r.json():
                    assert task["completed"] is completed
                    complete(task, completed)
                    check(task)
    r = await client.post("/crm/tasks/batch", headers=CRM_KEY, json={"ids": ids})
    assert len(r.json()) == len(ids)
    for task in r.json():
        check(task)


# --- robustness -------------------------------------------------------------------------

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
FIELDS = [
    "companies",
    "contacts",
    "associations",
    "ids",
    "completed",
    "externalId",
    "crmId",
    "type",
    "subject",
    "domain",
    "email",
    "contactCRMId",
    "companyCRMId",
    "direction",
]
BODY = st.one_of(
    JSON,
    st.dictionaries(st.sampled_from(FIELDS), JSON, max_size=3),
    st.builds(
        lambda key, items: {key: items},
        st.sampled_from(["companies", "contacts", "associations"]),
        st.lists(st.dictionaries(st.sampled_from(FIELDS), JSON, max_size=4), max_size=3),
    ),
)
ROUTES = [
    ("POST", "/contacts/sync"),
    ("POST", "/companies/sync"),
    ("POST", "/contacts"),
    ("POST", "/companies"),
    ("PUT", "/contacts"),
    ("PUT", "/companies"),
    ("POST", "/associations"),
    ("POST", "/activities"),
    ("POST", "/tasks"),
    ("PATCH", "/tasks/crm-task-000001"),
    ("POST", "/tasks/batch"),
    ("PATCH", "/tasks/batch"),
]


@PROPERTY
@given(route=st.sampled_from(ROUTES), body=BODY)
async def test_no_body_yields_a_server_error(
    client: httpx.AsyncClient, route: tuple[str, str], body: Any
) -> None:
    method, path = route
    r = await client.request(method, f"/crm{path}", headers=CRM_KEY, json=body)
    assert r.status_code < 500, r.text
    if r.status_code >= 400:
        assert set(r.json()) == {"error", "message"}
