"""Platform records as the Part A requests carry them: sync, create and update items, activities.

Pure: platform rows in, request bodies out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


def _put(item: dict[str, Any], key: str, value: Any) -> None:
    if value is not None and value != "":
        item[key] = value


def _join(*parts: str | None) -> str | None:
    text = ", ".join(p for p in parts if p)
    return text or None


def _year(value: Any) -> int | None:
    text = str(value).strip() if value is not None else ""
    return int(text) if text.isdigit() else None


def company_as_sent(row: Mapping[str, Any]) -> dict[str, Any]:
    """A platform company as sync and update items carry it (interfaces.md Part A)."""
    item: dict[str, Any] = {"externalId": str(row["id"]), "name": row["name"]}
    _put(item, "domain", row.get("domain"))
    _put(item, "website", row.get("website"))
    _put(item, "industry", row.get("industry"))
    _put(item, "employeeCount", row.get("numberOfEmployees"))
    _put(item, "employeeRange", row.get("rangeOfEmployees"))
    _put(item, "revenue", row.get("revenueRange"))
    _put(item, "foundedYear", _year(row.get("yearfounded")))
    _put(item, "description", row.get("description"))
    _put(item, "location", _join(row.get("streetAddress"), row.get("city"), row.get("country")))
    _put(item, "city", row.get("city"))
    _put(item, "country", row.get("country"))
    _put(item, "phone", row.get("phoneNumber"))
    _put(item, "companyNetworkUrl", row.get("companyNetworkUrl"))
    custom = row.get("customFields")
    if custom:
        item["customFields"] = custom
    return item


def company_create_item(
    row: Mapping[str, Any], owner_id: str | None, as_sent: dict[str, Any] | None = None
) -> dict[str, Any]:
    """POST /companies item: the as-sent fields plus the create table's own names. `as_sent`:
    `company_as_sent(row)` made already (extended in place)."""
    item = company_as_sent(row) if as_sent is None else as_sent
    _put(item, "numberOfEmployees", row.get("numberOfEmployees"))
    _put(item, "ownerId", owner_id)
    return item


# (wire name, platform column) pairs a contact item copies as they are.
_CONTACT_FIELDS = (
    ("email", "professionalEmail"),
    ("firstName", "firstName"),
    ("lastName", "lastName"),
    ("phone", "phones"),
    ("mobilePhone", "mobilePhone"),
    ("title", "jobTitle"),
    ("networkUrl", "networkProfileUrl"),
    ("location", "contactCountry"),
    ("country", "contactCountry"),
)


def contact_as_sent(row: Mapping[str, Any], company_name: str | None) -> dict[str, Any]:
    """A platform contact as sync and update items carry it."""
    item: dict[str, Any] = {"externalId": str(row["id"])}
    for wire, column in _CONTACT_FIELDS:
        value = row.get(column)
        if value is not None and value != "":
            item[wire] = value
    full = " ".join(p for p in (row.get("firstName"), row.get("lastName")) if p)
    if full:
        item["fullName"] = full
    if company_name:
        item["company"] = company_name
    custom = row.get("customFields")
    if custom:
        item["customFields"] = custom
    return item


def with_owner(item: dict[str, Any], owner_id: str | None) -> dict[str, Any]:
    if owner_id is not None:
        item["ownerId"] = owner_id
    return item


def update_item(as_sent: dict[str, Any], crm_id: str) -> dict[str, Any]:
    return {"crmId": crm_id, **as_sent}


# ---------------------------------------------------------------------------------------------
# Activities


ACTIVITY_TYPES = {
    "NETWORK_MESSAGE": "NETWORK",
    "INMAIL": "NETWORK_INMAIL",
    "CONNECTION_REQUEST": "NETWORK_CONNECTION",
    "EMAIL": "EMAIL",
}
MESSAGE_STEPS = frozenset(ACTIVITY_TYPES)
_EVENT_NAMES = {
    ("NETWORK", "OUTBOUND"): "Message sent",
    ("NETWORK", "INBOUND"): "Message received",
    ("NETWORK_INMAIL", "OUTBOUND"): "InMail sent",
    ("NETWORK_INMAIL", "INBOUND"): "InMail received",
    ("NETWORK_CONNECTION", "OUTBOUND"): "Connection request sent",
    ("NETWORK_CONNECTION", "INBOUND"): "Connection request accepted",
    ("EMAIL", "OUTBOUND"): "Email sent",
    ("EMAIL", "INBOUND"): "Email received",
}


def activity_type(message_type: str) -> str:
    return ACTIVITY_TYPES[message_type]


def direction(is_contact_sender: bool) -> str:
    return "INBOUND" if is_contact_sender else "OUTBOUND"


def event_name(message_type: str, is_contact_sender: bool) -> str:
    """The spec's event-table name of a message ("Message sent", "Email received", ...)."""
    return _EVENT_NAMES[(activity_type(message_type), direction(is_contact_sender))]


def sequence_count(step_types: Sequence[str]) -> int:
    """Messages a sequence sends: its CONNECTION_REQUEST, NETWORK_MESSAGE, INMAIL, EMAIL steps."""
    return sum(1 for t in step_types if t in MESSAGE_STEPS)


@dataclass(frozen=True)
class MessageView:
    """What the subject and body of one activity need from the store."""

    id: int
    type: str
    is_contact_sender: bool
    subject: str | None
    content: str | None
    sequence_index: int | None
    sequence_count: int
    sender_name: str | None
    sender_company: str | None
    contact_first: str | None
    contact_last: str | None
    contact_company: str | None
    occurred_at: str


def activity_subject(m: MessageView) -> str:
    """Subject formats of interfaces.md (Activity)."""
    # Inbound first: a reply by e-mail keeps the spec's inbound form, not the mail's subject.
    if m.is_contact_sender:
        name = " ".join(p for p in (m.contact_first, m.contact_last) if p)
        return f"[{m.contact_company or ''}] {name}".rstrip()
    prefix = f"[{m.sequence_index}/{m.sequence_count}] " if m.sequence_index is not None else ""
    if m.type == "EMAIL" and m.subject:
        return f"{prefix}{m.subject}"
    return f"{prefix}[FROM {m.sender_company or ''}] {m.sender_name or ''}".rstrip()


def activity_body(
    m: MessageView, contact_crm_id: str | None, company_crm_id: str | None, owner_id: str | None
) -> dict[str, Any]:
    """POST /activities request for one conversation message."""
    body: dict[str, Any] = {
        "type": activity_type(m.type),
        "subject": activity_subject(m),
        "direction": direction(m.is_contact_sender),
        "occurredAt": m.occurred_at,
    }
    _put(body, "body", m.content)
    _put(body, "ownerId", owner_id)
    _put(body, "contactId", contact_crm_id)
    _put(body, "companyId", company_crm_id)
    body["metadata"] = {
        "messageId": str(m.id),
        "sequenceIndex": m.sequence_index,
        "sequenceMessageCount": m.sequence_count,
    }
    return body
