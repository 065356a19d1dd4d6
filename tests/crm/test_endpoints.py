"""Every Part A endpoint of the reference CRM, through HTTP, on the default fixtures."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.conftest import CRM_KEY

pytestmark = pytest.mark.anyio


async def post(client: httpx.AsyncClient, path: str, body: Any) -> httpx.Response:
    return await client.post(f"/crm{path}", json=body, headers=CRM_KEY)


async def stored(client: httpx.AsyncClient, kind: str, crm_id: str) -> dict[str, Any]:
    r = await client.get(f"/_emulator/crm/{kind}/{crm_id}")
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


async def seeded(client: httpx.AsyncClient, kind: str, *needed: str) -> dict[str, Any]:
    """The first record the fixtures seeded into the CRM that has every field of `needed`."""
    r = await client.get(f"/_emulator/crm/{kind}", params={"pageSize": 100})
    for record in r.json()["data"]:
        if all(record["fields"].get(f) for f in needed):
            return record  # type: ignore[no-any-return]
    raise AssertionError(f"the default fixtures seed no CRM {kind} with {needed}")


@pytest.fixture
async def company(client: httpx.AsyncClient) -> dict[str, Any]:
    return await seeded(client, "companies", "domain", "companyNetworkUrl", "name")


@pytest.fixture
async def contact(client: httpx.AsyncClient) -> dict[str, Any]:
    return await seeded(client, "contacts", "email", "networkUrl", "phone")


async def test_health_answers_ok(client: httpx.AsyncClient) -> None:
    r = await client.get("/crm/health", headers=CRM_KEY)
    assert (r.status_code, r.json()) == (200, {"status": "ok"})


# --- sync -------------------------------------------------------------------------------


def respell_url(url: str) -> str:
    """The same URL as the platform might send it: other scheme and case, a slash, a query."""
    bare = url.split("://", 1)[-1].removeprefix("www.")
    return f"HTTP://WWW.{bare.upper()}/?ref=x"


async def test_company_sync_matches_by_normalised_domain_and_omits_unmatched(
    client: httpx.AsyncClient, company: dict[str, Any]
) -> None:
    domain = company["fields"]["domain"]
    r = await post(
        client,
        "/companies/sync",
        {
            "companies": [
                {"externalId": "a", "domain": f"HTTPS://www.{domain.upper()}/about?x=1"},
                {"externalId": "b", "domain": "nowhere.example", "name": "No Such Company"},
            ]
        },
    )
    assert r.status_code == 200
    results = r.json()["results"]
    assert [(x["externalId"], x["crmId"]) for x in results] == [("a", company["crmId"])]
    assert "errors" not in r.json()


async def test_company_sync_falls_back_to_website_page_url_and_name(
    client: httpx.AsyncClient, company: dict[str, Any]
) -> None:
    fields = company["fields"]
    r = await post(
        client,
        "/companies/sync",
        {
            "companies": [
                {"externalId": "w", "website": f"http://{fields['domain']}"},
                {"externalId": "u", "companyNetworkUrl": respell_url(fields["companyNetworkUrl"])},
                {
                    "externalId": "n",
                    "domain": "other.example",
                    "name": f"  {fields['name'].upper()} ",
                },
            ]
        },
    )
    crm_id = company["crmId"]
    assert {x["externalId"]: x["crmId"] for x in r.json()["results"]} == {
        "w": crm_id,
        "u": crm_id,
        "n": crm_id,
    }


async def test_contact_sync_matches_by_email_profile_url_or_phone(
    client: httpx.AsyncClient, contact: dict[str, Any]
) -> None:
    fields = contact["fields"]
    digits = "".join(ch for ch in fields["phone"] if ch.isdigit())
    r = await post(
        client,
        "/contacts/sync",
        {
            "contacts": [
                {"externalId": "e", "email": fields["email"].upper()},
                {"externalId": "u", "networkUrl": respell_url(fields["networkUrl"])},
                {"externalId": "p", "mobilePhone": f"({digits[:2]}) {digits[2:5]}-{digits[5:]}"},
                {"externalId": "x", "email": "nobody@nowhere.example"},
            ]
        },
    )
    crm_id = contact["crmId"]
    assert {x["externalId"]: x["crmId"] for x in r.json()["results"]} == {
        "e": crm_id,
        "u": crm_id,
        "p": crm_id,
    }


async def test_sync_with_no_match_answers_empty_results(client: httpx.AsyncClient) -> None:
    """Errors rule 4: no match is an empty `results`, not an error."""
    for kind in ("contacts", "companies"):
        r = await post(
            client,
            f"/{kind}/sync",
            {kind: [{"externalId": "1", "email": "z@z.example", "domain": "z.example"}]},
        )
        assert (r.status_code, r.json()) == (200, {"results": []})
    r = await post(client, "/contacts/sync", {"contacts": []})
    assert r.json() == {"results": []}


async def test_sync_properties_by_default_are_every_syncable_name_so_nothing_is_cleared(
    client: httpx.AsyncClient, company: dict[str, Any], contact: dict[str, Any]
) -> None:
    """The spec's syncable names per kind, written out: the CRM's own fields come from its
    record, every other one as the sync item sent it (top level or customFields)."""
    sent = {
        "externalId": "a",
        "domain": company["fields"]["domain"],
        "phone": "+1 555 0199",
        "industry": "Shipping",
        "name": "ignored: not a syncable name",
        "customFields": {"tags": ["vip"], "favourite": "teal"},
    }
    r = await post(client, "/companies/sync", {"companies": [sent]})
    props = r.json()["results"][0]["properties"]
    owned = ("accountTier", "totalDeals", "lifetimeValue", "accountOwner")
    assert props == {
        **{f: company["fields"][f] for f in owned},
        "domain": company["fields"]["domain"],
        "phone": "+1 555 0199",
        "industry": "Shipping",
        "tags": ["vip"],
    }
    sent = {"externalId": "c", "email": contact["fields"]["email"], "mobilePhone": "+44 1"}
    r = await post(client, "/contacts/sync", {"contacts": [sent]})
    props = r.json()["results"][0]["properties"]
    owned = ("leadScore", "lifecycleStage", "owner", "dealValue")
    assert props == {
        **{f: contact["fields"][f] for f in owned},
        "email": contact["fields"]["email"],
        "mobilePhone": "+44 1",
    }


async def test_sync_back_owned_answers_the_crm_fields_only(
    client: httpx.AsyncClient, company: dict[str, Any]
) -> None:
    """The named wiping setting: only the CRM's own fields, so the null rule clears the rest."""
    settings = (await client.get("/_emulator/crm/settings")).json()
    r = await client.put("/_emulator/crm/settings", json={**settings, "syncBack": "owned"})
    assert r.status_code == 200, r.text
    sent = {"externalId": "a", "domain": company["fields"]["domain"], "phone": "+1 555 0199"}
    r = await post(client, "/companies/sync", {"companies": [sent]})
    props = r.json()["results"][0]["properties"]
    owned = ("accountTier", "totalDeals", "lifetimeValue", "accountOwner")
    assert props == {f: company["fields"][f] for f in owned}


