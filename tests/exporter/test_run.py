"""The export sequence against fake CRMs (httpx.MockTransport): outcomes, rule, faults, reruns."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emulator.exporter.report import junit_xml, summary
from emulator.state import Emulator
from tests.exporter.harness import FakeCrm, open_platform, outcomes, run_export, small_fixtures

pytestmark = pytest.mark.anyio


async def test_first_run_creates_then_second_run_creates_nothing_and_logs_nothing_twice(
    platform: Emulator,
) -> None:
    crm = FakeCrm()
    await platform.db.execute("UPDATE campaign_members SET stepIndex = 3")  # past the TASK step
    first = await run_export(platform, crm)
    assert first.exitCode == 0, first.violations
    assert first.phases["companies"].created == 3 and first.phases["contacts"].created == 6
    # Only campaign 1 syncs messages: contacts 1, 3, 5 -> 3 messages each.
    assert first.phases["activities"].created == 9 and len(crm.activities) == 9
    assert first.phases["tasks"].created == 6
    rows = await platform.db.fetchall("SELECT contactCRMId FROM contacts")
    assert all(r[0] for r in rows)
    logged = await platform.db.fetchall(
        "SELECT count(*) FROM messages WHERE crmActivityId IS NOT NULL"
    )
    assert logged == [(9,)]

    second = await run_export(platform, crm)
    assert second.exitCode == 0
    assert second.phases["companies"].created == 0 and second.phases["companies"].updated == 3
    assert second.phases["contacts"].created == 0 and second.phases["contacts"].updated == 6
    assert second.phases["activities"].sent == 0 and len(crm.activities) == 9
    assert second.phases["tasks"].sent == 0 and len(crm.tasks) == 6
    assert len(crm.bodies("POST", "/companies")) == 1  # only the first run created


async def test_sequence_order_and_request_shapes(platform: Emulator) -> None:
    crm = FakeCrm()
    await run_export(platform, crm)
    paths = [f"{m} {p}" for m, p, _ in crm.sent]
    firsts = [
        paths.index(x)
        for x in (
            "GET /health",
            "GET /users",
            "POST /companies/sync",
            "POST /companies",
            "POST /contacts/sync",
            "POST /contacts",
            "POST /associations",
            "POST /activities",
            "PUT /contacts",
        )
    ]
    assert firsts == sorted(firsts)
    company = crm.bodies("POST", "/companies")[0]["companies"][0]
    assert (
        company["externalId"] == "1" and company["domain"] == "co1.com" and "ownerId" not in company
    )
    contact = crm.bodies("POST", "/contacts/sync")[0]["contacts"][0]
    assert contact == {
        "externalId": "1",
        "email": "p1@x.com",
        "firstName": "F1",
        "lastName": "L1",
        "fullName": "F1 L1",
        "phone": "+1 555 0199",
        "company": "Co 2",
    }
    assoc = crm.bodies("POST", "/associations")[0]["associations"]
    assert {"contactCRMId", "companyCRMId"} == set(assoc[0])
    assert len(assoc) == 5  # contact 4 has no company
    activity = crm.activities[0]
    assert activity["type"] == "NETWORK_CONNECTION" and activity["direction"] == "OUTBOUND"
    assert activity["subject"] == "[1/3] [FROM Acme] Ann Lee"
    inbound = crm.activities[1]
    assert inbound["direction"] == "INBOUND" and inbound["subject"].startswith("[Co ")
    assert crm.activities[2]["subject"] == "[3/3] Hi"
    engagement = crm.bodies("PUT", "/contacts")[0]["contacts"]
    assert set(engagement[0]) == {"crmId", "opens__c", "status__c"}
    companies = crm.bodies("PUT", "/companies")[0]["companies"]
    assert set(companies[0]) == {"crmId", "campaigns__c"}


async def test_owner_id_sent_only_when_users_endpoint_exists(platform: Emulator) -> None:
    import msgspec

    from emulator.platform import connection as platform_connection

    conn = msgspec.structs.replace(await platform.db.read(platform_connection.read), ownerId="u1")
    crm = FakeCrm()
    report = await run_export(platform, crm, connection=conn)
    assert report.ownerSelection is True
    assert all(i["ownerId"] == "u1" for i in crm.bodies("POST", "/companies")[0]["companies"])
    assert all(a["ownerId"] == "u1" for a in crm.activities)

    for status in (404, 405, 501):
        other = await open_platform()
        crm = FakeCrm(
            faults=[
                lambda r, s=status: httpx.Response(s) if r.url.path.endswith("/users") else None
            ]
        )
        report = await run_export(other, crm, connection=conn)
        assert report.ownerSelection is False and report.exitCode == 0
        assert "ownerId" not in json.dumps([b for _, _, b in crm.sent])
        await other.close()


def _times(n: int, status: int, path: str, headers: dict[str, str] | None = None) -> Any:
    left = [n]

    def fault(request: httpx.Request) -> httpx.Response | None:
        if request.url.path.endswith(path) and left[0] > 0:
            left[0] -= 1
            return httpx.Response(status, headers=headers, text="busy")
        return None

    return fault


async def test_retries_429_503_and_dropped_connections_then_succeeds(platform: Emulator) -> None:
    dropped = [1]

    def drop(request: httpx.Request) -> None:
        if request.url.path.endswith("/contacts/sync") and dropped[0]:
            dropped[0] -= 1
            raise httpx.RemoteProtocolError("Server disconnected without sending a response.")

    crm = FakeCrm(
        faults=[
            _times(1, 429, "/companies/sync", {"Retry-After": "0.01"}),
            _times(2, 503, "/health"),
            drop,
        ]
    )
    report = await run_export(platform, crm)
    assert report.exitCode == 0, report.failed
    journal = await platform.db.fetchall(
        "SELECT method, path, status, attempt FROM export_journal ORDER BY id LIMIT 8"
    )
    assert journal[:3] == [
        ("GET", "/health", 503, 1),
        ("GET", "/health", 503, 2),
        ("GET", "/health", 200, 3),
    ]
    assert ("POST", "/companies/sync", 429, 1) in journal
    assert ("POST", "/contacts/sync", None, 1) in journal


async def test_no_retry_for_other_4xx_and_batch_fails_with_reason(platform: Emulator) -> None:
    crm = FakeCrm(faults=[_times(1, 400, "/contacts/sync")])
    report = await run_export(platform, crm)
    assert len(crm.bodies("POST", "/contacts/sync")) == 1
    assert report.exitCode == 1 and report.phases["contacts"].failed == 6
    assert all("answered 400" in f.reason for f in report.failed if f.kind == "contacts")
    assert outcomes(report, "contacts") == 6


async def test_malformed_sync_body_fails_that_batch_and_run_goes_on(platform: Emulator) -> None:
    bad = [1]

    def malformed(request: httpx.Request) -> httpx.Response | None:
        if request.url.path.endswith("/companies/sync") and bad[0]:
            bad[0] -= 1
            return httpx.Response(200, text="{not json")
        return None

    crm = FakeCrm(faults=[malformed])
    report = await run_export(platform, crm, connection=None)
    assert report.exitCode == 1
    assert report.phases["companies"].failed == 3 and report.phases["contacts"].created == 6
    violation = next(v for v in report.violations if v.check == "POST /companies/sync")
    exchange = violation.examples[0].exchange
    assert exchange is not None and exchange.response == "{not json"
    xml = junit_xml(report).decode()
    assert 'name="POST /companies/sync"' in xml and "<failure" in xml


async def test_401_stops_the_run_with_every_record_accounted(platform: Emulator) -> None:
    crm = FakeCrm(faults=[_times(99, 401, "/contacts/sync")])
    report = await run_export(platform, crm)
    assert report.exitCode == 2 and report.status == "aborted"
    assert report.message and "API key rejected by CRM" in report.message
    assert outcomes(report, "companies") == 3 and outcomes(report, "contacts") == 6
    assert len(crm.bodies("POST", "/contacts/sync")) == 1  # 401 is not retried


async def test_health_failure_and_unreachable_crm_exit_2(platform: Emulator) -> None:
    crm = FakeCrm(faults=[_times(99, 503, "/health")])
    report = await run_export(platform, crm)
    assert report.exitCode == 2 and "health check failed" in (report.message or "")
    assert len(crm.bodies("GET", "/health")) == 4  # 1 + 3 retries

    def refuse(request: httpx.Request) -> None:
        raise httpx.ConnectError("connection refused")

    report = await run_export(platform, FakeCrm(faults=[refuse]))
    assert report.exitCode == 2 and "unreachable" in (report.message or "")


async def test_sync_back_applies_the_null_rule_to_platform_records(platform: Emulator) -> None:
    def answer(kind: str, items: list[dict[str, Any]]) -> dict[str, Any]:
        if kind == "contacts":
            return {
                "results": [
                    {
                        "externalId": "1",
                        "crmId": "k1",
                        "properties": {"leadScore": 7, "mobilePhone": "+44 1", "phone": None},
                    }
                ]
            }
        return {
            "results": [
                {"externalId": "2", "crmId": "c2", "properties": {"domain": "new.io", "tier": "A"}},
                {"externalId": "3", "crmId": "c3"},
            ]
        }

    before = await platform.db.fetchone("SELECT updatedAt FROM contacts WHERE id = 1")
    platform.clock.advance(60)
    report = await run_export(platform, FakeCrm(sync_answer=answer))
    row = await platform.db.fetchone(
        "SELECT professionalEmail, emailKey, phones, mobilePhone, customFields, contactCRMId, updatedAt"
        " FROM contacts WHERE id = 1"
    )
    assert row is not None and before is not None
    assert row[:4] == (None, None, None, "+44 1")  # email absent + phone null: cleared
    assert json.loads(row[4]) == {"leadScore": 7} and row[5] == "k1" and row[6] > before[0]
    co2 = await platform.db.fetchone(
        "SELECT domain, domainKey, phoneNumber, industry, customFields FROM companies WHERE id = 2"
    )
    assert co2 == ("new.io", "new.io", None, None, '{"tier":"A"}')
    co3 = await platform.db.fetchone(
        "SELECT domain, phoneNumber, companyCRMId FROM companies WHERE id = 3"
    )
    assert co3 == ("co3.com", "+1 555 0100", "c3")  # no properties: only crmId changes
    cleared = {(c.kind, c.id, c.field) for c in report.cleared}
    assert ("contacts", 1, "email") in cleared and ("companies", 2, "phone") in cleared
    assert any("cleared core field `email`" in w.message for w in report.warnings)
    # The custom `tier` is syncable from now on: absent next time -> cleared.
    report = await run_export(
        platform,
        FakeCrm(
            sync_answer=lambda k, i: {
                "results": [{"externalId": "2", "crmId": "c2", "properties": {"domain": "new.io"}}]
                if k == "companies"
                else []
            }
        ),
    )
    co2 = await platform.db.fetchone("SELECT customFields FROM companies WHERE id = 2")
    assert co2 == ("{}",)
    assert ("companies", 2, "tier") in {(c.kind, c.id, c.field) for c in report.cleared}


fates = st.sampled_from(
    ["match", "match_props", "error", "omit", "foreign", "update_fail", "no_crm_id"]
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(fates, min_size=6, max_size=6), st.lists(fates, min_size=3, max_size=3))
async def test_every_record_ends_in_one_outcome_and_errors_are_never_written(
    contact_fates: list[str], company_fates: list[str]
) -> None:
    fate_of = {"contacts": contact_fates, "companies": company_fates}

    def answer(kind: str, items: list[dict[str, Any]]) -> dict[str, Any]:
        results: list[Any] = []
        errors: list[Any] = []
        for item in items:
            ext = item["externalId"]
            fate = fate_of[kind][int(ext) - 1]
            if fate in ("match", "update_fail"):
                results.append({"externalId": ext, "crmId": f"{kind}{ext}"})
            elif fate == "match_props":
                results.append(
                    {"externalId": ext, "crmId": f"{kind}{ext}", "properties": {"tags": ["x"]}}
                )
            elif fate == "error":
                errors.append({"externalId": ext, "error": "locked"})
            elif fate == "foreign":
                results.append({"externalId": "999", "crmId": "zz"})
            elif fate == "no_crm_id":
                results.append({"externalId": ext})
        return {"results": results, "errors": errors}

    def fail_updates(request: httpx.Request) -> httpx.Response | None:
        if request.method != "PUT":
            return None
        kind = request.url.path.rsplit("/", 1)[-1]
        items = json.loads(request.content)[kind]
        return httpx.Response(
            200,
            json={
                "results": [
                    {
                        "crmId": i["crmId"],
                        "success": fate_of[kind][int(i["crmId"].removeprefix(kind)) - 1]
                        != "update_fail",
                        "error": "nope",
                    }
                    if i["crmId"].startswith(kind)
                    else {"crmId": i["crmId"], "success": True}
                    for i in items
                ]
            },
        )

    emulator = await open_platform()
    try:
        crm = FakeCrm(sync_answer=answer, faults=[fail_updates])
        report = await run_export(emulator, crm)
        for kind, total in (("companies", 3), ("contacts", 6)):
            assert outcomes(report, kind) == total
            failed_ids = [f.id for f in report.failed if f.kind == kind]
            assert len(failed_ids) == len(set(failed_ids))
            written = {i.get("externalId") for b in crm.bodies("POST", f"/{kind}") for i in b[kind]}
            written |= {i.get("externalId") for b in crm.bodies("PUT", f"/{kind}") for i in b[kind]}
            for i, fate in enumerate(fate_of[kind], start=1):
                if fate in ("error", "no_crm_id"):
                    assert str(i) not in written and str(i) in failed_ids
                if fate == "update_fail":
                    assert str(i) in failed_ids
        broken = any(f in ("foreign", "no_crm_id") for fs in fate_of.values() for f in fs)
        assert (report.exitCode == 1) == (
            broken
            or any(
                f in ("error", "update_fail", "no_crm_id") for fs in fate_of.values() for f in fs
            )
        )
    finally:
        await emulator.close()


async def test_task_completion_uses_single_patch_or_batch(platform: Emulator) -> None:
    crm = FakeCrm()
    await platform.db.execute("UPDATE campaign_members SET stepIndex = 3")
    await run_export(platform, crm)
    await platform.db.execute("UPDATE platform_tasks SET completed = 1 WHERE id = 1")
    report = await run_export(platform, crm)
    assert len([1 for m, p, _ in crm.sent if m == "PATCH" and p.startswith("/tasks/t")]) == 1
    assert report.phases["tasks"].updated == 1
    await platform.db.execute("UPDATE platform_tasks SET completed = 1")
    report = await run_export(platform, crm)
    assert crm.bodies("PATCH", "/tasks/batch")[0]["ids"] and report.phases["tasks"].updated == 5
    assert all(t["completed"] for t in crm.tasks.values())
    report = await run_export(platform, crm)
    assert report.phases["tasks"].requests == 0


async def test_tolerated_deviations_are_warnings_not_violations(platform: Emulator) -> None:
    def created_200(request: httpx.Request) -> httpx.Response | None:
        if request.method == "POST" and request.url.path.endswith("/companies"):
            items = json.loads(request.content)["companies"]
            return httpx.Response(
                200,
                json={
                    "results": [
                        {
                            "externalId": i["externalId"],
                            "crmId": f"x{i['externalId']}",
                            "name": i["name"],
                        }
                        for i in items
                    ]
                },
            )
        return None

    report = await run_export(platform, FakeCrm(faults=[created_200]))
    assert report.exitCode == 0
    assert any("201" in w.message for w in report.warnings)


async def test_journal_redacts_the_api_key_and_is_capped() -> None:
    fixtures = small_fixtures()
    emulator = await open_platform(fixtures)
    try:

        def echo_key(request: httpx.Request) -> httpx.Response | None:
            if request.url.path.endswith("/health"):
                return httpx.Response(
                    200, json={"status": "ok", "seen": request.headers["X-API-Key"]}
                )
            return None

        await run_export(emulator, FakeCrm(faults=[echo_key]), journal_limit=10)
        rows = await emulator.db.fetchall("SELECT responseBody FROM export_journal")
        assert len(rows) == 10
        everything = await emulator.db.fetchall(
            "SELECT group_concat(coalesce(requestBody,'') || coalesce(responseBody,'')) FROM export_journal"
        )
        assert "secret-key" not in everything[0][0]
    finally:
        await emulator.close()


async def test_buffered_journal_rows_are_stored_as_they_pile_up(
    platform: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A phase without write hops of its own (associations, engagement) stores the journal
    whenever its bodies pass JOURNAL_BUFFER, so the buffer never holds a whole phase."""
    from emulator.exporter import context, journal

    monkeypatch.setattr(context, "JOURNAL_BUFFER", 1)
    most = [0]
    add = journal.Journal.add

    def counting(self: journal.Journal, attempt: Any) -> None:
        add(self, attempt)
        most[0] = max(most[0], len(self._rows))

    monkeypatch.setattr(journal.Journal, "add", counting)
    report = await run_export(platform, FakeCrm())
    assert report.exitCode == 0, report.failed
    requests = sum(stats.requests for stats in report.phases.values())
    stored = await platform.db.fetchall("SELECT count(*) FROM export_journal")
    assert stored[0][0] == requests and 0 < most[0] <= 4  # at most the calls in flight


