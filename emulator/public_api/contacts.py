"""Contacts of the platform as /v1 shows them: listing, reading, creating and merging."""

from __future__ import annotations

from typing import Any

from emulator.errors import NotFound
from emulator.public_api.context import ApiContext, decode_json_object, link
from emulator.public_api.schemas import CompanyRef, Contact

CONTACT_FIELDS = tuple(Contact.__struct_fields__)

_SELECT = (
    "SELECT c.id, c.firstName, c.lastName, c.jobTitle, c.networkProfileUrl, c.professionalEmail,"
    " c.personalEmails, c.mobilePhone, c.phones, c.imageUrl, c.companyId,"
    " co.id, co.name, co.domain, co.companyNetworkUrl,"
    " c.emailVerificationStatus, c.contactCountry, c.networkHeadline, c.numberOfConnections,"
    " c.contactCRMId, c.leadCRMId, c.createdAt, c.updatedAt, c.smartFieldExplanations"
    " FROM contacts c LEFT JOIN companies co ON co.id = c.companyId"
)


def contact_from_row(row: tuple[Any, ...], template: str | None) -> Contact:
    company = None if row[11] is None else CompanyRef(
        id=row[11], name=row[12], domain=row[13], companyNetworkUrl=row[14]
    )
    return Contact(
        id=row[0], firstName=row[1], lastName=row[2], jobTitle=row[3], networkProfileUrl=row[4],
        professionalEmail=row[5], personalEmails=row[6], mobilePhone=row[7], phones=row[8],
        imageUrl=row[9], companyId=row[10], company=company, emailVerificationStatus=row[15],
        contactCountry=row[16], networkHeadline=row[17], numberOfConnections=row[18],
        contactCRMId=row[19], leadCRMId=row[20], isInCRM=row[19] is not None,
        createdAt=row[21], updatedAt=row[22],
        smartFieldExplanations=decode_json_object(row[23]),
        contactCRMUrl=link(template, row[19]),
    )


class ContactFilter:
    """The WHERE clause of a contacts listing, built from validated parameters."""

    def __init__(
        self,
        search: str | None = None,
        company_id: int | None = None,
        list_id: int | None = None,
        updated_from: str | None = None,
        updated_to: str | None = None,
    ) -> None:
        clauses: list[str] = []
        params: list[Any] = []
        if search:
            like = f"%{_escape_like(search)}%"
            clauses.append(
                "(firstName LIKE ? ESCAPE '\\' OR lastName LIKE ? ESCAPE '\\'"
                " OR professionalEmail LIKE ? ESCAPE '\\'"
                " OR (firstName || ' ' || lastName) LIKE ? ESCAPE '\\')"
            )
            params += [like] * 4
        if company_id is not None:
            clauses.append("companyId = ?")
            params.append(company_id)
        if list_id is not None:
            clauses.append("id IN (SELECT entityId FROM list_members WHERE listId = ?)")
            params.append(list_id)
        if updated_from is not None:
            clauses.append("updatedAt >= ?")
            params.append(updated_from)
        if updated_to is not None:
            clauses.append("updatedAt <= ?")
            params.append(updated_to)
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        self.sql = f"SELECT id FROM contacts{where} ORDER BY id"
        self.params = tuple(params)


def _escape_like(term: str) -> str:
    return term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


async def list_contacts(
    ctx: ApiContext, flt: ContactFilter, page: int, page_size: int
) -> tuple[int, list[Contact]]:
    total, ids = await ctx.pages.page(flt.sql, flt.params, page, page_size)
    return total, await contacts_by_ids(ctx, ids)


async def contacts_by_ids(ctx: ApiContext, ids: list[int]) -> list[Contact]:
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    rows = await ctx.store.fetchall(f"{_SELECT} WHERE c.id IN ({marks}) ORDER BY c.id", ids)
    template = (await ctx.links()).contact
    return [contact_from_row(row, template) for row in rows]


async def get_contact(ctx: ApiContext, contact_id: int) -> Contact:
    found = await contacts_by_ids(ctx, [contact_id])
    if not found:
        raise NotFound(f"Contact {contact_id} not found")
    return found[0]
