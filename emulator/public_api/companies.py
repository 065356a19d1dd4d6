"""Companies of the platform as /v1 shows them: listing, searching, reading, creating, merging."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from emulator.errors import BadRequest, NotFound
from emulator.normalise import domain_key, name_key, url_key
from emulator.platform import companies as platform_companies
from emulator.public_api.company_search import Conditions
from emulator.public_api.context import ApiContext, decode_json_object, link
from emulator.public_api.list_membership import add_member, require_list
from emulator.public_api.listing import rows_by_ids
from emulator.public_api.record_filter import RecordFilter
from emulator.public_api.schemas import Company, CompanyCreated, CompanyIn

COMPANY_FIELDS = tuple(Company.__struct_fields__)

_COLUMNS = (
    "id, name, domain, website, companyNetworkUrl, industry, rangeOfEmployees, numberOfEmployees,"
    " yearfounded, description, country, city, streetAddress, phoneNumber, companyEmail,"
    " revenueRange, hiringOnNetwork, openJobPositions, companyCRMId, createdAt, updatedAt,"
    " smartFieldExplanations"
)
_SELECT = f"SELECT {_COLUMNS} FROM companies t"  # rows_by_ids: aliased t


def company_from_row(row: tuple[Any, ...], template: str | None) -> Company:
    return Company(
        id=row[0],
        name=row[1],
        domain=row[2],
        website=row[3],
        companyNetworkUrl=row[4],
        industry=row[5],
        rangeOfEmployees=row[6],
        numberOfEmployees=row[7],
        yearfounded=row[8],
        description=row[9],
        country=row[10],
        city=row[11],
        streetAddress=row[12],
        phoneNumber=row[13],
        companyEmail=row[14],
        revenueRange=row[15],
        hiringOnNetwork=None if row[16] is None else bool(row[16]),
        openJobPositions=row[17],
        companyCRMId=row[18],
        isCompanyInCRM=row[18] is not None,
        createdAt=row[19],
        updatedAt=row[20],
        smartFieldExplanations=decode_json_object(row[21]),
        companyCRMUrl=link(template, row[18]),
    )


class CompanyFilter(RecordFilter):
    """The id query of a companies listing or search, built from validated parameters."""

    table = "companies"
    search_columns = ("name", "domain")
    list_type = "COMPANIES"

    def __init__(
        self,
        search: str | None = None,
        list_id: int | None = None,
        updated_from: str | None = None,
        updated_to: str | None = None,
        conditions: Conditions | None = None,
    ) -> None:
        super().__init__(search, list_id, updated_from, updated_to)
        if conditions is not None and conditions.sql:
            self.where.add(conditions.sql, *conditions.params)
            self.where.folds |= conditions.folds


async def list_companies(
    ctx: ApiContext, flt: CompanyFilter, page: int, page_size: int
) -> tuple[int, list[Company]]:
    total, ids = await flt.page(ctx, page, page_size)
    return total, await companies_by_ids(ctx, ids)


async def companies_by_ids(ctx: ApiContext, ids: list[int]) -> list[Company]:
    if not ids:  # no link-template read for an empty page
        return []
    template = (await ctx.links()).company
    return await rows_by_ids(ctx.store, ids, _SELECT, lambda row: company_from_row(row, template))


async def get_company(ctx: ApiContext, company_id: int) -> Company:
    found = await companies_by_ids(ctx, [company_id])
    if not found:
        raise NotFound(f"Company {company_id} not found")
    return found[0]


# ---- create and merge -------------------------------------------------------------------

# Columns a create or merge may set from a body; the keys are derived from them.
_WRITABLE = ("name", "domain", "website", "companyNetworkUrl", "industry")


def match_company(
    conn: sqlite3.Connection,
    domain: str | None,
    website: str | None,
    network_url: str | None,
    name: str | None,
) -> int | None:
    """decisions.md §2: normalised domain (or website), then companyNetworkUrl, then name."""
    for column, key in (
        ("domainKey", domain_key(domain or website)),
        ("networkUrlKey", url_key(network_url)),
        ("nameKey", name_key(name)),
    ):
        if key is not None:
            row = conn.execute(
                f"SELECT id FROM companies WHERE {column} = ? ORDER BY id LIMIT 1", (key,)
            ).fetchone()
            if row is not None:
                return int(row[0])
    return None


def upsert_company(
    conn: sqlite3.Connection, given: dict[str, str | None], now: str, merge: bool, where: str
) -> tuple[int, bool]:
    """Merge `given` into the matching company or create one; answers (id, merged).

    `given` maps _WRITABLE columns to values; None or blank is "not given". `where`
    prefixes the field named by a 400 (a contact's nested `company`).
    """
    present = {
        col: v for col, v in given.items() if col in _WRITABLE and v is not None and v.strip()
    }
    found = None
    if merge:
        found = match_company(
            conn,
            present.get("domain"),
            present.get("website"),
            present.get("companyNetworkUrl"),
            present.get("name"),
        )
    if found is None:
        if name_key(present.get("name")) is None:
            raise BadRequest.field(f"{where}name", "is required to create a company")
        values = {col: present.get(col) for col in _WRITABLE}
        return platform_companies.insert(conn, values, now), False
    row = conn.execute(
        f"SELECT {', '.join(_WRITABLE)} FROM companies WHERE id = ?", (found,)
    ).fetchone()
    stored = dict(zip(_WRITABLE, row, strict=True))
    updates = changes(stored, present, _SAME)
    if updates:
        platform_companies.update(conn, found, stored, updates, now)
    return found, True


# A merged value equal to the stored one under these keys keeps the stored spelling.
_SAME: dict[str, Callable[[str | None], str | None]] = {
    "name": name_key,
    "domain": domain_key,
    "website": url_key,
    "companyNetworkUrl": url_key,
}


def changes(
    stored: dict[str, Any],
    given: dict[str, Any],
    same: dict[str, Callable[[str | None], str | None]],
) -> dict[str, Any]:
    """The given values that change a record; the same value in another spelling is no change,
    so a merge never churns a stored e-mail, URL or name (nor its updatedAt)."""
    updates: dict[str, Any] = {}
    for col, value in given.items():
        old = stored.get(col)
        key = same.get(col)
        if value == old or (key is not None and old is not None and key(value) == key(old)):
            continue
        updates[col] = value
    return updates


async def create_company(ctx: ApiContext, body: CompanyIn) -> tuple[CompanyCreated, bool]:
    """POST /v1/company in one transaction: nothing is written when the list is bad."""
    now = ctx.now()
    given: dict[str, str | None] = {
        "name": body.name,
        "domain": body.domain,
        "website": body.website,
        "companyNetworkUrl": body.companyNetworkUrl,
    }

    def write(conn: sqlite3.Connection) -> tuple[CompanyCreated, bool]:
        if body.listId is not None:
            require_list(conn, body.listId, "COMPANIES")
        company_id, merged = upsert_company(conn, given, now, body.mergeWithExisting, "")
        if body.listId is not None:
            add_member(conn, body.listId, company_id)
        row = conn.execute(
            "SELECT id, name, domain, companyNetworkUrl, createdAt, updatedAt FROM companies"
            " WHERE id = ?",
            (company_id,),
        ).fetchone()
        return CompanyCreated(
            id=row[0],
            name=row[1],
            domain=row[2],
            companyNetworkUrl=row[3],
            createdAt=row[4],
            updatedAt=row[5],
        ), merged

    return await ctx.store.write(write)