@pytest.mark.parametrize(
    ("answer", "created", "already", "uncounted", "failed", "violations"),
    [
        ({"success": True, "created": 1}, 1, 4, 0, 0, 0),  # the other links existed already
        ({"success": True, "created": 0}, 0, 5, 0, 0, 0),  # a re-export to an upserting CRM
        ({"success": True}, 0, 0, 5, 0, 0),  # linked: how many were new, the CRM did not say
        (
            {
                "success": True,
                "errors": [{"contactCRMId": "x", "companyCRMId": "y", "error": "no"}],
            },
            0,
            0,
            4,
            1,
            0,
        ),
        ({"success": False}, 0, 0, 0, 5, 0),
        ({"success": True, "created": "all"}, 0, 0, 0, 5, 1),
    ],
)
async def test_associations_count_what_the_crm_answered(
    platform: Emulator,
    answer: dict[str, Any],
    created: int,
    already: int,
    uncounted: int,
    failed: int,
    violations: int,
) -> None:
    def links(request: httpx.Request) -> httpx.Response | None:
        if request.url.path.endswith("/associations"):
            return httpx.Response(200, json=answer)
        return None

    report = await run_export(platform, FakeCrm(faults=[links]))
    stats = report.phases["associations"]
    assert stats.sent == 5 and stats.created == created  # contacts 1, 2, 3, 5, 6 have a company
    assert stats.alreadyLinked == already and stats.linkedUncounted == uncounted
    if already:
        assert f"already linked {already}" in summary(report)
    assert stats.failed == failed and report.checks["POST /associations"].violations == violations


