"""Campaigns and sender identities as /v1 lists them (pagination envelope)."""

from __future__ import annotations

from typing import Any

from emulator.public_api.context import ApiContext
from emulator.public_api.listing import Where, page_of
from emulator.public_api.schemas import Campaign, Identity, Ref

CAMPAIGN_STATUSES = ("DRAFT", "PENDING", "ACTIVE", "COMPLETED")

_CAMPAIGN_SELECT = (
    "SELECT t.id, t.name, t.description, t.status, t.createdBy, COALESCE(u.name, ''),"
    " t.crmOwnerId, t.senderIdentityId, COALESCE(i.name, ''), t.createdAt"
    " FROM campaigns t LEFT JOIN users u ON u.id = t.createdBy"
    " LEFT JOIN identities i ON i.id = t.senderIdentityId"
)

_IDENTITY_SELECT = (
    "SELECT t.id, t.name, t.firstName, t.lastName, t.jobTitle, t.email, t.networkUrl,"
    " t.timezone, t.createdAt FROM identities t"
)


def _campaign(row: tuple[Any, ...]) -> Campaign:
    return Campaign(
        id=row[0],
        name=row[1],
        description=row[2],
        status=row[3],
        createdBy=Ref(id=row[4], name=row[5]),
        crmOwnerId=row[6],
        senderIdentity=Ref(id=row[7], name=row[8]),
        createdAt=row[9],
    )


def _identity(row: tuple[Any, ...]) -> Identity:
    return Identity(
        id=row[0],
        name=row[1],
        firstName=row[2],
        lastName=row[3],
        jobTitle=row[4],
        email=row[5],
        networkUrl=row[6],
        timezone=row[7],
        createdAt=row[8],
    )


async def list_campaigns(
    ctx: ApiContext,
    page: int,
    page_size: int,
    search: str | None = None,
    identity_id: int | None = None,
    status: str | None = None,
) -> tuple[int, list[Campaign]]:
    where = Where().search(search, "name")
    if identity_id is not None:
        where.add("senderIdentityId = ?", identity_id)
    if status is not None:
        where.add("status = ?", status)
    return await page_of(ctx, "campaigns", where, page, page_size, _CAMPAIGN_SELECT, _campaign)


async def list_identities(
    ctx: ApiContext, page: int, page_size: int, search: str | None = None
) -> tuple[int, list[Identity]]:
    where = Where().search(search, "name")
    return await page_of(ctx, "identities", where, page, page_size, _IDENTITY_SELECT, _identity)
