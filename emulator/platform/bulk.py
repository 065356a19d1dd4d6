"""Fixture seeding's rows of companies, contacts and their memberships (one executemany each,
by the tables' owners), with the match keys every other write keeps."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from emulator.fixtures import models as m
from emulator.normalise import email_key, url_keys
from emulator.platform import companies as company_table
from emulator.platform import contacts as contact_table
from emulator.platform.engagement import add_members
from emulator.platform.keys import company_keys
from emulator.wire import encode


def _json(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, dict) and not value:  # most contacts' customFields
        return "{}"
    return encode(value).decode()


def _bool(value: bool | None) -> int | None:
    return None if value is None else int(value)


def insert_companies(conn: sqlite3.Connection, companies: Iterable[m.Company]) -> None:
    company_table.insert_rows(
        conn,
        (
            (
                co.id,
                co.name,
                co.domain,
                co.website,
                co.companyNetworkUrl,
                co.industry,
                co.rangeOfEmployees,
                co.numberOfEmployees,
                co.yearfounded,
                co.description,
                co.country,
                co.city,
                co.streetAddress,
                co.phoneNumber,
                co.companyEmail,
                co.revenueRange,
                _bool(co.hiringOnNetwork),
                co.openJobPositions,
                co.companyCRMId,
                _json(co.smartFieldExplanations),
                _json(co.customFields),
                *company_keys(
                    {
                        "domain": co.domain,
                        "website": co.website,
                        "companyNetworkUrl": co.companyNetworkUrl,
                        "name": co.name,
                    }
                ).values(),
                co.createdAt,
                co.updatedAt,
            )
            for co in companies
        ),
    )


def insert_contacts(conn: sqlite3.Connection, contacts: list[m.Contact]) -> None:
    """Insert contacts and their campaign memberships (also chunk by chunk: ContactStream)."""
    write_contact_rows(conn, *contact_rows(contacts))


Rows = list[tuple[Any, ...]]


def write_contact_rows(
    conn: sqlite3.Connection, contacts: Sequence[Sequence[Any]], members: Sequence[Sequence[Any]]
) -> None:
    """The rows of `contact_rows` (or lists of the same values) into their tables."""
    contact_table.insert_rows(conn, contacts)
    add_members(conn, members)


def contact_rows(contacts: list[m.Contact]) -> tuple[Rows, Rows]:
    """The contacts' rows and their campaign memberships' (no I/O)."""
    return contact_table_rows(contacts), [
        (cid, c.id, c.createdAt) for c in contacts for cid in c.campaignIds
    ]


def contact_table_rows(contacts: list[m.Contact]) -> Rows:
    """The contacts' rows alone (the contacts worker writes no memberships)."""
    # the profile URLs' keys of the whole list at once (`url_keys`: ~0.4 us a contact less
    # than a call each); the usual empty JSON values without a call
    urls = url_keys([c.networkProfileUrl for c in contacts])
    return [
        (
            c.id,
            c.firstName,
            c.lastName,
            c.jobTitle,
            c.networkProfileUrl,
            c.professionalEmail,
            c.personalEmails,
            c.mobilePhone,
            c.phones,
            c.imageUrl,
            c.companyId,
            c.emailVerificationStatus,
            c.contactCountry,
            c.networkHeadline,
            c.numberOfConnections,
            c.contactCRMId,
            c.leadCRMId,
            None if c.smartFieldExplanations is None else _json(c.smartFieldExplanations),
            "{}" if not c.customFields else _json(c.customFields),
            email_key(c.professionalEmail),
            url,
            c.createdAt,
            c.updatedAt,
        )
        for c, url in zip(contacts, urls, strict=True)
    ]
