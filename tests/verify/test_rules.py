"""Each rule broken alone by a CRM written to the contract by somebody else: verify fails exactly that check."""

from __future__ import annotations

import pytest

from emulator.verify.catalogue import BODY_ENDPOINTS, CHECKS, ENDPOINTS, slug
from tests.verify.conftest import failing, outcomes, verify_strange

pytestmark = pytest.mark.anyio

BREAKS = [
    ("health-no-status", "get-health/status", "GET /health"),
    ("users-500", "get-users/list", "GET /users"),
    ("accept-missing-key:POST /contacts", "post-contacts/auth-missing-key", "POST /contacts"),
    (
        "accept-missing-key:PATCH /tasks/batch",
        "patch-tasks-batch/auth-missing-key",
        "PATCH /tasks/batch",
    ),
    ("accept-wrong-key:GET /users", "get-users/auth-wrong-key", "GET /users"),
    ("accept-wrong-key:GET /tasks/:taskId", "get-task/auth-wrong-key", "GET /tasks/:taskId"),
    ("create-number-crmid", "post-companies/create", "POST /companies"),
    ("batch-limit-50", "post-companies/batch-100", "POST /companies"),
    ("sync-other-crmid", "post-companies-sync/finds-created", "POST /companies/sync"),
    ("sync-extra-result", "post-companies-sync/omits-unmatched", "POST /companies/sync"),
    ("sync-404-when-none", "post-companies-sync/empty-results", "POST /companies/sync"),
    ("sync-errors-bad-shape", "post-companies-sync/errors-shape", "POST /companies/sync"),
    ("put-refuses-documented-field", "put-companies/update", "PUT /companies"),
    ("put-refuses-engagement", "put-companies/any-field-names", "PUT /companies"),
    ("put-fails-batch-on-unknown", "put-companies/unknown-crm-id", "PUT /companies"),
    ("put-replaces-record", "put-companies/keeps-fields", "PUT /companies"),
    ("associations-500", "post-associations/link", "POST /associations"),
    ("activity-refuses:EMAIL:INBOUND", "post-activities/email-inbound", "POST /activities"),
    (
        "activity-refuses:NETWORK_INMAIL:OUTBOUND",
        "post-activities/network-inmail-outbound",
        "POST /activities",
    ),
    ("task-created-without-completed", "post-tasks/create", "POST /tasks"),
    ("task-omits-null-completed-at", "get-task/read", "GET /tasks/:taskId"),
    ("task-unknown-500", "get-task/unknown-id", "GET /tasks/:taskId"),
    ("task-patch-ignores-completed", "patch-task/complete", "PATCH /tasks/:taskId"),
    ("tasks-batch-first-only", "post-tasks-batch/known-ids", "POST /tasks/batch"),
    ("tasks-batch-404-unknown", "post-tasks-batch/unknown-ids", "POST /tasks/batch"),
    ("tasks-route-swallows-batch", "patch-tasks-batch/complete", "PATCH /tasks/batch"),
    # The spec's status codes (the vendor's example CRM breaks the first four)
    ("tasks-batch-all-without-ids", "post-tasks-batch/missing-field", "POST /tasks/batch"),
    ("task-patch-unknown-500", "patch-task/unknown-id", "PATCH /tasks/:taskId"),
    *[
        (f"{switch}:{endpoint}", f"{slug(endpoint)}/{check}", endpoint)
        for endpoint in BODY_ENDPOINTS
        for switch, check in (
            ("missing-field-500", "missing-field"),
            ("wrong-type-accepted", "wrong-type"),
        )
    ],
]
# Breaks that hit both record kinds; the contacts twin of each is checked too.
BOTH_KINDS = {
    "sync-other-crmid",
    "sync-extra-result",
    "sync-404-when-none",
    "sync-errors-bad-shape",
    "put-fails-batch-on-unknown",
    "put-replaces-record",
    "put-refuses-engagement",
    "batch-limit-50",
    "put-refuses-documented-field",
    "create-number-crmid",
}


def twin(check: str, endpoint: str) -> tuple[str, str]:
    return check.replace("companies", "contacts"), endpoint.replace("companies", "contacts")


async def test_a_crm_keeping_every_rule_passes_every_check() -> None:
    report = await verify_strange()
    assert report.status == "pass" and report.exitCode == 0, failing(report)
    assert report.summary == {"pass": len(CHECKS), "fail": 0, "warn": 0, "skip": 0}


@pytest.mark.parametrize(("switch", "check", "endpoint"), BREAKS, ids=[b[0] for b in BREAKS])
async def test_breaking_one_rule_fails_exactly_its_check(
    switch: str, check: str, endpoint: str
) -> None:
    report = await verify_strange({switch})
    expected = {(check, endpoint)}
    if switch in BOTH_KINDS:
        expected.add(twin(check, endpoint))
    assert report.exitCode == 1 and report.status == "fail"
    assert failing(report) == expected
    result = next(c for c in report.checks if c.id == check)
    assert endpoint in ENDPOINTS and result.exchanges and result.message


async def test_whole_record_replacement_names_the_lost_fields() -> None:
    report = await verify_strange({"put-replaces-record"})
    keeps = next(c for c in report.checks if c.id == "put-companies/keeps-fields")
    assert "fields lost" in keeps.message and "domain" in keeps.message
    assert [x.method for x in keeps.exchanges] == ["POST", "PUT", "PUT", "POST"]


async def test_open_health_and_200_on_company_create_are_warnings_not_failures() -> None:
    report = await verify_strange({"accept-missing-key:GET /health", "create-200"})
    assert report.exitCode == 0 and report.status == "pass"
    seen = outcomes(report)
    assert seen["get-health/auth-missing-key"] == "warn"
    assert seen["post-companies/create"] == "warn" and seen["post-companies/batch-100"] == "warn"
    assert seen["post-contacts/create"] == "pass"  # 201 is documented for companies only


async def test_a_failed_create_skips_what_needs_its_records() -> None:
    report = await verify_strange({"create-number-crmid"})
    seen = outcomes(report)
    assert seen["post-companies-sync/finds-created"] == "skip"
    assert seen["put-companies/keeps-fields"] == "skip"
    assert seen["post-associations/link"] == "skip"
    assert seen["post-activities/email-outbound"] == "pass"  # activities need no record


@pytest.mark.parametrize(
    ("switch", "check"),
    [
        ("task-complete-resets-completed-at", "patch-task/complete-again"),
        ("activity-accepts-any-type", "post-activities/unknown-type"),
        ("invalid-body-422:POST /tasks", "post-tasks/missing-field"),
    ],
)
async def test_where_the_spec_is_silent_a_deviation_is_a_warning(switch: str, check: str) -> None:
    report = await verify_strange({switch})
    assert report.exitCode == 0 and report.status == "pass", failing(report)
    warned = {c.id for c in report.checks if c.outcome == "warn"}
    expected = {check, "post-tasks/wrong-type"} if "422" in switch else {check}
    assert warned == expected
    result = next(c for c in report.checks if c.id == check)
    assert result.exchanges and result.rule