# --- create and update ------------------------------------------------------------------


async def test_create_companies_answers_201_with_a_crm_id_each(client: httpx.AsyncClient) -> None:
    items = [
        {
            "externalId": f"e{i}",
            "name": f"Fresh {i}",
            "domain": f"fresh{i}.example",
            "numberOfEmployees": 12,
            "somethingUnknown": {"deep": [1, 2]},
        }
        for i in range(3)
    ]
    r = await post(client, "/companies", {"companies": items})
    assert r.status_code == 201
    results = r.json()["results"]
    assert [x["externalId"] for x in results] == ["e0", "e1", "e2"]
    assert len({x["crmId"] for x in results}) == 3
    assert all(x["crmId"].startswith("crm-co-") for x in results)
    record = await stored(client, "companies", results[1]["crmId"])
    assert record["externalId"] == "e1"
    assert record["fields"]["somethingUnknown"] == {"deep": [1, 2]}
    assert record["fields"]["numberOfEmployees"] == 12
    # A created record is found again by its domain, with the CRM's own values synced back.
    r = await post(
        client,
        "/companies/sync",
        {"companies": [{"externalId": "again", "domain": "www.fresh1.example"}]},
    )
    (hit,) = r.json()["results"]
    assert hit["crmId"] == results[1]["crmId"]
    owned = {"accountTier", "totalDeals", "lifetimeValue", "accountOwner"}
    assert set(hit["properties"]) == owned | {"domain"}


