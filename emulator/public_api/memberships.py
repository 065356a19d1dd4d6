"""The campaigns a contact belongs to, with its progress and conversation in each."""

from __future__ import annotations

from emulator.public_api.context import ApiContext
from emulator.wire import Wire


class Membership(Wire):
    campaignId: int
    campaignName: str
    campaignStatus: str
    sequenceStatus: str
    engagementStatus: str
    stepIndex: int
    nextActionAt: str | None
    opens: int
    clicks: int
    replies: int
    addedAt: str
    conversationId: int | None


_SELECT = (
    "SELECT m.campaignId, c.name, c.status, m.sequenceStatus, m.engagementStatus, m.stepIndex,"
    " m.nextActionAt, m.opens, m.clicks, m.replies, m.addedAt,"
    " (SELECT min(v.id) FROM conversations v"
    "  WHERE v.contactId = m.contactId AND v.campaignId = m.campaignId)"
    " FROM campaign_members m JOIN campaigns c ON c.id = m.campaignId"
    " WHERE m.contactId = ? ORDER BY m.campaignId"
)


async def contact_memberships(ctx: ApiContext, contact_id: int) -> list[Membership]:
    """Every campaign membership of one contact, by campaign id."""
    rows = await ctx.store.fetchall(_SELECT, (contact_id,))
    names = Membership.__struct_fields__
    return [Membership(**dict(zip(names, row, strict=True))) for row in rows]
