"""Engagement values of decisions.md §3: the Engagement table's fields of one record.

Pure: campaign memberships and the activity log in, field values out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from emulator.exporter.terms import Kind
from emulator.platform.engagement import ENGAGEMENT_FIELDS, ENGAGEMENT_ORDER


class Membership(NamedTuple):
    """One campaign_members row with what engagement values need from its campaign (a
    tuple: read by the thousand per push, cheaper to build than a frozen dataclass)."""

    campaign_name: str
    sender_name: str | None
    step_types: tuple[str, ...]
    sequence_status: str
    engagement_status: str
    opens: int
    clicks: int
    replies: int
    added_at: str


def _rank(status: str) -> int:
    for i, prefix in enumerate(ENGAGEMENT_ORDER):
        if status.startswith(prefix):
            return i
    return -1


def _analysis(n: int) -> str:
    return f"Yes ({n})" if n > 0 else "No"


def _distinct(values: Iterable[str | None]) -> str:
    return ", ".join(dict.fromkeys(v for v in values if v))


def engagement_values(
    kind: Kind, members: Sequence[Membership], activity_log: Sequence[str]
) -> dict[str, str]:
    """Internal engagement field -> value, in the shapes of the Engagement table."""
    if not members:
        return {}
    # The most advanced membership speaks for the record; the latest one breaks ties.
    lead = max(members, key=lambda m: (_rank(m.engagement_status), m.added_at))
    opens = sum(m.opens for m in members)
    clicks = sum(m.clicks for m in members)
    replies = sum(m.replies for m in members)
    values = {
        "campaignEngagementStatus": lead.engagement_status,
        "campaignSequenceStatus": lead.sequence_status,
        "campaignSequenceDetails": ", ".join(lead.step_types),
        "campaignOpens": str(opens),
        "campaignClicks": str(clicks),
        "campaignOpenAnalysis": _analysis(opens),
        "campaignClickAnalysis": _analysis(clicks),
        "campaignReplyAnalysis": _analysis(replies),
        "activities": ", ".join(activity_log),
        "senders": _distinct(m.sender_name for m in members),
        "campaigns": _distinct(m.campaign_name for m in members),
    }
    return {k: values[k] for k in ENGAGEMENT_FIELDS[kind]}


def engagement_item(
    crm_id: str, values: Mapping[str, str], mapping: Mapping[str, str]
) -> dict[str, Any] | None:
    """A PUT item carrying only the mapped CRM field names; None when nothing is mapped."""
    item: dict[str, Any] = {"crmId": crm_id}
    for internal, crm_name in mapping.items():
        if internal in values:
            item[crm_name] = values[internal]
    return item if len(item) > 1 else None