async def test_create_contacts_stores_owner_and_keys(client: httpx.AsyncClient) -> None:
    r = await post(
        client,
        "/contacts",
        {
            "contacts": [
                {
                    "externalId": "9001",
                    "email": "New.Person@Example.org",
                    "ownerId": "crm-user-3",
                    "phone": "+1 555 0100",
                },
            ]
        },
    )
    assert r.status_code == 201
    crm_id = r.json()["results"][0]["crmId"]
    assert crm_id.startswith("crm-ct-")
    fields = (await stored(client, "contacts", crm_id))["fields"]
    assert fields["owner"] == "crm-user-3"  # the owner the platform picked
    r = await post(
        client, "/contacts/sync", {"contacts": [{"externalId": "9001", "phone": "15550100"}]}
    )
    assert r.json()["results"][0]["crmId"] == crm_id


async def test_update_stores_every_field_and_reports_each_item(
    client: httpx.AsyncClient, company: dict[str, Any]
) -> None:
    """Errors rule 2: failure per item, success true for the others."""
    crm_id = company["crmId"]
    r = await client.put(
        "/crm/companies",
        headers=CRM_KEY,
        json={
            "companies": [
                {
                    "crmId": crm_id,
                    "campaignEngagementStatus": "Message Sent (1/3) - EMAIL",
                    "My Custom Opens": "4",
                    "domain": None,
                    "website": None,
                },
                {"crmId": "crm-co-999999", "campaignOpens": "1"},
            ]
        },
    )
    assert r.status_code == 200
    assert r.json() == {
        "results": [
            {"crmId": crm_id, "success": True},
            {"crmId": "crm-co-999999", "success": False, "error": "Unknown crmId crm-co-999999"},
        ]
    }
    record = await stored(client, "companies", crm_id)
    fields = record["fields"]
    assert fields["campaignEngagementStatus"] == "Message Sent (1/3) - EMAIL"
    assert fields["My Custom Opens"] == "4"
    assert fields["domain"] is None and fields["name"] == company["fields"]["name"]  # merged
    assert record["updatedAt"] >= record["createdAt"]
    # With domain and website cleared, the domain no longer matches.
    r = await post(
        client,
        "/companies/sync",
        {"companies": [{"externalId": "a", "domain": company["fields"]["domain"]}]},
    )
    assert r.json() == {"results": []}


async def test_update_contacts_rekeys_a_changed_email(
    client: httpx.AsyncClient, contact: dict[str, Any]
) -> None:
    crm_id = contact["crmId"]
    r = await client.put(
        "/crm/contacts",
        headers=CRM_KEY,
        json={
            "contacts": [
                {
                    "crmId": crm_id,
                    "email": "someone@new.example",
                    "campaignReplyAnalysis": "Yes (1)",
                },
            ]
        },
    )
    assert r.json()["results"] == [{"crmId": crm_id, "success": True}]
    r = await post(
        client,
        "/contacts/sync",
        {"contacts": [{"externalId": "4", "email": "SOMEONE@new.example"}]},
    )
    assert r.json()["results"][0]["crmId"] == crm_id


async def test_update_of_some_keys_rekeys_those_and_keeps_the_others(
    client: httpx.AsyncClient, contact: dict[str, Any]
) -> None:
    """An update sets only the match keys whose value changed: the others still match."""
    crm_id, fields = contact["crmId"], contact["fields"]
    item = {"crmId": crm_id, "title": "CTO", "phone": "+1 555 010 9999"}
    r = await client.put("/crm/contacts", headers=CRM_KEY, json={"contacts": [item]})
    assert r.json()["results"] == [{"crmId": crm_id, "success": True}]
    by_email = {"externalId": "4", "email": fields["email"].upper()}
    by_network = {"externalId": "5", "networkUrl": fields["networkUrl"]}
    by_new_phone = {"externalId": "6", "phone": "+15550109999"}
    by_old_phone = {"externalId": "7", "phone": fields["phone"]}
    r = await post(
        client,
        "/contacts/sync",
        {"contacts": [by_email, by_network, by_new_phone, by_old_phone]},
    )
    assert {x["externalId"]: x["crmId"] for x in r.json()["results"]} == {
        "4": crm_id,
        "5": crm_id,
        "6": crm_id,
    }


