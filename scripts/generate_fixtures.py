"""Generate a deterministic fixture directory (same arguments -> byte-identical files).

Usage: generate_fixtures.py --contacts N --companies M [--campaigns K] --seed S --out DIR
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import unicodedata
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast, get_args

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fixture_words as w

from emulator.fixtures import models as m
from emulator.platform.sequence_text import task_subject
from emulator.simulation.actions.types import ACTION_TYPES as DOCUMENTED_ACTION_TYPES
from emulator.wire import now_iso

START = datetime(2026, 1, 1, tzinfo=UTC)
# The virtual clock starts after every generated timestamp (fixed: runs are reproducible).
CLOCK_START = "2026-11-02T09:00:00.000Z"
SPAN = (datetime(2026, 10, 31, 23, 0, tzinfo=UTC) - START).total_seconds()
HOUR, DAY = 3600, 86400
DELAYS = [4 * HOUR, 12 * HOUR, DAY, 2 * DAY, 3 * DAY, 5 * DAY, 7 * DAY]
MESSAGE_STEPS: tuple[str, ...] = get_args(m.MessageType)
ALL_SCOPES: tuple[m.Scope, ...] = get_args(m.Scope)
ACTION_TYPES = list(DOCUMENTED_ACTION_TYPES)  # the six of the actions guide
PLATFORM_DOMAIN = "outreach-demo.com"
HOOK_URL = "http://127.0.0.1:9/hooks/"
CRM_USERS = [
    ("crm-user-1", "Morgan Reyes"),
    ("crm-user-2", "Hana Kobayashi"),
    ("crm-user-3", "Lukas Brandt"),
    ("crm-user-4", "Adaeze Nwosu"),
]
# internal engagement field -> the CRM property it is written to (contacts; companies omit
# CONTACT_ONLY, as interfaces.md "Engagement fields" says)
ENGAGEMENT = {
    "campaignEngagementStatus": "platform_engagement_status",
    "campaignSequenceStatus": "platform_sequence_status",
    "campaignSequenceDetails": "platform_sequence_details",
    "campaignOpens": "platform_opens",
    "campaignClicks": "platform_clicks",
    "campaignOpenAnalysis": "platform_open_analysis",
    "campaignClickAnalysis": "platform_click_analysis",
    "campaignReplyAnalysis": "platform_reply_analysis",
    "activities": "platform_activities",
    "senders": "platform_senders",
    "campaigns": "platform_campaigns",
}
CONTACT_ONLY = {
    "campaignSequenceDetails",
    "campaignOpenAnalysis",
    "campaignClickAnalysis",
    "campaignReplyAnalysis",
}
# The full sequence of the first campaign: every step kind, so every message type appears.
FULL_SEQUENCE = [
    "PROFILE_VISIT",
    "CONNECTION_REQUEST",
    "NETWORK_MESSAGE",
    "POST_LIKE",
    "EMAIL",
    "TASK",
    "INMAIL",
    "EMAIL",
]
STATUS_CYCLE = ["ACTIVE", "COMPLETED", "PENDING", "DRAFT", "ACTIVE", "ACTIVE", "COMPLETED", "DRAFT"]


# letters that NFKD does not split into a base letter and an accent
_FOLD = str.maketrans({"ø": "o", "Ø": "O", "æ": "ae", "Æ": "AE", "ß": "ss", "ł": "l", "Ł": "L"})


def slug(text: str) -> str:
    """ASCII, lower case, letters and digits only ("Søren" -> "soren", "José" -> "jose")."""
    ascii_text = unicodedata.normalize("NFKD", text.translate(_FOLD))
    ascii_text = ascii_text.encode("ascii", "ignore").decode()
    return "".join(ch for ch in ascii_text.lower() if ch.isalnum())


# "YYYY-MM-DDT" of each day from START: formatting the time of day by hand is 4x faster than
# a datetime per timestamp, which matters at 300,000 timestamps.
_DAYS = [now_iso(START + timedelta(days=d))[:11] for d in range(int(SPAN // DAY) + 2)]


def iso(offset: float) -> str:
    """The stored timestamp form (as `now_iso`) of START + offset seconds."""
    ms = int(offset * 1000)
    day, ms = divmod(ms, 86_400_000)
    hour, ms = divmod(ms, 3_600_000)
    minute, ms = divmod(ms, 60_000)
    second, ms = divmod(ms, 1000)
    return f"{_DAYS[day]}{hour:02d}:{minute:02d}:{second:02d}.{ms:03d}Z"


class Generator:
    """Builds every fixture record from one seeded random source."""

    def __init__(self, contacts: int, companies: int, campaigns: int, seed: int) -> None:
        self.rng = random.Random(seed)
        self.n_contacts, self.n_companies, self.n_campaigns = contacts, companies, campaigns
        self.first = [(n, slug(n)) for n in w.FIRST_NAMES]
        self.last = [(n, slug(n)) for n in w.LAST_NAMES]
        self.prefixes = {place[0]: place[2] for place in w.PLACES}
        # creation offsets in seconds: contacts by id, campaigns by -id
        self.created: dict[int, float] = {}

    def remember(self, key: int, offset: float) -> float:
        self.created[key] = offset
        return offset

    def phone(self, prefix: str) -> str:
        r = self.rng.randint
        return f"{prefix} {r(100, 999)} {r(100, 999)} {r(1000, 9999)}"

    # --- platform accounts -------------------------------------------------------------
    def api_keys(self) -> list[m.ApiKey]:
        reads = [s for s in ALL_SCOPES if s.endswith("_READ")]
        no_contacts = [s for s in ALL_SCOPES if s not in ("ALL", "CONTACTS_READ")]
        return [
            m.ApiKey(key="demo-all", name="Demo: every scope", scopes=["ALL"]),
            m.ApiKey(key="demo-readonly", name="Demo: read only", scopes=reads),
            m.ApiKey(
                key="demo-no-contacts-read", name="Demo: no CONTACTS_READ", scopes=no_contacts
            ),
        ]

    def users(self) -> list[m.User]:
        names = ["Alex Morgan", "Priya Raman", "Jonas Weber", "Camille Laurent", "Diego Álvarez"]
        return [
            m.User(id=i, name=n, email=f"{slug(n.split()[0])}@{PLATFORM_DOMAIN}")
            for i, n in enumerate(names, 1)
        ]

    def identities(self) -> list[m.Identity]:
        people = [
            ("Alex", "Morgan", "Account Executive", "America/New_York"),
            ("Priya", "Raman", "Sales Development Representative", "Europe/London"),
            ("Jonas", "Weber", "Head of Partnerships", "Europe/Berlin"),
            ("Inès", "Moreau", "Founder", "Europe/Paris"),
        ]
        return [
            m.Identity(
                id=i,
                name=f"{f} {last}",
                firstName=f,
                lastName=last,
                jobTitle=title,
                email=f"{slug(f)}.{slug(last)}@{PLATFORM_DOMAIN}",
                networkUrl=f"https://www.network.com/in/{slug(f)}-{slug(last)}-sender",
                timezone=tz,
                companyName="Outreach Demo Inc.",
                createdAt=iso(i * HOUR),
            )
            for i, (f, last, title, tz) in enumerate(people, 1)
        ]

    # --- campaigns ---------------------------------------------------------------------
    def step(self, kind: str, first: bool) -> m.SequenceStep:
        rng = self.rng
        delay = 0 if first else rng.choice(DELAYS)
        text = (
            rng.choice(w.MESSAGE_TEXTS)
            .replace("{first}", "{{firstName}}")
            .replace("{company}", "{{companyName}}")
        )
        if kind == "EMAIL":
            subject = (
                rng.choice(w.EMAIL_SUBJECTS)
                .replace("{first}", "{{firstName}}")
                .replace("{company}", "{{companyName}}")
            )
            return m.SequenceStep(type="EMAIL", delaySeconds=delay, subject=subject, content=text)
        if kind == "INMAIL":
            return m.SequenceStep(
                type="INMAIL",
                delaySeconds=delay,
                subject="An idea for {{companyName}}",
                content=text,
            )
        if kind in ("CONNECTION_REQUEST", "NETWORK_MESSAGE"):
            return m.SequenceStep(type=kind, delaySeconds=delay, content=text)  # type: ignore[arg-type]
        if kind == "TASK":
            subject = (
                rng.choice(w.TASK_SUBJECTS)
                .replace("{first}", "{{firstName}}")
                .replace("{company}", "{{companyName}}")
            )
            return m.SequenceStep(
                type="TASK",
                delaySeconds=delay,
                taskSubject=subject,
                taskType=rng.choice(["call", "email", "todo"]),
            )
        return m.SequenceStep(type=kind, delaySeconds=delay)  # type: ignore[arg-type]

    def campaigns(self) -> list[m.Campaign]:
        rng = self.rng
        out = []
        for i in range(self.n_campaigns):
            if i == 0:
                kinds = FULL_SEQUENCE
            else:
                kinds = [rng.choice(["CONNECTION_REQUEST", "EMAIL", "PROFILE_VISIT"])]
                kinds += rng.choices(list(get_args(m.StepType)), k=rng.randint(2, 5))
            name = w.CAMPAIGN_NAMES[i % len(w.CAMPAIGN_NAMES)]
            if i >= len(w.CAMPAIGN_NAMES):
                name += f" #{i // len(w.CAMPAIGN_NAMES) + 1}"
            out.append(
                m.Campaign(
                    id=i + 1,
                    name=name,
                    description=f"Outreach to {name.lower()}." if i % 4 != 3 else None,
                    status=STATUS_CYCLE[i % len(STATUS_CYCLE)],  # type: ignore[arg-type]
                    createdBy=i % 5 + 1,
                    crmOwnerId=CRM_USERS[i % len(CRM_USERS)][0] if i % 2 == 0 else None,
                    senderIdentityId=i % 4 + 1,
                    messageSync=i % 3 != 2,
                    createdAt=iso(self.remember(-(i + 1), rng.uniform(DAY, 80 * DAY))),
                    sequence=[self.step(k, j == 0) for j, k in enumerate(kinds)],
                    outcomeRates=m.OutcomeRates(
                        acceptance=round(rng.uniform(0.25, 0.6), 2),
                        reply=round(rng.uniform(0.08, 0.3), 2),
                        open=round(rng.uniform(0.3, 0.7), 2),
                        click=round(rng.uniform(0.03, 0.2), 2),
                    ),
                    seed=rng.randrange(1, 2**31),
                )
            )
        return out

    # --- companies and contacts -----------------------------------------------------------
    def companies(self) -> list[m.Company]:
        rng = self.rng
        names: set[str] = set()
        domains: set[str] = set()
        out = []
        for cid in range(1, self.n_companies + 1):
            for attempt in range(12):
                first, second = rng.choice(w.COMPANY_FIRST), rng.choice(w.COMPANY_SECOND)
                suffix = rng.choice(w.COMPANY_SUFFIX) if rng.random() < 0.4 else ""
                tld = rng.choice(w.TLDS)
                tag = "" if attempt < 10 else str(cid)  # give up on luck: the id makes it unique
                name = f"{first} {second}{' ' + suffix if suffix else ''}{' ' + tag if tag else ''}"
                domain = f"{slug(first + second)}{tag}.{tld}"
                if name.lower() not in names and domain not in domains:
                    break
            names.add(name.lower())
            domains.add(domain)
            industry = rng.choice(w.INDUSTRIES)
            country, _, prefix, cities = rng.choice(w.PLACES)
            span, low, high = rng.choice(w.EMPLOYEE_RANGES)
            hiring = rng.random() < 0.45
            created = rng.uniform(0, SPAN * 0.6)
            out.append(
                m.Company(
                    id=cid,
                    name=name,
                    domain=domain,
                    website=f"https://www.{domain}",
                    companyNetworkUrl=f"https://www.network.com/company/{domain.replace('.', '-')}",
                    industry=industry,
                    rangeOfEmployees=span,
                    numberOfEmployees=rng.randint(low, high),
                    yearfounded=str(rng.randint(1980, 2024)),
                    description=f"{name} {w.INDUSTRY_BLURB[industry]}.",
                    country=country,
                    city=rng.choice(cities),
                    streetAddress=f"{rng.randint(1, 250)} {street(country, rng.randrange(12))}",
                    phoneNumber=self.phone(prefix) if rng.random() < 0.8 else None,
                    companyEmail=f"{rng.choice(['info', 'hello', 'contact'])}@{domain}"
                    if rng.random() < 0.7
                    else None,
                    revenueRange=rng.choice(w.REVENUE_RANGES),
                    hiringOnNetwork=hiring,
                    openJobPositions=rng.randint(1, 40) if hiring else 0,
                    companyCRMId=f"crm-co-{cid}" if rng.random() < 0.2 else None,
                    smartFieldExplanations={
                        "industry": f"Inferred from the company description ({industry}).",
                        "rangeOfEmployees": "Counted from employee profiles on the network.",
                    }
                    if rng.random() < 0.2
                    else None,
                    customFields={"accountTier": rng.choice(["Tier 1", "Tier 2", "Tier 3"])}
                    if rng.random() < 0.3
                    else {},
                    createdAt=iso(created),
                    updatedAt=iso(created + rng.uniform(0, SPAN - created)),
                )
            )
        return out

    def campaign_ids(self, index: int, campaigns: list[m.Campaign]) -> list[int]:
        """Most contacts sit in one or two campaigns; the first few in the full-sequence one."""
        if not campaigns:
            return []
        if index < 6:
            return [campaigns[0].id]
        r = self.rng.random()
        if r < 0.12:
            return []
        if r < 0.75 or len(campaigns) == 1:
            return [self.rng.choice(campaigns).id]
        return sorted(c.id for c in self.rng.sample(campaigns, 2))

    def contacts(self, companies: list[m.Company], campaigns: list[m.Campaign]) -> list[m.Contact]:
        rng = self.rng
        emails: set[str] = set()
        out = []
        for cid in range(1, self.n_contacts + 1):
            first, fslug = rng.choice(self.first)
            last, lslug = rng.choice(self.last)
            company = rng.choice(companies) if companies and rng.random() < 0.88 else None
            title = rng.choice(w.JOB_TITLES)
            email = None
            if company is not None and rng.random() < 0.92:
                local, n = f"{fslug}.{lslug}", 1
                while f"{local}@{company.domain}" in emails:
                    n += 1
                    local = f"{fslug}.{lslug}{n}"
                email = f"{local}@{company.domain}"
                emails.add(email)
            country, _, prefix, _cities = rng.choice(w.PLACES)
            if company is not None and rng.random() < 0.8:
                country = company.country or country
                prefix = self.prefixes.get(country, prefix)
            in_crm = rng.random() < (0.5 if company is not None and company.companyCRMId else 0.05)
            created = self.remember(cid, rng.uniform(0, SPAN * 0.85))
            profile = f"{fslug}-{lslug}-{cid}"
            out.append(
                m.Contact(
                    id=cid,
                    firstName=first,
                    lastName=last,
                    jobTitle=title,
                    networkProfileUrl=f"https://www.network.com/in/{profile}",
                    professionalEmail=email,
                    personalEmails=f"{fslug}{lslug}{cid}@mailbox.example"
                    if rng.random() < 0.15
                    else None,
                    mobilePhone=self.phone(prefix) if rng.random() < 0.6 else None,
                    phones=self.phone(prefix) if rng.random() < 0.35 else None,
                    imageUrl=f"https://media.network.com/profile/{profile}.jpg"
                    if rng.random() < 0.6
                    else None,
                    companyId=company.id if company is not None else None,
                    emailVerificationStatus=rng.choice(w.EMAIL_STATUSES) if email else None,
                    contactCountry=country,
                    networkHeadline=f"{title} at {company.name}"
                    if company is not None
                    else f"{title} | {rng.choice(w.INDUSTRIES)}",
                    numberOfConnections=min(30000, int(rng.paretovariate(1.3) * 60)),
                    contactCRMId=f"crm-ct-{cid}" if in_crm else None,
                    smartFieldExplanations={"jobTitle": "Taken from the network profile headline."}
                    if rng.random() < 0.1
                    else None,
                    customFields={
                        "leadSource": rng.choice(w.LEAD_SOURCES),
                        "score": rng.randint(1, 100),
                    }
                    if rng.random() < 0.3
                    else {},
                    campaignIds=self.campaign_ids(cid - 1, campaigns),
                    createdAt=iso(created),
                    updatedAt=iso(created + rng.uniform(0, SPAN - created)),
                )
            )
        return out

    # --- lists and views ---------------------------------------------------------------
    def sample_ids(self, count: int, fraction: float) -> list[int]:
        k = min(count, max(1, round(count * fraction))) if count else 0
        return sorted(self.rng.sample(range(1, count + 1), k))

    def lists(self) -> list[m.ContactList]:
        specs: list[tuple[str, str, float]] = [
            ("Hot leads", "CONTACTS", 0.05),
            ("Webinar attendees Q2", "CONTACTS", 0.1),
            ("Decision makers", "CONTACTS", 0.08),
            ("Empty import", "CONTACTS", 0.0),
            ("Target accounts", "COMPANIES", 0.2),
            ("Existing customers", "COMPANIES", 0.1),
            ("Competitors", "COMPANIES", 0.04),
        ]
        out = []
        for i, (name, kind, fraction) in enumerate(specs, 1):
            count = self.n_contacts if kind == "CONTACTS" else self.n_companies
            out.append(
                m.ContactList(
                    id=i,
                    name=name,
                    description=f"{name} ({kind.lower()})" if i % 2 else None,
                    type=kind,  # type: ignore[arg-type]
                    folderId=(i % 3) + 1 if i % 2 == 0 else None,
                    createdBy=i % 5 + 1,
                    createdAt=iso(self.rng.uniform(10 * DAY, 200 * DAY)),
                    members=self.sample_ids(count, fraction) if fraction else [],
                )
            )
        return out

    def saved_views(self) -> list[m.SavedView]:
        hidden = {"customFields", "campaignIds", "smartFieldExplanations"}
        contact_fields = [f for f in m.Contact.__struct_fields__ if f not in hidden]
        company_fields = [f for f in m.Company.__struct_fields__ if f not in hidden]
        specs: list[tuple[str, m.SavedViewType, list[str]]] = [
            (
                "Leads: essentials",
                "LEAD",
                ["firstName", "lastName", "jobTitle", "professionalEmail", "companyId"],
            ),
            (
                "Leads: CRM status",
                "LEAD",
                ["firstName", "lastName", "contactCRMId", "leadCRMId", "updatedAt"],
            ),
            ("Leads: everything", "LEAD", contact_fields),
            (
                "Companies: firmographics",
                "COMPANY",
                ["name", "domain", "industry", "rangeOfEmployees", "country"],
            ),
            ("Companies: everything", "COMPANY", company_fields),
        ]
        out = []
        for i, (name, kind, view) in enumerate(specs, 1):
            created = self.rng.uniform(20 * DAY, 150 * DAY)
            out.append(
                m.SavedView(
                    id=i,
                    name=name,
                    type=kind,
                    view=list(view),  # type: ignore[arg-type]
                    createdBy=i % 5 + 1,
                    createdAt=iso(created),
                    updatedAt=iso(created + self.rng.uniform(0, 60 * DAY)),
                )
            )
        return out

    # --- conversations -----------------------------------------------------------------
    def conversations(
        self, contacts: list[m.Contact], companies: list[m.Company], campaigns: list[m.Campaign]
    ) -> list[m.Conversation]:
        rng = self.rng
        by_id = {c.id: c for c in campaigns}
        company_names = {co.id: co.name for co in companies}
        out: list[m.Conversation] = []
        message_id = 0
        for contact in contacts:
            for camp_id in contact.campaignIds:
                campaign = by_id[camp_id]
                forced = camp_id == campaigns[0].id and contact.id <= 6
                if campaign.status not in ("ACTIVE", "COMPLETED") or (
                    not forced and rng.random() > 0.35
                ):
                    continue
                steps = [(i, s) for i, s in enumerate(campaign.sequence) if s.type in MESSAGE_STEPS]
                if not steps:
                    continue
                names = {
                    "first": contact.firstName or "there",
                    "company": company_names.get(contact.companyId or 0, "your team"),
                }
                t = max(self.created[contact.id], self.created[-campaign.id])
                t += rng.uniform(HOUR, 5 * DAY)
                limit = (
                    len(campaign.sequence)
                    if forced
                    else rng.randint(steps[0][0] + 1, len(campaign.sequence))
                )
                messages: list[m.Message] = []
                sent = 0
                for index, step in enumerate(campaign.sequence[:limit]):
                    t += step.delaySeconds
                    if t > SPAN or step.type not in MESSAGE_STEPS:
                        continue
                    sent += 1
                    message_id += 1
                    messages.append(self.outbound(message_id, step, sent, len(steps), names, t))
                    last_step = index == limit - 1
                    if (forced and last_step and contact.id % 2 == 0) or (
                        not forced and rng.random() < campaign.outcomeRates.reply
                    ):
                        t += rng.uniform(HOUR, 2 * DAY)
                        if t <= SPAN:
                            message_id += 1
                            messages.append(self.inbound(message_id, step.type, t, contact.id))
                        break
                if messages:
                    out.append(
                        m.Conversation(
                            id=len(out) + 1,
                            contactId=contact.id,
                            campaignId=campaign.id,
                            identityId=campaign.senderIdentityId,
                            messages=messages,
                        )
                    )
        return out

    def outbound(
        self,
        mid: int,
        step: m.SequenceStep,
        index: int,
        count: int,
        names: dict[str, str],
        t: float,
    ) -> m.Message:
        rng = self.rng
        content = (step.content or "").replace("{{firstName}}", names["first"]).replace(
            "{{companyName}}", names["company"]
        ) or None
        subject = (step.subject or "").replace("{{firstName}}", names["first"]).replace(
            "{{companyName}}", names["company"]
        ) or None
        is_email = step.type == "EMAIL"
        attach = is_email and rng.random() < 0.1
        views = rng.randint(1, 5) if is_email and rng.random() < 0.5 else 0
        return m.Message(
            id=mid,
            content=content,
            subject=subject,
            type=step.type,  # type: ignore[arg-type]
            isContactSender=False,
            isAutosent=True,
            sequenceIndex=index,
            attachment=f"https://files.{PLATFORM_DOMAIN}/case-study-{mid}.pdf" if attach else None,
            attachmentName="case-study.pdf" if attach else None,
            contentType="application/pdf" if attach else None,
            createdAt=iso(t),
            updatedAt=iso(t + (views and rng.uniform(60, DAY))),
            viewCount=views,
            clickCount=rng.randint(1, views) if views and rng.random() < 0.3 else 0,
        )

    def inbound(self, mid: int, kind: str, t: float, contact_id: int) -> m.Message:
        """The contact's reply, on the channel of the step it answers (a MESSAGE_STEPS one)."""
        reply = "NETWORK_MESSAGE" if kind == "CONNECTION_REQUEST" else kind
        reply_type = cast(m.MessageType, reply)
        audio = reply_type == "NETWORK_MESSAGE" and contact_id % 5 == 0
        return m.Message(
            id=mid,
            content=None if audio else self.rng.choice(w.REPLY_TEXTS),
            subject="Re: your note" if reply_type in ("EMAIL", "INMAIL") else None,
            type=reply_type,
            isContactSender=True,
            isAudio=audio,  # type: ignore[arg-type]
            url=f"https://media.network.com/voice/{mid}.m4a" if audio else None,
            contentType="audio/mp4" if audio else None,
            createdAt=iso(t),
            updatedAt=iso(t),
        )

    # --- webhooks, actions, CRM --------------------------------------------------------
    def webhooks(self, campaigns: list[m.Campaign]) -> list[m.Webhook]:
        ids = [c.id for c in campaigns]
        events = list(get_args(m.WebhookEvent))
        specs: list[dict[str, Any]] = [
            {"name": "All events", "events": events, "secret": "whsec-demo-0001"},
            {
                "name": "Replies from the first campaigns",
                "events": ["MESSAGE_REPLIED"],
                "campaignIds": ids[:2],
            },
            {
                "name": "Disabled mail hook",
                "events": ["EMAIL_SENT", "INMAIL_SENT"],
                "enabled": False,
            },
            {
                "name": "Accepted with lead source",
                "secret": "whsec-demo-custom-fields",
                "events": ["CONNECTION_REQUEST_ACCEPTED", "MESSAGE_REPLIED"],
                "customFields": ["leadSource", "score"],
            },
            {
                "name": "Profile activity",
                "events": ["PROFILE_VISITED", "POST_LIKED"],
                "campaignIds": ids[2:3],
                "enabled": False,
            },
        ]
        out = []
        for i, spec in enumerate(specs, 1):
            created = self.rng.uniform(30 * DAY, 120 * DAY)
            out.append(
                m.Webhook(
                    id=i,
                    url=f"{HOOK_URL}{i}",
                    createdAt=iso(created),
                    updatedAt=iso(created + self.rng.uniform(0, 30 * DAY)),
                    **spec,
                )
            )
        return out

    def actions_runs(self) -> list[m.ActionsRun]:
        if not self.n_contacts:
            return []
        rng = self.rng
        out = []
        for i, status in enumerate(get_args(m.ActionsStatus), 1):
            actions = [m.Action(type=t) for t in rng.sample(ACTION_TYPES, rng.randint(1, 2))]
            contact_ids = sorted(
                rng.sample(range(1, self.n_contacts + 1), min(self.n_contacts, rng.randint(3, 20)))
            )
            out.append(
                m.ActionsRun(
                    id=i,
                    actions=actions,
                    contactIds=contact_ids,
                    webhookUrl=f"{HOOK_URL}actions-{i}" if i % 2 else None,
                    overallStatus=status,
                    statusCounts=self.counts(status, len(actions) * len(contact_ids)),
                    createdAt=iso(rng.uniform(200 * DAY, SPAN - DAY)),
                )
            )
        return out

    def counts(self, status: str, total: int) -> m.StatusCounts:
        """Per-item counters consistent with the run's overall status; they sum to `total`."""
        done = self.rng.randint(1, total - 1) if total > 1 else 0
        rest = total - done
        match status:
            case "QUEUED":
                return m.StatusCounts(queued=total)
            case "PENDING":
                return m.StatusCounts(pending=total)
            case "PROCESSING":
                working = max(1, rest // 2) if rest else 0
                return m.StatusCounts(completed=done, processing=working, pending=rest - working)
            case "PARTIAL":
                return m.StatusCounts(completed=done, failed=rest)
            case "FAILED":
                return m.StatusCounts(failed=total)
            case "CANCELLED":
                return m.StatusCounts(completed=done, cancelled=rest)
        return m.StatusCounts(completed=total)

    def crm(self, contacts: list[m.Contact], companies: list[m.Company]) -> m.CrmSeed:
        """The reference CRM already holds every record exported before (the *CRMId ones)."""
        rng = self.rng
        company_by_id = {co.id: co for co in companies}
        crm_companies = [
            drop_none(
                {
                    "crmId": co.companyCRMId,
                    "externalId": str(co.id),
                    "name": co.name,
                    "domain": co.domain,
                    "website": co.website,
                    "industry": co.industry,
                    "employeeCount": co.numberOfEmployees,
                    "employeeRange": co.rangeOfEmployees,
                    "companyNetworkUrl": co.companyNetworkUrl,
                    "country": co.country,
                    "city": co.city,
                    "phone": co.phoneNumber,
                    "accountTier": rng.choice(["Tier 1", "Tier 2", "Tier 3"]),
                    "totalDeals": rng.randint(0, 12),
                }
            )
            for co in companies
            if co.companyCRMId
        ]
        crm_contacts = []
        for ct in contacts:
            if not ct.contactCRMId:
                continue
            co = company_by_id.get(ct.companyId or 0)
            crm_contacts.append(
                drop_none(
                    {
                        "crmId": ct.contactCRMId,
                        "externalId": str(ct.id),
                        "email": ct.professionalEmail,
                        "firstName": ct.firstName,
                        "lastName": ct.lastName,
                        "fullName": f"{ct.firstName} {ct.lastName}",
                        "phone": ct.phones,
                        "mobilePhone": ct.mobilePhone,
                        "company": co.name if co else None,
                        "companyCrmId": co.companyCRMId if co else None,
                        "title": ct.jobTitle,
                        "networkUrl": ct.networkProfileUrl,
                        "country": ct.contactCountry,
                        "lifecycleStage": rng.choice(
                            ["Lead", "MQL", "SQL", "Opportunity", "Customer"]
                        ),
                        "leadScore": rng.randint(0, 100),
                    }
                )
            )
        users = [
            m.CrmUser(id=uid, name=name, email=f"{slug(name.split()[0])}@crm.example")
            for uid, name in CRM_USERS
        ]
        return m.CrmSeed(users=users, contacts=crm_contacts, companies=crm_companies)

    def tasks(
        self, contacts: list[m.Contact], companies: list[m.Company], campaigns: list[m.Campaign]
    ) -> tuple[list[m.Task], list[m.CrmTask]]:
        """Tasks in every state a rehearsal must meet, on the first members of campaigns with a
        TASK step: completed on the CRM (2), open on both sides (1), completed on the platform
        and open on the CRM (1: PATCH /tasks/:taskId), deleted on the CRM (1: GET
        /tasks/:taskId confirms it), and completed on the platform before they were sent (2:
        created, then PATCH /tasks/batch). No random draw: the other files stay as they were."""
        company_names = {co.id: co.name for co in companies}
        first_task = {
            c.id: (c, i)
            for c in campaigns
            for i, step in reversed(list(enumerate(c.sequence)))
            if step.type == "TASK"
        }
        in_crm = [
            (ct, first_task[cid])
            for ct in contacts
            for cid in ct.campaignIds
            if cid in first_task and ct.contactCRMId
        ]
        not_in_crm = [
            (ct, first_task[cid])
            for ct in contacts
            for cid in ct.campaignIds
            if cid in first_task and not ct.contactCRMId
        ]
        # (completed on the platform, its CRM task id or None when unsent, the CRM task:
        # completed there, open, or "deleted"); the CRM holds task ids 1-3 and 5, not 4.
        states: list[tuple[bool, str | None, bool | str]] = [
            (False, "crm-task-000001", True),
            (False, "crm-task-000002", True),
            (False, "crm-task-000003", False),
            (True, "crm-task-000005", False),
            (False, "crm-task-000004", "deleted"),
        ]
        # Tasks sent earlier go to members in the CRM first; the last two members not in it
        # keep the unsent ones (a small set may need every member it has). The first
        # contacts stay without a task: walkthroughs add one to contact 1.
        unsent, rest = not_in_crm[-2:], not_in_crm[:-2]
        picked = list(zip(in_crm + rest, states, strict=False))
        picked += [(member, (True, None, False)) for member in unsent]
        platform: list[m.Task] = []
        crm: list[m.CrmTask] = []
        for n, ((ct, (campaign, index)), (done, crm_id, crm_state)) in enumerate(picked, 1):
            step = campaign.sequence[index]
            company = company_names.get(ct.companyId or 0)
            subject = task_subject(
                step.taskSubject, step.taskType, campaign.name, ct.firstName, company
            )
            platform.append(
                m.Task(
                    id=n,
                    contactId=ct.id,
                    campaignId=campaign.id,
                    stepIndex=index,
                    subject=subject,
                    type=step.taskType,
                    completedAt="2026-11-01T16:00:00.000Z" if done else None,
                    crmTaskId=crm_id,
                )
            )
            if crm_id is not None and crm_state != "deleted":
                crm.append(
                    m.CrmTask(
                        id=crm_id,
                        subject=subject,
                        type=step.taskType,
                        contactId=ct.contactCRMId,
                        completedAt="2026-11-01T11:30:00.000Z" if crm_state is True else None,
                    )
                )
        crm.sort(key=lambda t: t.id)
        return platform, crm

    def connection(self) -> m.CrmConnection:
        fields = ENGAGEMENT
        return m.CrmConnection(
            crmUrl="/crm",
            apiKey="crm-demo-key",
            apiKeyHeader="X-API-Key",
            contactLinkTemplate="/crm-ui/contacts/{{crmId}}",
            companyLinkTemplate="/crm-ui/companies/{{crmId}}",
            engagementFields=m.EngagementFields(
                contacts=dict(fields),
                companies={k: v for k, v in fields.items() if k not in CONTACT_ONLY},
            ),
        )

    def build(self) -> dict[str, Any]:
        """Every file name of the loader's FILES table -> the value it holds."""
        campaigns = self.campaigns()
        companies = self.companies()
        contacts = self.contacts(companies, campaigns)
        files: dict[str, Any] = {
            "api_keys.json": self.api_keys(),
            "users.json": self.users(),
            "identities.json": self.identities(),
            "campaigns.json": campaigns,
            "companies.json": companies,
            "contacts.json": contacts,
            "lists.json": self.lists(),
            "saved_views.json": self.saved_views(),
            "conversations.json": self.conversations(contacts, companies, campaigns),
            "webhooks.json": self.webhooks(campaigns),
            "actions_runs.json": self.actions_runs(),
            "connection.json": self.connection(),
            "crm.json": self.crm(contacts, companies),
            "clock.json": m.ClockFile(start=CLOCK_START),
        }
        # last: it draws nothing from the random source the files above share
        crm: m.CrmSeed = files["crm.json"]
        files["tasks.json"], crm.tasks = self.tasks(contacts, companies, campaigns)
        return files


def street(country: str, pick: int) -> str:
    """A street name that fits the country."""
    names = w.STREETS.get(country, w.STREETS[""])
    return names[pick % len(names)]


def drop_none(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if v is not None}


def write(files: dict[str, Any], out: Path, pretty: bool) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, value in files.items():
        data = msgspec.json.encode(value)
        if pretty:
            data = msgspec.json.format(data, indent=2)
        (out / name).write_bytes(data + b"\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--contacts", type=int, default=200)
    parser.add_argument("--companies", type=int, default=50)
    parser.add_argument("--campaigns", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--format",
        choices=["auto", "pretty", "compact"],
        default="auto",
        help="auto: indented up to 5000 contacts, compact above",
    )
    args = parser.parse_args(argv)
    if min(args.contacts, args.companies) < 0 or args.campaigns < 1:
        parser.error("counts must be >= 0 and --campaigns >= 1")
    began = time.perf_counter()
    files = Generator(args.contacts, args.companies, args.campaigns, args.seed).build()
    pretty = args.format == "pretty" or (args.format == "auto" and args.contacts <= 5000)
    write(files, args.out, pretty)
    conversations = files["conversations.json"]
    print(
        f"wrote {args.out}: {args.contacts} contacts, {args.companies} companies, "
        f"{args.campaigns} campaigns, {len(conversations)} conversations, "
        f"{sum(len(c.messages) for c in conversations)} messages, "
        f"{len(files['tasks.json'])} tasks, "
        f"{len(files['crm.json'].contacts)}+{len(files['crm.json'].companies)} CRM records "
        f"in {time.perf_counter() - began:.2f}s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
