"""Contacts of the platform as /v1 shows them: listing, reading, creating and merging."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from emulator.errors import NotFound
from emulator.normalise import email_key, url_key
from emulator.platform import contacts as platform_contacts
from emulator.public_api.companies import changes, upsert_company
from emulator.public_api.context import ApiContext, link
from emulator.public_api.envelopes import meta_list_end, meta_list_items
from emulator.public_api.list_membership import add_member, require_list
from emulator.public_api.listing import Where
from emulator.public_api.record_filter import RecordFilter, contains_folded
from emulator.public_api.schemas import Contact, ContactCreated, ContactIn
from emulator.store import contact_search
from emulator.wire import decode, encode

CONTACT_FIELDS = tuple(Contact.__struct_fields__)

# A contact as /v1 shows it, less `company` and `contactCRMUrl`, built by SQLite as it reads
# the row (~6 us a row). Not a generated column: SQLite computes those on every insert and
# update, even VIRTUAL ones, and contacts are written far more often than a page is missed.
_DOC = """json_object(
    'id', c.id, 'firstName', c.firstName, 'lastName', c.lastName, 'jobTitle', c.jobTitle,
    'networkProfileUrl', c.networkProfileUrl, 'professionalEmail', c.professionalEmail,
    'personalEmails', c.personalEmails, 'mobilePhone', c.mobilePhone, 'phones', c.phones,
    'imageUrl', c.imageUrl, 'companyId', c.companyId,
    'emailVerificationStatus', c.emailVerificationStatus, 'contactCountry', c.contactCountry,
    'networkHeadline', c.networkHeadline, 'numberOfConnections', c.numberOfConnections,
    'contactCRMId', c.contactCRMId, 'leadCRMId', c.leadCRMId,
    'isInCRM', json(CASE WHEN c.contactCRMId IS NULL THEN 'false' ELSE 'true' END),
    'createdAt', c.createdAt, 'updatedAt', c.updatedAt,
    'smartFieldExplanations', json(c.smartFieldExplanations)
)"""
# `ref` is the JSON column of a company as a contact embeds it (platform.sql): a contact is
# its doc plus the embedded company and the record link, spliced in here.
_DOCS = (
    f"SELECT {_DOC}, co.ref, c.contactCRMId"
    " FROM contacts c LEFT JOIN companies co ON co.id = c.companyId"
)


def contact_json(
    doc: str, company_ref: str | None, crm_id: str | None, template: str | None
) -> str:
    url = "null" if template is None or crm_id is None else encode(link(template, crm_id)).decode()
    return f'{doc[:-1]},"company":{company_ref or "null"},"contactCRMUrl":{url}}}'


class ContactFilter(RecordFilter):
    """The id query of a contacts listing, built from validated parameters."""

    table = "contacts"
    search_columns = ("firstName", "lastName", "professionalEmail", "firstName || ' ' || lastName")
    list_type = "CONTACTS"

    def __init__(
        self,
        search: str | None = None,
        company_id: int | None = None,
        list_id: int | None = None,
        updated_from: str | None = None,
        updated_to: str | None = None,
    ) -> None:
        super().__init__(None, list_id, updated_from, updated_to)
        if company_id is not None:
            self.where.add("companyId = ?", company_id)
        self.indexed: Where | None = None  # the same conditions, the search through the index
        # the index's parameters, when the search is the only filter
        self.alone: tuple[str, str] | None = None
        if search:
            folded = search.casefold()
            if contact_search.usable(folded):
                clause, params = contact_search.matches_clause(folded)
                self.alone = None if self.where.clauses else params
                self.indexed = self.where.copy().add(clause, *params)
            self.where.add(*contains_folded(self.search_columns, search))
            self.where.folds = True

    async def page(self, ctx: ApiContext, page: int, page_size: int) -> tuple[int, list[int]]:
        """A search alone is answered by the index itself (its count and its rowids, which
        are the contacts' ids), not by a lookup of each match in the contacts table. While
        the index is built, a search may first wait for it (`contact_search.settle`)."""
        if self.indexed is not None and not contact_search.ready(ctx.store):
            await contact_search.settle(ctx.store)
            if not contact_search.ready(ctx.store):  # every contact read: how long it takes
                began = time.perf_counter()
                found = await super().page(ctx, page, page_size)
                contact_search.read_all(ctx.store, time.perf_counter() - began)
                return found
        if self.alone is not None and contact_search.ready(ctx.store):
            query, first = contact_search.alone_queries(self.alone[1])
            return await ctx.pages.page(query, self.alone, page, page_size, first)
        return await super().page(ctx, page, page_size)

    def where_now(self, ctx: ApiContext) -> Where:
        """The search through the trigram index when it is ready (the same answers: see
        store/contact_search.py); else every contact is read, while the index is built."""
        if self.indexed is None:
            return self.where
        if not contact_search.ready(ctx.store):
            contact_search.warm(ctx.store)
            return self.where
        return self.indexed


async def list_contact_documents(
    ctx: ApiContext, flt: ContactFilter, page: int, page_size: int
) -> tuple[int, list[str]]:
    """(total, the page's contacts as JSON texts): the fast path of GET /v1/contacts."""
    total, ids = await flt.page(ctx, page, page_size)
    return total, await contact_documents(ctx, ids)


def cached_contact_page(ctx: ApiContext, query: bytes) -> tuple[bytes, bytes] | None:
    """The answer to GET /v1/contacts?`query` kept while no write touched a contact, if any,
    in two pieces (its items and the rest: EncodedPages.pieces).

    The answer is a function of the query string and the contacts' state alone, so a page
    asked again before such a write is the bytes of last time, without parsing the query.
    """
    return ctx.bodies.pieces(("contacts", query))


async def contact_page_json(
    ctx: ApiContext, flt: ContactFilter, page: int, page_size: int, query: bytes
) -> bytes:
    """GET /v1/contacts as encoded JSON, kept for `cached_contact_page`.

    A page of the whole table whose contacts no write touched since it was kept reuses its
    encoded items under a new envelope: one write in ten (creates, appended above every
    full page) then costs the pages their `total`, not their contacts.
    """
    version = ctx.store.version
    key = ("contacts", query)
    total, ids = await flt.page(ctx, page, page_size)
    whole_table = not flt.where.clauses
    items = ctx.bodies.items(key, ids) if whole_table else None
    if items is None:
        items = meta_list_items(await contact_documents(ctx, ids))
    end = meta_list_end(page, page_size, total)
    # A full page of the whole table: a later create (appended above it) only retotals it.
    full = whole_table and len(ids) == page_size
    tail = partial(meta_list_end, page, page_size) if full else None
    ctx.bodies.put(version, key, end, items, ids if whole_table else None, tail, total)
    return items + end


# Contacts read on the event loop's thread at most (a page of 100 reads in ~0.4 ms; the
# largest page, 1,000, in ~4 ms, which goes to the database thread instead).
BRIEF_IDS = 200


async def contact_documents(ctx: ApiContext, ids: list[int]) -> list[str]:
    """The contacts of `ids` as JSON texts, in id order (unknown ids left out)."""
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    rows = await ctx.store.fetchall(
        f"{_DOCS} WHERE c.id IN ({marks}) ORDER BY c.id", ids, brief=len(ids) <= BRIEF_IDS
    )
    template = (await ctx.links()).contact
    return [contact_json(doc, ref, crm_id, template) for doc, ref, crm_id in rows]


async def list_contacts(
    ctx: ApiContext, flt: ContactFilter, page: int, page_size: int
) -> tuple[int, list[Contact]]:
    total, docs = await list_contact_documents(ctx, flt, page, page_size)
    return total, [decode(doc, Contact) for doc in docs]


async def get_contact_document(ctx: ApiContext, contact_id: int) -> str:
    found = await contact_documents(ctx, [contact_id])
    if not found:
        raise NotFound(f"Contact {contact_id} not found")
    return found[0]


async def get_contact(ctx: ApiContext, contact_id: int) -> Contact:
    return decode(await get_contact_document(ctx, contact_id), Contact)


# Body fields a create or merge copies into the row, in column order.
_WRITABLE = (
    "firstName",
    "lastName",
    "professionalEmail",
    "jobTitle",
    "networkProfileUrl",
    "mobilePhone",
    "phones",
    "networkHeadline",
    "contactCountry",
)
# What a create writes and a merge may change: the body's columns and the company's id.
_STORED = (*_WRITABLE, "companyId")


# A merged e-mail or profile URL equal to the stored one under these keys keeps its spelling.
_SAME: dict[str, Callable[[str | None], str | None]] = {
    "professionalEmail": email_key,
    "networkProfileUrl": url_key,
}


def match_contact(conn: sqlite3.Connection, email: str | None, url: str | None) -> int | None:
    """decisions.md §2: professionalEmail (case-insensitive), then networkProfileUrl (normalised)."""
    for column, key in (("emailKey", email_key(email)), ("networkUrlKey", url_key(url))):
        if key is not None:
            row = conn.execute(
                f"SELECT id FROM contacts WHERE {column} = ? ORDER BY id LIMIT 1", (key,)
            ).fetchone()
            if row is not None:
                return int(row[0])
    return None


def _insert_contact(conn: sqlite3.Connection, present: dict[str, Any], now: str) -> int:
    return platform_contacts.insert(conn, {col: present.get(col) for col in _STORED}, now)


def _merge_into(
    conn: sqlite3.Connection, contact_id: int, present: dict[str, Any], now: str
) -> None:
    """Write the given values that change the stored contact, with the match keys they move."""
    row = conn.execute(
        f"SELECT {', '.join(_STORED)} FROM contacts WHERE id = ?", (contact_id,)
    ).fetchone()
    updates = changes(dict(zip(_STORED, row, strict=True)), present, _SAME)
    if updates:
        platform_contacts.update(conn, contact_id, updates, now)


async def create_contact(ctx: ApiContext, body: ContactIn) -> tuple[ContactCreated, bool]:
    """POST /v1/contact in one transaction (answers the contact and whether it merged).

    A bad `listId` or an unnamed new company raises before anything is written, and the
    transaction would roll back a half-done change anyway.
    """
    now = ctx.now()
    given = {col: getattr(body, col) for col in _WRITABLE}
    present: dict[str, Any] = {col: v for col, v in given.items() if v is not None and v.strip()}

    def write(conn: sqlite3.Connection) -> tuple[ContactCreated, bool]:
        if body.listId is not None:
            require_list(conn, body.listId, "CONTACTS")
        if body.company is not None:
            company = {col: getattr(body.company, col) for col in body.company.__struct_fields__}
            present["companyId"], _ = upsert_company(conn, company, now, True, "company.")
        found = None
        if body.mergeWithExisting:
            found = match_contact(
                conn, present.get("professionalEmail"), present.get("networkProfileUrl")
            )
        if found is None:
            contact_id = _insert_contact(conn, present, now)
        else:
            contact_id = found
            _merge_into(conn, contact_id, present, now)
        if body.listId is not None:
            add_member(conn, body.listId, contact_id)
        if found is None:  # the row is what was inserted: not read back (one statement less)
            return ContactCreated(
                id=contact_id,
                firstName=present.get("firstName"),
                lastName=present.get("lastName"),
                professionalEmail=present.get("professionalEmail"),
                networkProfileUrl=present.get("networkProfileUrl"),
                companyId=present.get("companyId"),
                createdAt=now,
            ), False
        row = conn.execute(
            "SELECT id, firstName, lastName, professionalEmail, networkProfileUrl, companyId,"
            " createdAt FROM contacts WHERE id = ?",
            (contact_id,),
        ).fetchone()
        return ContactCreated(
            id=row[0],
            firstName=row[1],
            lastName=row[2],
            professionalEmail=row[3],
            networkProfileUrl=row[4],
            companyId=row[5],
            createdAt=row[6],
        ), found is not None

    return await ctx.store.write(write, brief=True)