# --- associations, activities, users ----------------------------------------------------


async def test_associations_link_known_records_and_report_unknown_ids(
    client: httpx.AsyncClient, contact: dict[str, Any], company: dict[str, Any]
) -> None:
    ct, co = contact["crmId"], company["crmId"]
    body = {
        "associations": [
            {"contactCRMId": ct, "companyCRMId": co},
            {"contactCRMId": "ct_nope", "companyCRMId": co},
            {"contactCRMId": ct, "companyCRMId": "co_nope"},
        ]
    }
    already = co in contact["companyCRMIds"]
    r = await post(client, "/associations", body)
    assert r.status_code == 200
    assert r.json() == {
        "success": True,
        "created": 0 if already else 1,
        "errors": [
            {
                "contactCRMId": "ct_nope",
                "companyCRMId": co,
                "error": "Unknown contact crmId ct_nope",
            },
            {
                "contactCRMId": ct,
                "companyCRMId": "co_nope",
                "error": "Unknown company crmId co_nope",
            },
        ],
    }
    r = await post(client, "/associations", {"associations": body["associations"][:1]})
    assert r.json() == {"success": True, "created": 0}  # already linked: idempotent
    assert co in (await stored(client, "contacts", ct))["companyCRMIds"]
    assert ct in (await stored(client, "companies", co))["contactCRMIds"]
    links = (await client.get(f"/_emulator/crm/associations/{ct}")).json()
    assert {"contactCRMId": ct, "companyCRMId": co} in [
        {k: v for k, v in link.items() if k != "createdAt"} for link in links
    ]


async def test_associations_of_many_pairs_count_each_new_link_once(
    client: httpx.AsyncClient,
) -> None:
    # more pairs than one statement of many rows holds, one of them twice, one known already
    r = await post(
        client,
        "/contacts",
        {"contacts": [{"externalId": f"a{i}", "email": f"a{i}@example.org"} for i in range(45)]},
    )
    contacts = [x["crmId"] for x in r.json()["results"]]
    r = await post(client, "/companies", {"companies": [{"externalId": "a", "name": "A Co"}]})
    company = r.json()["results"][0]["crmId"]
    pairs = [{"contactCRMId": c, "companyCRMId": company} for c in contacts]
    r = await post(client, "/associations", {"associations": pairs[:1]})
    assert r.json() == {"success": True, "created": 1}
    r = await post(client, "/associations", {"associations": [*pairs, pairs[7]]})
    assert r.json() == {"success": True, "created": len(contacts) - 1}
    linked = (await stored(client, "companies", company))["contactCRMIds"]
    assert sorted(linked) == sorted(contacts)


async def test_activity_is_created_with_an_id_and_echoed_fields(client: httpx.AsyncClient) -> None:
    body = {
        "type": "NETWORK_INMAIL",
        "direction": "INBOUND",
        "subject": "[Acme] Ada Lovelace",
        "body": "<p>Hi</p>",
        "occurredAt": "2026-01-02T03:04:05Z",
        "contactId": "crm-ct-1",
        "metadata": {"messageId": 17, "sequenceIndex": 1},
        "extra": True,
    }
    r = await post(client, "/activities", body)
    assert r.status_code == 201
    answer = r.json()
    assert answer.pop("id").startswith("crm-act-")
    assert answer == body
    r = await client.get("/_emulator/crm/activities")
    assert r.json()["meta"]["total"] == 1


async def test_users_are_a_bare_array(client: httpx.AsyncClient) -> None:
    r = await client.get("/crm/users", headers=CRM_KEY)
    assert r.status_code == 200
    users = r.json()
    assert isinstance(users, list) and users
    assert set(users[0]) == {"id", "name", "email"}


