"""Actions runs that act (issue 14): validation of types, options and targets; each completed
action changes its record on the clock; EXPORT_TO_CRM exports through the exporter."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette

from emulator.app import create_app
from emulator.simulation.actions.export import any_pending
from emulator.simulation.actions.runs import any_unfinished, step_runs
from emulator.simulation.actions.timeline import action_fails
from emulator.wire import parse_iso
from tests.conftest import ALL, make_settings
from tests.public_api.checks import assert_error
from tests.public_api.paging import fixtures
from tests.simulation.sim_helpers import small_fixtures

pytestmark = pytest.mark.anyio

SIX = [
    "SCRAPE_LEAD_FROM_NETWORK",
    "ENRICH_WITH_EMAIL",
    "ENRICH_WITH_PHONE",
    "VERIFY_LEAD_EMAIL",
    "VERIFY_LEAD_PHONE",
    "EXPORT_TO_CRM",
]
END = 15 + 60  # seconds after the start: every record of a small run has ended


async def start(client: httpx.AsyncClient, body: dict[str, Any]) -> int:
    response = await client.post("/v1/actions", json=body, headers=ALL)
    assert response.status_code == 200, response.text
    return int(response.json()["data"]["actionsId"])


async def advance(client: httpx.AsyncClient, seconds: float) -> None:
    response = await client.post("/_emulator/clock/advance", json={"seconds": seconds})
    assert response.status_code == 200, response.text


async def run_status(client: httpx.AsyncClient, run_id: int) -> dict[str, Any]:
    response = await client.get(f"/v1/actions/{run_id}/status", headers=ALL)
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()["data"]
    return data


async def contact(client: httpx.AsyncClient, contact_id: int) -> dict[str, Any]:
    response = await client.get(f"/v1/contact/{contact_id}", headers=ALL)
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()["data"]
    return data


async def company(client: httpx.AsyncClient, company_id: int) -> dict[str, Any]:
    response = await client.get(f"/v1/company/{company_id}", headers=ALL)
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()["data"]
    return data


def fields(record: dict[str, Any]) -> dict[str, Any]:
    """A record less its updatedAt."""
    return {k: v for k, v in record.items() if k != "updatedAt"}


# ---- validation --------------------------------------------------------------------------------


async def test_every_documented_type_and_option_is_accepted(client: httpx.AsyncClient) -> None:
    options = {
        "SCRAPE_LEAD_FROM_NETWORK": {"skipCompanyScrape": True, "skipContactMerge": False},
        "ENRICH_WITH_EMAIL": {
            "sortedApis": ["CREDITS"],
            "stopType": "VERIFIED_EMAIL",
            "speed": "FAST",
            "maxTimeToWait": 30000,
        },
        "ENRICH_WITH_PHONE": {"stopType": "PHONE", "speed": "SLOW"},
        "VERIFY_LEAD_EMAIL": None,
        "VERIFY_LEAD_PHONE": {},
        "EXPORT_TO_CRM": {
            "CRMOwnerId": {"value": "u-1", "override": False},
            "promptLeadFieldsCRMMapping": {
                "Email_Verified__c": {"value": "true", "override": True}
            },
            "promptCompanyFieldsCRMMapping": {"Tier": {"value": "A", "override": False}},
            "overwriteFields": {"title": False},
            "associationType": "primary",
            "exportAssociatedObject": True,
        },
    }
    actions = [{"type": t, **({"options": o} if o is not None else {})} for t, o in options.items()]
    run_id = await start(client, {"actions": actions, "contactIds": [1]})
    assert (await run_status(client, run_id))["totalActions"] == 6


@pytest.mark.parametrize(
    ("action", "field", "named"),
    [
        ({"type": "ENRICH_LEAD"}, "actions[0].type", "ENRICH_LEAD"),
        ({"type": "SCRAPE_LEAD_FROM_LINKEDIN"}, "actions[0].type", "SCRAPE_LEAD_FROM_NETWORK"),
        (
            {"type": "VERIFY_LEAD_EMAIL", "options": {"speed": "FAST"}},
            "actions[0].options",
            "speed",
        ),
        (
            {"type": "ENRICH_WITH_EMAIL", "options": {"speed": "FAST", "colour": 1, "size": 2}},
            "actions[0].options",
            "colour, size",
        ),
        (
            {"type": "ENRICH_WITH_EMAIL", "options": {"speed": "WARP"}},
            "actions[0].options",
            "speed",
        ),
        ({"type": "ENRICH_WITH_PHONE", "options": {"maxTimeToWait": -1}}, "actions[0].options", ""),
        ({"type": "EXPORT_TO_CRM", "options": {"CRMOwnerId": "u-1"}}, "actions[0].options", ""),
        (
            {"type": "EXPORT_TO_CRM", "options": {"CRMOwnerId": {"value": "u", "extra": 1}}},
            "actions[0].options",
            "extra",
        ),
    ],
)
async def test_bad_types_and_options_are_named(
    client: httpx.AsyncClient, action: dict[str, Any], field: str, named: str
) -> None:
    response = await client.post(
        "/v1/actions", json={"actions": [action], "contactIds": [1]}, headers=ALL
    )
    assert_error(response, 400, field)
    assert named in response.json()["message"]


@pytest.mark.parametrize(
    ("targets", "field"),
    [
        ({}, "contactIds"),
        ({"contactIds": [1], "companyIds": [1]}, "companyIds"),
        ({"contactGroupIds": [1], "companyGroupIds": [5]}, "companyGroupIds"),
        ({"companyIds": [999999]}, "companyIds"),
        ({"contactGroupIds": [999]}, "contactGroupIds"),
        ({"companyGroupIds": [1]}, "companyGroupIds"),  # a contact list is no company group
        ({"contactGroupIds": [4]}, "contactGroupIds"),  # an empty list: nothing to run
    ],
)
async def test_exactly_one_known_target(
    client: httpx.AsyncClient, app: Starlette, targets: dict[str, Any], field: str
) -> None:
    body = {"actions": [{"type": "VERIFY_LEAD_EMAIL"}], **targets}
    assert_error(await client.post("/v1/actions", json=body, headers=ALL), 400, field)
    runs = await app.state.services.emulator.db.fetchone("SELECT count(*) FROM actions_schedule")
    assert tuple(runs) == (0,)


async def test_list_targets_expand_to_members_and_companies_make_company_runs(
    client: httpx.AsyncClient,
) -> None:
    lists = {lst.id: lst for lst in fixtures().lists}
    members = sorted(set(lists[1].members) | set(lists[2].members))
    run_id = await start(
        client, {"actions": [{"type": "VERIFY_LEAD_EMAIL"}], "contactGroupIds": [1, 2]}
    )
    got = await run_status(client, run_id)
    assert got["entity"] == "CONTACT" and got["totalActions"] == len(members)
    companies = sorted(set(lists[5].members))
    run_id = await start(
        client,
        {
            "actions": [{"type": "SCRAPE_LEAD_FROM_NETWORK"}, {"type": "ENRICH_WITH_PHONE"}],
            "companyGroupIds": [5],
        },
    )
    got = await run_status(client, run_id)
    assert got["entity"] == "COMPANY" and got["totalActions"] == 2 * len(companies)
    run_id = await start(client, {"actions": [{"type": "ENRICH_WITH_EMAIL"}], "companyIds": [1, 2]})
    assert (await run_status(client, run_id))["entity"] == "COMPANY"


# ---- effects -----------------------------------------------------------------------------------


async def test_completed_actions_change_their_contacts_and_failed_ones_nothing(
    client: httpx.AsyncClient,
) -> None:
    fx = fixtures()
    chosen = [c for c in fx.contacts if not c.professionalEmail and c.companyId][:15]
    chosen += [c for c in fx.contacts if c.professionalEmail and not c.mobilePhone][:10]
    assert len(chosen) >= 15
    ids = [c.id for c in chosen]
    kinds = ["ENRICH_WITH_EMAIL", "ENRICH_WITH_PHONE", "SCRAPE_LEAD_FROM_NETWORK"]
    before = {i: await contact(client, i) for i in ids}
    run_id = await start(client, {"actions": [{"type": k} for k in kinds], "contactIds": ids})
    await advance(client, 14)  # processing: nothing has changed yet (the campaigns running
    # meanwhile touch updatedAt only)
    assert {i: fields(await contact(client, i)) for i in ids} == {
        i: fields(c) for i, c in before.items()
    }
    await advance(client, END)
    status = await run_status(client, run_id)
    failed = {(i, k) for i in ids for j, k in enumerate(kinds) if action_fails(run_id, i, j)}
    assert status["statusCounts"]["failed"] == len(failed) and failed  # some fail (~1 in 10)
    assert status["statusCounts"]["completed"] == 3 * len(ids) - len(failed)
    start_at = status["createdAt"]
    for i in ids:
        now = await contact(client, i)
        was = before[i]
        if (i, "ENRICH_WITH_EMAIL") in failed or was["professionalEmail"]:
            assert now["professionalEmail"] == was["professionalEmail"]  # found: the same one
        else:
            assert now["professionalEmail"] and "@" in now["professionalEmail"]
            assert now["emailVerificationStatus"] == "UNVERIFIED"
        if (i, "ENRICH_WITH_PHONE") in failed or was["mobilePhone"]:
            assert now["mobilePhone"] == was["mobilePhone"]
        else:
            assert now["mobilePhone"].startswith("+1 555 ")
        if (i, "SCRAPE_LEAD_FROM_NETWORK") not in failed:
            assert 50 <= now["numberOfConnections"] <= 500
        if all((i, k) in failed for k in kinds):
            assert fields(now) == fields(before[i])
        else:  # changed when the record's processing ended, after the start
            assert now["updatedAt"] > start_at
    # searchable by the new email: the merge key follows the field
    found = next(
        i
        for i in ids
        if (i, "ENRICH_WITH_EMAIL") not in failed and not before[i]["professionalEmail"]
    )
    email = (await contact(client, found))["professionalEmail"]
    listing = await client.get("/v1/contacts", params={"search": email.upper()}, headers=ALL)
    assert found in [c["id"] for c in listing.json()["data"]]


async def test_verify_sets_the_status_and_the_scrape_reaches_the_company(
    client: httpx.AsyncClient,
) -> None:
    fx = fixtures()
    emailed = [c for c in fx.contacts if c.professionalEmail and c.companyId][:12]
    ids = [c.id for c in emailed]
    companies_before = {c.companyId: await company(client, c.companyId) for c in emailed}
    run_id = await start(
        client,
        {
            "actions": [
                {"type": "VERIFY_LEAD_EMAIL"},
                {"type": "SCRAPE_LEAD_FROM_NETWORK", "options": {"skipCompanyScrape": False}},
            ],
            "contactIds": ids,
        },
    )
    await advance(client, END)
    for c in emailed:
        now = await contact(client, c.id)
        if not action_fails(run_id, c.id, 0):
            assert now["emailVerificationStatus"] in ("VALID", "RISKY", "INVALID")
        if not action_fails(run_id, c.id, 1):
            assert now["networkHeadline"]
            co = await company(client, c.companyId)  # type: ignore[arg-type]
            assert co["openJobPositions"] is not None
            assert co["hiringOnNetwork"] == (co["openJobPositions"] > 0)
    skip = [c for c in fx.contacts if c.companyId and c.companyId not in companies_before][:5]
    before = {c.companyId: await company(client, c.companyId) for c in skip}
    await start(
        client,
        {
            "actions": [
                {"type": "SCRAPE_LEAD_FROM_NETWORK", "options": {"skipCompanyScrape": True}}
            ],
            "contactIds": [c.id for c in skip],
        },
    )
    await advance(client, END)
    assert {i: await company(client, i) for i in before} == before  # type: ignore[arg-type]


# ---- EXPORT_TO_CRM -----------------------------------------------------------------------------


async def test_export_sends_the_runs_records_through_the_exporter(
    client: httpx.AsyncClient,
) -> None:
    fx = fixtures()
    fresh = [c for c in fx.contacts if not c.contactCRMId and c.companyId][:6]
    ids = [c.id for c in fresh]
    owner = fx.crm.users[1].id
    run_id = await start(
        client,
        {
            "actions": [
                {
                    "type": "EXPORT_TO_CRM",
                    "options": {
                        "CRMOwnerId": {"value": owner, "override": False},
                        "promptLeadFieldsCRMMapping": {
                            "Email_Verified__c": {"value": "true", "override": True}
                        },
                        "exportAssociatedObject": True,
                    },
                }
            ],
            "contactIds": ids,
        },
    )
    await advance(client, END)
    status = await run_status(client, run_id)
    assert status["overallStatus"] == "COMPLETED", status
    assert status["statusCounts"]["completed"] == len(ids)
    journal = await client.get(
        "/_emulator/journal", params={"exportId": f"actions-{run_id}", "pageSize": "500"}
    )
    calls = [(e["method"], e["path"]) for e in journal.json()["data"]]
    assert ("POST", "/contacts/sync") in calls and ("POST", "/companies/sync") in calls
    assert ("GET", "/health") in calls
    for c in fresh:
        now = await contact(client, c.id)
        assert now["contactCRMId"] and now["isInCRM"] is True
        stored = await client.get(f"/_emulator/crm/contacts/{now['contactCRMId']}")
        assert stored.status_code == 200, stored.text
        record = stored.json()
        assert record["fields"]["Email_Verified__c"] == "true", record  # the field mapping
        assert record["fields"]["ownerId"] == owner  # CRMOwnerId on the create
        assert record["companyCRMIds"]  # associated with its exported company
        assert (await company(client, c.companyId))["companyCRMId"]  # type: ignore[arg-type]
    # only the run's records went out
    others = [c for c in fx.contacts if not c.contactCRMId and c.id not in ids][:3]
    for c in others:
        assert (await contact(client, c.id))["contactCRMId"] is None


async def test_export_options_shape_updates_of_records_already_in_the_crm(
    client: httpx.AsyncClient,
) -> None:
    fx = fixtures()
    known = [c for c in fx.contacts if c.contactCRMId][:3]
    owner = fx.crm.users[0].id
    run_id = await start(
        client,
        {
            "actions": [
                {
                    "type": "EXPORT_TO_CRM",
                    "options": {
                        "CRMOwnerId": {"value": owner, "override": True},
                        "promptLeadFieldsCRMMapping": {
                            "Kept": {"value": "1", "override": False},
                            "Forced": {"value": "2", "override": True},
                        },
                        "overwriteFields": {"title": False, "firstName": True},
                    },
                }
            ],
            "contactIds": [c.id for c in known],
        },
    )
    await advance(client, END)
    assert (await run_status(client, run_id))["overallStatus"] == "COMPLETED"
    journal = await client.get(
        "/_emulator/journal",
        params={"exportId": f"actions-{run_id}", "method": "PUT", "path": "/contacts"},
    )
    [put] = journal.json()["data"]
    items = json.loads(put["requestBody"])["contacts"]
    assert len(items) == len(known)
    for item in items:
        assert item["Forced"] == "2" and "Kept" not in item  # no override: the CRM's value stays
        assert "title" not in item and "firstName" in item
        assert item["ownerId"] == owner  # override: the owner replaces the CRM's


async def test_an_unreachable_crm_fails_the_export_actions_only(client: httpx.AsyncClient) -> None:
    from tests.servers import unused_url

    connection = (await client.get("/_emulator/connection")).json()
    connection["crmUrl"] = unused_url()
    assert (await client.put("/_emulator/connection", json=connection)).status_code == 200
    ids = [c.id for c in fixtures().contacts if not c.contactCRMId][:4]
    run_id = await start(
        client,
        {"actions": [{"type": "VERIFY_LEAD_EMAIL"}, {"type": "EXPORT_TO_CRM"}], "contactIds": ids},
    )
    await advance(client, END)
    status = await run_status(client, run_id)
    counts = status["statusCounts"]
    hashed_failures = sum(action_fails(run_id, i, 0) for i in ids)
    assert counts["failed"] == len(ids) + hashed_failures
    assert counts["completed"] == len(ids) - hashed_failures
    assert status["overallStatus"] in ("PARTIAL", "FAILED")
    for i in ids:
        assert (await contact(client, i))["contactCRMId"] is None


# ---- properties --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """16 contacts and no campaign running: only the actions change records."""
    out = small_fixtures(tmp_path_factory.mktemp("actions"), contacts=16)
    campaigns = json.loads((out / "campaigns.json").read_text())
    for row in campaigns:
        row["status"] = "DRAFT"
    (out / "campaigns.json").write_text(json.dumps(campaigns))
    return out


STATE = (
    "SELECT id, professionalEmail, mobilePhone, emailVerificationStatus, networkHeadline,"
    " numberOfConnections, updatedAt FROM contacts ORDER BY id"
)
COMPANY_STATE = (
    "SELECT id, openJobPositions, numberOfEmployees, updatedAt FROM companies ORDER BY id"
)


@contextlib.asynccontextmanager
async def serving(directory: Path) -> AsyncIterator[tuple[Starlette, httpx.AsyncClient]]:
    app: Starlette = create_app(make_settings(fixtures=str(directory)))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://emulator.localhost"
        ) as client:
            yield app, client


async def _play(
    directory: Path, kinds: list[str], ids: list[int], splits: list[float]
) -> tuple[Any, ...]:
    async with serving(directory) as (app, client):
        run_id = await start(client, {"actions": [{"type": k} for k in kinds], "contactIds": ids})
        for seconds in splits:
            await advance(client, seconds)
        status = await run_status(client, run_id)
        db = app.state.services.emulator.db
        return (
            status["statusCounts"],
            status["overallStatus"],
            await db.fetchall(STATE),
            await db.fetchall(COMPANY_STATE),
        )


kinds_st = st.lists(st.sampled_from(SIX[:5]), min_size=1, max_size=4)


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    kinds=kinds_st,
    ids=st.lists(st.integers(1, 16), min_size=1, max_size=8, unique=True),
    cuts=st.lists(st.floats(0, 40, allow_nan=False), min_size=1, max_size=6),
)
def test_same_outcome_for_any_split_of_clock_advances(
    small: Path, kinds: list[str], ids: list[int], cuts: list[float]
) -> None:
    total = max(60.0, sum(cuts))  # every record has ended by then
    whole = asyncio.run(_play(small, kinds, ids, [total]))
    pieces = asyncio.run(_play(small, kinds, ids, [*cuts, total - sum(cuts)]))
    assert pieces == whole
    counts, status, _, _ = whole
    assert sum(counts.values()) == len(kinds) * len(ids)
    assert counts["completed"] + counts["failed"] == len(kinds) * len(ids)
    assert status in ("COMPLETED", "PARTIAL", "FAILED")


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    kinds=kinds_st,
    ids=st.lists(st.integers(1, 16), min_size=1, max_size=8, unique=True),
    stop=st.integers(0, 40),
)
def test_counts_sum_and_only_completed_actions_change_records(
    small: Path, kinds: list[str], ids: list[int], stop: int
) -> None:
    """Stopped anywhere: counts sum to the total, and a record whose actions all failed, or
    that has not ended yet, is exactly as before."""

    async def play() -> None:
        async with serving(small) as (app, client):
            db = app.state.services.emulator.db
            before = {r[0]: r for r in await db.fetchall(STATE)}
            run_id = await start(
                client, {"actions": [{"type": k} for k in kinds], "contactIds": ids}
            )
            await advance(client, stop)
            status = await run_status(client, run_id)
            assert sum(status["statusCounts"].values()) == len(kinds) * len(ids)
            ended = max(0, min(len(ids), stop - 15 + 1)) if stop >= 15 else 0
            after = {r[0]: r for r in await db.fetchall(STATE)}
            for position, i in enumerate(ids):
                untouched = position >= ended or all(
                    action_fails(run_id, i, j) for j in range(len(kinds))
                )
                if untouched:
                    assert after[i] == before[i]
            done = status["statusCounts"]["completed"] + status["statusCounts"]["failed"]
            assert done == ended * len(kinds)

    asyncio.run(play())


async def test_the_listener_gates_follow_a_run_that_exports(
    client: httpx.AsyncClient, app: Starlette
) -> None:
    """The brief checks that let most advances skip the actions steps: a run is unfinished
    until each record's effects are applied, and an export is pending until each applied
    record has its outcome."""
    db = app.state.services.emulator.db
    assert not await db.read(any_unfinished) and not await db.read(any_pending)
    run_id = await start(
        client,
        {"actions": [{"type": "VERIFY_LEAD_EMAIL"}, {"type": "EXPORT_TO_CRM"}], "contactIds": [1]},
    )
    assert await db.read(any_unfinished) and not await db.read(any_pending)
    status = await run_status(client, run_id)
    ended = parse_iso(status["createdAt"]) + timedelta(seconds=END)
    await step_runs(db, ended)  # the effects applied, the export not made yet
    assert not await db.read(any_unfinished) and await db.read(any_pending)
    await advance(client, END)  # the listener makes the export
    assert not await db.read(any_unfinished) and not await db.read(any_pending)
