"""What a completed action changes on a platform record: pure functions of the run, the
record, the action's position and the record as it stands (no I/O, no clock).

Contacts: ENRICH_WITH_EMAIL finds `professionalEmail` (kept when the contact has one; a new
one is unverified), ENRICH_WITH_PHONE finds `mobilePhone` (kept when present),
VERIFY_LEAD_EMAIL sets `emailVerificationStatus` (VALID, RISKY or INVALID; nothing to verify
without an email), SCRAPE_LEAD_FROM_NETWORK refreshes `networkHeadline` and
`numberOfConnections` and, unless `skipCompanyScrape`, scrapes the contact's company.
Companies: the scrape refreshes `openJobPositions`/`hiringOnNetwork` and fills a missing
headcount; ENRICH_WITH_EMAIL fills `companyEmail`, ENRICH_WITH_PHONE `phoneNumber`.
VERIFY_LEAD_PHONE has no field to show its verdict on (the spec's records have none), and the
verifications do nothing to a company. EXPORT_TO_CRM changes what the CRM answers, elsewhere.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from emulator.simulation.actions import types as t

Changes = dict[str, Any]
RANGES = (
    (10, "1-10"),
    (50, "11-50"),
    (200, "51-200"),
    (500, "201-500"),
    (1000, "501-1000"),
    (5000, "1001-5000"),
    (10000, "5001-10000"),
)


def draw(run_id: int, record_id: int, position: int, salt: str) -> int:
    """A number fixed by (run, record, action position, salt): the same run ends the same way."""
    digest = hashlib.blake2b(f"{run_id}:{record_id}:{position}:{salt}".encode(), digest_size=4)
    return int.from_bytes(digest.digest(), "big")


def _slug(text: str | None) -> str:
    return re.sub(r"[^a-z0-9]+", "", (text or "").lower())


def _domain(company: dict[str, Any] | None) -> str:
    if company is None:
        return "example.com"
    return company.get("domain") or (_slug(company.get("name")) or "example") + ".com"


def employee_range(count: int) -> str:
    return next((label for top, label in RANGES if count <= top), "10001+")


def contact_changes(
    kind: str,
    options: t.Options,
    run_id: int,
    position: int,
    contact: dict[str, Any],
    company: dict[str, Any] | None,
) -> tuple[Changes, Changes]:
    """The columns a completed action sets on the contact, and on its company."""
    cid = contact["id"]
    n = draw(run_id, cid, position, kind)
    mine: Changes = {}
    theirs: Changes = {}
    match kind:
        case t.ENRICH_EMAIL if not contact.get("professionalEmail"):
            local = (
                ".".join(
                    filter(None, (_slug(contact.get("firstName")), _slug(contact.get("lastName"))))
                )
                or f"contact{cid}"
            )
            email = f"{local}@{_domain(company)}"
            mine = {"professionalEmail": email, "emailVerificationStatus": "UNVERIFIED"}
        case t.ENRICH_PHONE if not contact.get("mobilePhone"):
            mine = {"mobilePhone": f"+1 555 {n % 900 + 100:03d} {n // 900 % 10000:04d}"}
        case t.VERIFY_EMAIL if contact.get("professionalEmail"):
            verdict = n % 100
            mine = {
                "emailVerificationStatus": "VALID"
                if verdict < 70
                else "RISKY"
                if verdict < 85
                else "INVALID"
            }
        case t.SCRAPE:
            title, name = contact.get("jobTitle"), (company or {}).get("name")
            headline = (
                f"{title} at {name}" if title and name else title or contact.get("networkHeadline")
            )
            mine = {"networkHeadline": headline, "numberOfConnections": 50 + n % 451}
            assert isinstance(options, t.ScrapeOptions)
            if company is not None and not options.skipCompanyScrape:
                theirs = company_changes(kind, options, run_id, position, company)
    return mine, theirs


def company_changes(
    kind: str, options: t.Options, run_id: int, position: int, company: dict[str, Any]
) -> Changes:
    """The columns a completed action sets on a company."""
    n = draw(run_id, company["id"], position, kind)
    match kind:
        case t.SCRAPE:
            jobs = n % 12
            changes: Changes = {"openJobPositions": jobs, "hiringOnNetwork": int(jobs > 0)}
            if company.get("numberOfEmployees") is None:
                count = 5 + n // 12 % 2000
                changes |= {"numberOfEmployees": count, "rangeOfEmployees": employee_range(count)}
            return changes
        case t.ENRICH_EMAIL if not company.get("companyEmail"):
            return {"companyEmail": f"contact@{_domain(company)}"}
        case t.ENRICH_PHONE if not company.get("phoneNumber"):
            return {"phoneNumber": f"+1 555 {n % 900 + 100:03d} {n // 900 % 10000:04d}"}
    return {}