# --- tasks ------------------------------------------------------------------------------


async def test_post_tasks_creates_an_open_task_whatever_the_body_says(
    client: httpx.AsyncClient,
) -> None:
    """The spec: POST /tasks creates the task with `completed` false."""
    body = {"subject": "Call Ada", "completed": True, "completedAt": "2026-01-01T00:00:00Z"}
    r = await post(client, "/tasks", body)
    assert r.status_code == 201
    task = r.json()
    assert task["completed"] is False and task["completedAt"] is None
    read = (await client.get(f"/crm/tasks/{task['id']}", headers=CRM_KEY)).json()
    assert read["completed"] is False and read["completedAt"] is None


async def test_task_lifecycle(client: httpx.AsyncClient) -> None:
    r = await post(
        client,
        "/tasks",
        {
            "subject": "Call Olivia",
            "type": "call",
            "dueDate": "2026-02-01",
            "contactId": "crm-ct-1",
            "priority": "high",
        },
    )
    assert r.status_code == 201
    task = r.json()
    assert task["completed"] is False and task["completedAt"] is None
    assert (
        task["subject"] == "Call Olivia"
        and task["priority"] == "high"
        and task["description"] is None
    )
    task_id = task["id"]
    assert (await client.get(f"/crm/tasks/{task_id}", headers=CRM_KEY)).json() == task

    r = await client.patch(f"/crm/tasks/{task_id}", headers=CRM_KEY, json={"completed": True})
    done = r.json()
    assert done["completed"] is True and done["completedAt"]
    again = (
        await client.patch(f"/crm/tasks/{task_id}", headers=CRM_KEY, json={"completed": True})
    ).json()
    assert again["completedAt"] == done["completedAt"]  # completing twice keeps the first time
    reopened = (
        await client.patch(f"/crm/tasks/{task_id}", headers=CRM_KEY, json={"completed": False})
    ).json()
    assert reopened["completed"] is False and reopened["completedAt"] is None


async def test_unknown_task_is_404(client: httpx.AsyncClient) -> None:
    r = await client.get("/crm/tasks/crm-task-999999", headers=CRM_KEY)
    assert r.status_code == 404 and r.json()["error"] == "not_found"
    r = await client.patch("/crm/tasks/crm-task-999999", headers=CRM_KEY, json={"completed": True})
    assert r.status_code == 404


async def test_task_batches_omit_unknown_ids(client: httpx.AsyncClient) -> None:
    """Errors rule 3: a batch get (and a batch completion) leaves unknown ids out, no error."""
    ids = [(await post(client, "/tasks", {"subject": f"T{i}"})).json()["id"] for i in range(3)]
    r = await post(client, "/tasks/batch", {"ids": [ids[2], "missing", ids[0], ids[2]]})
    assert r.status_code == 200
    assert [t["id"] for t in r.json()] == [ids[2], ids[0]]
    r = await client.patch(
        "/crm/tasks/batch", headers=CRM_KEY, json={"ids": [ids[1], "missing"], "completed": True}
    )
    assert r.status_code == 200
    (done,) = r.json()
    assert done["id"] == ids[1] and done["completed"] is True and done["completedAt"]
    r = await post(client, "/tasks/batch", {"ids": []})
    assert r.json() == []


# --- auth and validation ----------------------------------------------------------------


@pytest.mark.parametrize(
    "method,path",
    [
        ("GET", "/health"),
        ("POST", "/contacts/sync"),
        ("PUT", "/companies"),
        ("GET", "/users"),
        ("GET", "/tasks/x"),
        ("PATCH", "/tasks/batch"),
    ],
)
@pytest.mark.parametrize("headers", [{}, {"X-API-Key": "wrong"}, {"Authorization": "crm-demo-key"}])
async def test_missing_or_wrong_key_is_401(
    client: httpx.AsyncClient, method: str, path: str, headers: dict[str, str]
) -> None:
    r = await client.request(method, f"/crm{path}", headers=headers, json={})
    assert r.status_code == 401
    assert set(r.json()) == {"error", "message"}


async def test_key_header_name_is_case_insensitive(client: httpx.AsyncClient) -> None:
    r = await client.get("/crm/health", headers={"x-api-key": "crm-demo-key"})
    assert r.status_code == 200


