"""scripts/generate_fixtures.py: deterministic, loadable, and covering every kind of record."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any, get_args

import pytest

from emulator.fixtures import models as m
from emulator.fixtures.loader import DEFAULT_FIXTURES, FILES, load_fixture_dir

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "generate_fixtures.py"
CANONICAL = re.compile(r"2026-(0\d|10)-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
CONTACTS, COMPANIES = 300, 40


def generate(out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(out), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        check=False,
    )


def files_of(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("gen") / "a"
    run = generate(out, "--contacts", str(CONTACTS), "--companies", str(COMPANIES), "--seed", "7")
    assert run.returncode == 0, run.stderr
    assert f"{CONTACTS} contacts, {COMPANIES} companies" in run.stdout
    return out


@pytest.fixture(scope="module")
def fx(generated: Path) -> m.FixtureSet:
    return load_fixture_dir(generated)


def test_writes_every_loader_file(generated: Path) -> None:
    assert sorted(p.name for p in generated.iterdir()) == sorted(FILES)


def test_same_arguments_give_identical_files(generated: Path, tmp_path: Path) -> None:
    run = generate(
        tmp_path, "--contacts", str(CONTACTS), "--companies", str(COMPANIES), "--seed", "7"
    )
    assert run.returncode == 0, run.stderr
    assert files_of(tmp_path) == files_of(generated)


def test_another_seed_gives_other_data(generated: Path, tmp_path: Path) -> None:
    run = generate(
        tmp_path, "--contacts", str(CONTACTS), "--companies", str(COMPANIES), "--seed", "8"
    )
    assert run.returncode == 0, run.stderr
    assert files_of(tmp_path)["contacts.json"] != files_of(generated)["contacts.json"]


def test_committed_default_set_matches_the_generator(tmp_path: Path) -> None:
    """fixtures/default is generated, never hand-edited: regenerating it changes nothing."""
    run = generate(
        tmp_path, "--contacts", "200", "--companies", "50", "--campaigns", "8", "--seed", "1"
    )
    assert run.returncode == 0, run.stderr
    assert files_of(tmp_path) == files_of(DEFAULT_FIXTURES)


def test_compact_format_has_no_indentation(tmp_path: Path) -> None:
    run = generate(tmp_path, "--contacts", "5", "--companies", "2", "--format", "compact")
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "contacts.json").read_bytes().count(b"\n") == 1
    load_fixture_dir(tmp_path)


def test_tiny_and_empty_sets_load(tmp_path: Path) -> None:
    for n, (contacts, companies) in enumerate([(0, 0), (1, 0), (3, 1)]):
        out = tmp_path / str(n)
        run = generate(
            out, "--contacts", str(contacts), "--companies", str(companies), "--campaigns", "1"
        )
        assert run.returncode == 0, run.stderr
        assert len(load_fixture_dir(out).contacts) == contacts


def test_bad_counts_are_refused(tmp_path: Path) -> None:
    run = generate(tmp_path, "--contacts", "10", "--campaigns", "0")
    assert run.returncode == 2 and "--campaigns" in run.stderr


def test_counts(fx: m.FixtureSet) -> None:
    assert (len(fx.contacts), len(fx.companies), len(fx.campaigns)) == (CONTACTS, COMPANIES, 8)


def test_demo_keys(fx: m.FixtureSet) -> None:
    scopes = {k.key: set(k.scopes) for k in fx.apiKeys}
    every = set(get_args(m.Scope))
    assert scopes["demo-all"] == {"ALL"}
    assert scopes["demo-readonly"] == {s for s in every if s.endswith("_READ")}
    assert scopes["demo-no-contacts-read"] == every - {"ALL", "CONTACTS_READ"}


def test_campaigns_cover_statuses_steps_and_options(fx: m.FixtureSet) -> None:
    assert {c.status for c in fx.campaigns} == set(get_args(m.CampaignStatus))
    steps = [s for c in fx.campaigns for s in c.sequence]
    assert {s.type for s in steps} == set(get_args(m.StepType))
    assert {c.messageSync for c in fx.campaigns} == {True, False}
    assert any(c.crmOwnerId for c in fx.campaigns) and not all(c.crmOwnerId for c in fx.campaigns)
    crm_users = {u.id for u in fx.crm.users}
    assert {c.crmOwnerId for c in fx.campaigns if c.crmOwnerId} <= crm_users
    for c in fx.campaigns:
        assert c.sequence[0].delaySeconds == 0
        assert all(3600 <= s.delaySeconds <= 7 * 86400 for s in c.sequence[1:])
    for s in steps:
        assert (s.subject is not None) == (s.type in ("EMAIL", "INMAIL"))
        assert (s.taskSubject is not None) == (s.type == "TASK")
        if s.type in ("EMAIL", "INMAIL", "NETWORK_MESSAGE", "CONNECTION_REQUEST"):
            assert s.content


def test_timestamps_are_canonical_2026_before_november(fx: m.FixtureSet) -> None:
    created: list[Any] = [*fx.identities, *fx.campaigns, *fx.lists, *fx.actionsRuns]
    updated: list[Any] = [*fx.companies, *fx.contacts, *fx.savedViews, *fx.webhooks]
    updated += [msg for c in fx.conversations for msg in c.messages]
    stamps = [r.createdAt for r in created + updated] + [r.updatedAt for r in updated]
    assert stamps and all(CANONICAL.fullmatch(s) for s in stamps)
    assert all(r.createdAt <= r.updatedAt for r in updated)


def test_companies_look_real(fx: m.FixtureSet) -> None:
    domains = [c.domain for c in fx.companies]
    assert len(set(domains)) == len(domains)
    assert len({c.name.lower() for c in fx.companies}) == len(fx.companies)
    for c in fx.companies:
        assert c.website == f"https://www.{c.domain}"
        assert c.companyNetworkUrl and c.companyNetworkUrl.startswith(
            "https://www.network.com/company/"
        )
        assert c.industry and c.country and c.city and c.rangeOfEmployees
        low, high = (int(x) for x in c.rangeOfEmployees.split("-"))
        assert c.numberOfEmployees is not None and low <= c.numberOfEmployees <= high


def test_contacts_look_real(fx: m.FixtureSet) -> None:
    companies = {c.id: c for c in fx.companies}
    emails = [c.professionalEmail for c in fx.contacts if c.professionalEmail]
    urls = [c.networkProfileUrl for c in fx.contacts]
    assert len(set(emails)) == len(emails) and len(set(urls)) == len(urls)
    assert any(c.companyId is None for c in fx.contacts)
    assert any(c.professionalEmail is None for c in fx.contacts)
    assert any(c.firstName and not c.firstName.isascii() for c in fx.contacts)
    for c in fx.contacts:
        assert c.networkProfileUrl and re.fullmatch(
            r"https://www\.network\.com/in/[a-z0-9]+-[a-z0-9]+-\d+", c.networkProfileUrl
        )
        if c.professionalEmail:
            assert c.companyId is not None
            local, domain = c.professionalEmail.split("@")
            assert domain == companies[c.companyId].domain
            assert re.fullmatch(r"[a-z]+\.[a-z]+\d*", local)


def test_most_contacts_are_in_campaigns(fx: m.FixtureSet) -> None:
    members = sum(1 for c in fx.contacts if c.campaignIds)
    assert members >= 0.75 * len(fx.contacts)
    assert all(len(set(c.campaignIds)) == len(c.campaignIds) for c in fx.contacts)


def test_lists_and_views(fx: m.FixtureSet) -> None:
    assert {li.type for li in fx.lists} == {"CONTACTS", "COMPANIES"}
    assert any(li.members for li in fx.lists if li.type == "CONTACTS")
    assert any(li.members for li in fx.lists if li.type == "COMPANIES")
    assert {v.type for v in fx.savedViews} == {"LEAD", "COMPANY"}
    for v in fx.savedViews:
        fields = m.Contact.__struct_fields__ if v.type == "LEAD" else m.Company.__struct_fields__
        assert v.view and set(v.view) <= set(fields)


def test_conversations_cover_message_kinds(fx: m.FixtureSet) -> None:
    members = {(c.id, cid) for c in fx.contacts for cid in c.campaignIds}
    campaigns = {c.id: c for c in fx.campaigns}
    messages = [msg for conv in fx.conversations for msg in conv.messages]
    assert {msg.type for msg in messages} == set(get_args(m.MessageType))
    assert {msg.isContactSender for msg in messages} == {True, False}
    assert any(msg.viewCount for msg in messages if msg.type == "EMAIL")
    assert any(msg.clickCount for msg in messages if msg.type == "EMAIL")
    assert all(msg.clickCount <= msg.viewCount for msg in messages)
    for conv in fx.conversations:
        campaign = campaigns[conv.campaignId]
        assert (conv.contactId, conv.campaignId) in members
        assert campaign.status in ("ACTIVE", "COMPLETED")
        assert conv.identityId == campaign.senderIdentityId
        stamps = [msg.createdAt for msg in conv.messages]
        assert stamps == sorted(stamps)


def test_webhooks_vary(fx: m.FixtureSet) -> None:
    hooks = fx.webhooks
    assert any(h.secret for h in hooks) and any(not h.secret for h in hooks)
    assert {h.enabled for h in hooks} == {True, False}
    assert any(h.campaignIds for h in hooks) and any(h.customFields for h in hooks)
    assert all(h.url.startswith("http://127.0.0.1:9/") for h in hooks)


def test_actions_runs_counts_are_consistent(fx: m.FixtureSet) -> None:
    assert len({r.overallStatus for r in fx.actionsRuns}) >= 5
    for r in fx.actionsRuns:
        counts = r.statusCounts
        total = (
            counts.pending
            + counts.processing
            + counts.completed
            + counts.failed
            + counts.queued
            + counts.cancelled
        )
        assert total == len(r.actions) * len(r.contactIds)
        if r.overallStatus == "COMPLETED":
            assert counts.completed == total


def test_crm_seed_holds_the_exported_records(fx: m.FixtureSet) -> None:
    contact_ids = {c.contactCRMId: c for c in fx.contacts if c.contactCRMId}
    company_ids = {c.companyCRMId: c for c in fx.companies if c.companyCRMId}
    assert contact_ids and company_ids and len(contact_ids) < len(fx.contacts)
    assert {r["crmId"] for r in fx.crm.contacts} == set(contact_ids)
    assert {r["crmId"] for r in fx.crm.companies} == set(company_ids)
    for record in fx.crm.contacts:
        contact = contact_ids[record["crmId"]]
        assert record["externalId"] == str(contact.id)
        assert record.get("email") == contact.professionalEmail
        assert record["networkUrl"] == contact.networkProfileUrl
    for record in fx.crm.companies:
        company = company_ids[record["crmId"]]
        assert (record["externalId"], record["domain"]) == (str(company.id), company.domain)
    assert 3 <= len(fx.crm.users) <= 5
    assert fx.crm.settings == m.CrmSettings()


def test_connection(fx: m.FixtureSet) -> None:
    conn = fx.connection
    assert conn is not None
    assert (conn.crmUrl, conn.apiKey, conn.apiKeyHeader) == ("/crm", "crm-demo-key", "X-API-Key")
    assert conn.contactLinkTemplate and "{{crmId}}" in conn.contactLinkTemplate
    assert conn.companyLinkTemplate and "{{crmId}}" in conn.companyLinkTemplate
    contacts, companies = conn.engagementFields.contacts, conn.engagementFields.companies
    assert {
        "campaignEngagementStatus",
        "campaignSequenceStatus",
        "campaignOpens",
        "campaignClicks",
        "campaignReplyAnalysis",
        "campaignSequenceDetails",
    } <= set(contacts)
    assert set(contacts) - set(companies) == {
        "campaignSequenceDetails",
        "campaignOpenAnalysis",
        "campaignClickAnalysis",
        "campaignReplyAnalysis",
    }
    assert len(set(contacts.values())) == len(contacts)
    assert all(v.startswith("platform_") for v in contacts.values())