async def test_progress_is_reported_for_every_phase_up_to_its_total(platform: Emulator) -> None:
    """Each phase says where it is as it goes (not only the record phases): it starts at 0,
    never goes back, and a phase with a known total ends there (the fixtures' 9 messages)."""
    from emulator.exporter.report import Progress

    await platform.db.execute("UPDATE campaign_members SET stepIndex = 3")  # past the TASK step
    seen: list[Progress] = []
    report = await run_export(platform, FakeCrm(), on_progress=seen.append)
    assert report.exitCode == 0, report.violations
    phases = list(dict.fromkeys(p.phase for p in seen))
    assert phases == [
        "health",
        "users",
        "companies",
        "contacts",
        "associations",
        "activities",
        "tasks",
        "engagement",
    ]
    for phase in phases:
        mine = [p for p in seen if p.phase == phase]
        assert mine[0].done == 0
        assert [p.done for p in mine] == sorted(p.done for p in mine)
        assert all(p.total == 0 or p.done <= p.total for p in mine), mine
    last = {p.phase: p for p in seen}
    assert (last["activities"].done, last["activities"].total) == (9, 9)
    assert (last["tasks"].total, last["contacts"].done) == (6, 6)
    assert last["associations"].done == last["associations"].total > 0
    assert last["engagement"].done == last["engagement"].total > 0