BAD_BODIES = [
    ("POST", "/companies/sync", {}, "companies"),
    ("POST", "/companies/sync", {"companies": "nope"}, "companies"),
    ("POST", "/contacts/sync", {"contacts": [{"email": "a@b.c"}]}, "externalId"),
    ("POST", "/contacts/sync", {"contacts": [{"externalId": 7}]}, "contacts[0].externalId"),
    ("POST", "/companies", {"companies": [{"externalId": str(i)} for i in range(101)]}, "100"),
    (
        "POST",
        "/companies",
        {"companies": [{"externalId": "1", "domain": ["x"]}]},
        "companies[0].domain",
    ),
    ("POST", "/contacts", {"contacts": [{"externalId": ""}]}, "externalId"),
    ("PUT", "/companies", {"companies": [{"name": "no id"}]}, "crmId"),
    ("PUT", "/contacts", {"companies": []}, "contacts"),
    ("POST", "/associations", {"associations": [{"contactCRMId": "a"}]}, "companyCRMId"),
    ("POST", "/activities", {"subject": "no type"}, "type"),
    ("POST", "/activities", {"type": "SMS"}, "type"),
    ("POST", "/activities", {"type": "EMAIL", "direction": "SIDEWAYS"}, "direction"),
    ("POST", "/activities", {"type": "EMAIL", "occurredAt": "yesterday"}, "occurredAt"),
    ("POST", "/tasks", {"description": "no subject"}, "subject"),
    ("POST", "/tasks", {"subject": "x", "dueDate": "soon"}, "dueDate"),
    ("PATCH", "/tasks/crm-task-000001", {}, "completed"),
    ("PATCH", "/tasks/crm-task-000001", {"completed": "yes"}, "completed"),
    ("POST", "/tasks/batch", {"ids": "a,b"}, "ids"),
    ("POST", "/tasks/batch", {"ids": [1, 2]}, "ids[0]"),
    ("PATCH", "/tasks/batch", {"ids": ["a"]}, "completed"),
    ("PATCH", "/tasks/batch", {"completed": True}, "ids"),
]


@pytest.mark.parametrize("method,path,body,named", BAD_BODIES)
async def test_wrong_shapes_are_400_naming_the_problem(
    client: httpx.AsyncClient, method: str, path: str, body: Any, named: str
) -> None:
    r = await client.request(method, f"/crm{path}", headers=CRM_KEY, json=body)
    assert r.status_code == 400, r.text
    assert r.json()["error"] == "bad_request"
    assert named in r.json()["message"]


@pytest.mark.parametrize("content", [b"", b"{not json", b"[]", b"null", b'"text"'])
async def test_bad_json_is_400(client: httpx.AsyncClient, content: bytes) -> None:
    r = await client.post("/crm/contacts/sync", headers=CRM_KEY, content=content)
    assert r.status_code == 400
    assert set(r.json()) == {"error", "message"}


async def test_unknown_crm_route_answers_in_the_crm_error_shape(client: httpx.AsyncClient) -> None:
    r = await client.get("/crm/nothing", headers=CRM_KEY)
    assert r.status_code == 404 and set(r.json()) == {"error", "message"}


async def test_the_fixtures_tasks_are_held_and_new_ids_come_after_them(
    client: httpx.AsyncClient,
) -> None:
    """crm.json `tasks`: held as given (completed ones with their completedAt); the CRM's
    task ids go on past the seeded ones, never reusing one (crm-task-000004 was deleted)."""
    done = (await client.get("/crm/tasks/crm-task-000001", headers=CRM_KEY)).json()
    assert done["completed"] is True and done["completedAt"] == "2026-11-01T11:30:00.000Z"
    still_open = (await client.get("/crm/tasks/crm-task-000003", headers=CRM_KEY)).json()
    assert still_open["completed"] is False and still_open["completedAt"] is None
    gone = await client.get("/crm/tasks/crm-task-000004", headers=CRM_KEY)
    assert gone.status_code == 404
    r = await post(client, "/tasks", {"subject": "New"})
    assert r.json()["id"] == "crm-task-000006"
