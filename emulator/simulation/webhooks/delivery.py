"""Webhook deliveries (decisions.md §2): the payload of an event, one HTTP attempt, its log.

Payload: {"eventType", "timestamp", "data": {"contact": {...}, "campaign": {...}, ...event
fields}}, with the subscription's `customFields` values inside `data.contact`: a name is the
contact's own field (column or custom field) when it has one, else the field of its company
(`company.<name>` names the company's explicitly), else null. The secret
travels as is in `X-Webhook-Secret`. Retries are the caller's business: `deliver_once` makes
attempt number `attempt` and records it, with `next_attempt_at` when it failed.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable
from typing import Any

from emulator.outbound.calls import TIMEOUT_SECONDS, Outcome, call
from emulator.store.db import Store
from emulator.wire import Wire, decode, encode

CONTACT_FIELDS = (
    "id",
    "firstName",
    "lastName",
    "professionalEmail",
    "networkProfileUrl",
    "jobTitle",
    "companyId",
)
# Internal columns a custom field name must not reach.
_HIDDEN_COLUMNS = frozenset(
    {"customFields", "emailKey", "networkUrlKey", "domainKey", "nameKey", "doc", "ref"}
)
COMPANY_PREFIX = "company."

SAMPLE_CONTACT: dict[str, Any] = {
    "id": 0,
    "firstName": "Test",
    "lastName": "Contact",
    "professionalEmail": None,
    "networkProfileUrl": None,
    "jobTitle": None,
    "companyId": None,
}
SAMPLE_CAMPAIGN: dict[str, Any] = {"id": 0, "name": "Test campaign", "status": "ACTIVE"}


class Subscription(Wire):
    """A webhook subscription as the delivery side needs it, secret included."""

    id: int
    url: str
    secret: str | None
    events: list[str]
    campaignIds: list[int]
    customFields: list[str]
    enabled: bool


class DeliveryAttempt(Wire):
    id: int  # the row in webhook_deliveries
    webhookId: int
    eventType: str
    attemptNumber: int
    success: bool
    statusCode: int | None
    errorMessage: str | None
    durationMs: int
    createdAt: str


_SUBSCRIPTION_SELECT = (
    "SELECT id, url, secret, events, campaignIds, customFields, enabled FROM webhooks"
)


def _subscription(row: tuple[Any, ...]) -> Subscription:
    return Subscription(
        id=row[0],
        url=row[1],
        secret=row[2],
        events=decode(row[3], list[str]),
        campaignIds=decode(row[4], list[int]),
        customFields=decode(row[5], list[str]),
        enabled=bool(row[6]),
    )


async def load_subscription(store: Store, webhook_id: int) -> Subscription | None:
    row = await store.fetchone(f"{_SUBSCRIPTION_SELECT} WHERE id = ?", (webhook_id,))
    return None if row is None else _subscription(row)


def all_subscriptions(conn: sqlite3.Connection) -> dict[int, Subscription]:
    """Every subscription by id (there are few), on the database thread."""
    return {
        sub.id: sub
        for sub in map(_subscription, conn.execute(f"{_SUBSCRIPTION_SELECT} ORDER BY id"))
    }


def _record(conn: sqlite3.Connection, table: str, record_id: int | None) -> dict[str, Any] | None:
    """A contact or company row as a dict, its custom fields decoded, hidden columns left out."""
    if record_id is None:
        return None
    cursor = conn.execute(f"SELECT * FROM {table} WHERE id = ?", (record_id,))
    row = cursor.fetchone()
    if row is None:
        return None
    record = dict(zip((d[0] for d in cursor.description), row, strict=True))
    custom: Any = decode(record.get("customFields") or "{}")
    fields = {k: v for k, v in record.items() if k not in _HIDDEN_COLUMNS}
    return {"fields": fields, "custom": custom if isinstance(custom, dict) else {}}


def _field(record: dict[str, Any] | None, name: str) -> tuple[bool, Any]:
    """(found, value) of a column or custom field of a `_record`."""
    if record is None:
        return False, None
    for source in (record["fields"], record["custom"]):
        if name in source:
            return True, source[name]
    return False, None


def _contact_data(
    record: dict[str, Any], company: dict[str, Any] | None, custom: list[str]
) -> dict[str, Any]:
    """The payload's contact: the standard fields plus the subscription's custom ones."""
    data = {name: record["fields"][name] for name in CONTACT_FIELDS}
    for name in custom:
        if name.startswith(COMPANY_PREFIX):
            data[name] = _field(company, name.removeprefix(COMPANY_PREFIX))[1]
            continue
        found, value = _field(record, name)
        data[name] = value if found else _field(company, name)[1]
    return data


def _contact(conn: sqlite3.Connection, contact_id: int, custom: list[str]) -> dict[str, Any] | None:
    record = _record(conn, "contacts", contact_id)
    if record is None:
        return None
    company = _record(conn, "companies", record["fields"]["companyId"]) if custom else None
    return _contact_data(record, company, custom)


def _campaign(conn: sqlite3.Connection, campaign_id: int) -> dict[str, Any] | None:
    row = conn.execute(
        "SELECT id, name, status FROM campaigns WHERE id = ?", (campaign_id,)
    ).fetchone()
    return None if row is None else {"id": row[0], "name": row[1], "status": row[2]}


def _payload(
    event_type: str,
    timestamp: str,
    contact: dict[str, Any] | None,
    campaign: dict[str, Any] | None,
    fields: dict[str, Any],
) -> dict[str, Any]:
    return {
        "eventType": event_type,
        "timestamp": timestamp,
        "data": {"contact": contact, "campaign": campaign, **fields},
    }


class Payloads:
    """Event payloads built on the database thread, each contact and campaign read once (an
    event goes to several subscriptions; a chunk of events names the same ones again)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._contacts: dict[int, dict[str, Any] | None] = {}
        self._companies: dict[int, dict[str, Any] | None] = {}
        self._campaigns: dict[int, dict[str, Any] | None] = {}

    def event(
        self,
        custom_fields: list[str],
        event_type: str,
        timestamp: str,
        contact_id: int,
        campaign_id: int,
        fields: dict[str, Any],
    ) -> dict[str, Any]:
        """The delivery body of one event about `contact_id` in `campaign_id`."""
        if contact_id not in self._contacts:
            self._contacts[contact_id] = _record(self.conn, "contacts", contact_id)
        if campaign_id not in self._campaigns:
            self._campaigns[campaign_id] = _campaign(self.conn, campaign_id)
        record = self._contacts[contact_id]
        contact = None
        if record is not None:
            company_id = record["fields"]["companyId"]
            company = None
            if custom_fields and company_id is not None:
                if company_id not in self._companies:
                    self._companies[company_id] = _record(self.conn, "companies", company_id)
                company = self._companies[company_id]
            contact = _contact_data(record, company, custom_fields)
        return _payload(event_type, timestamp, contact, self._campaigns[campaign_id], fields)


def event_payload(
    conn: sqlite3.Connection,
    custom_fields: list[str],
    event_type: str,
    timestamp: str,
    contact_id: int,
    campaign_id: int,
    fields: dict[str, Any],
) -> dict[str, Any]:
    """The delivery body of one event (`Payloads` builds many)."""
    return Payloads(conn).event(
        custom_fields, event_type, timestamp, contact_id, campaign_id, fields
    )


async def sample_payload(store: Store, sub: Subscription, timestamp: str) -> dict[str, Any]:
    """A sample delivery of the first event type the subscription lists, about a real campaign
    of the subscription and one of its contacts."""

    def read(conn: sqlite3.Connection) -> dict[str, Any]:
        campaign_id: int | None = None
        for cid in sorted(sub.campaignIds):
            if _campaign(conn, cid) is not None:
                campaign_id = cid
                break
        if campaign_id is None:
            campaign_id = conn.execute("SELECT MIN(id) FROM campaigns").fetchone()[0]
        member = (
            None
            if campaign_id is None
            else conn.execute(
                "SELECT MIN(contactId) FROM campaign_members WHERE campaignId = ?", (campaign_id,)
            ).fetchone()[0]
        )
        contact_id = member or conn.execute("SELECT MIN(id) FROM contacts").fetchone()[0]
        contact = None if contact_id is None else _contact(conn, contact_id, sub.customFields)
        if contact is None:
            contact = {**SAMPLE_CONTACT, **dict.fromkeys(sub.customFields)}
        campaign = None if campaign_id is None else _campaign(conn, campaign_id)
        fields = {
            "customMessage": "Test delivery from the platform emulator",
            "sentAt": timestamp,
            "messageId": None,
            "content": "This is a test event.",
        }
        event_type = sub.events[0] if sub.events else "TEST"  # fixtures may list none
        return _payload(event_type, timestamp, contact, campaign or SAMPLE_CAMPAIGN, fields)

    return await store.read(read)


JSON_HEADERS = {"Content-Type": "application/json", "Accept": "application/json"}


def delivery_headers(sub: Subscription) -> dict[str, str]:
    headers = dict(JSON_HEADERS)
    if sub.secret is not None:
        headers["X-Webhook-Secret"] = sub.secret
    return headers


INSERT_ATTEMPT = (
    "INSERT INTO webhook_deliveries(webhookId, eventType, payload, statusCode, errorMessage,"
    " attemptNumber, durationMs, createdAt, nextAttemptAt) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def log_attempts(conn: sqlite3.Connection, rows: Iterable[tuple[Any, ...]]) -> None:
    """`attempt_row`s into the log: the one writer of webhook_deliveries."""
    conn.executemany(INSERT_ATTEMPT, rows)


def forget_log(conn: sqlite3.Connection, webhook_id: int) -> None:
    """Drop one subscription's log (the subscription is being deleted)."""
    conn.execute("DELETE FROM webhook_deliveries WHERE webhookId = ?", (webhook_id,))


def attempt_row(
    webhook_id: int,
    event_type: str,
    body: bytes,
    outcome: Outcome,
    attempt: int,
    created: str,
    retry_at: str | None,
) -> tuple[Any, ...]:
    """The parameters of INSERT_ATTEMPT for one attempt (`retry_at` only kept on failure)."""
    return (
        webhook_id,
        event_type,
        body.decode(),
        outcome.statusCode,
        outcome.errorMessage,
        attempt,
        outcome.durationMs,
        created,
        None if outcome.ok else retry_at,
    )


async def deliver_once(
    store: Store,
    sub: Subscription,
    payload: dict[str, Any],
    attempt: int,
    now: Callable[[], str],
    *,
    next_attempt_at: str | None = None,
    timeout: float = TIMEOUT_SECONDS,
) -> DeliveryAttempt:
    """POST `payload` to the subscription url once and log the attempt.

    `next_attempt_at` is stored only when the attempt failed (the retry schedule's mark).
    """
    event_type = str(payload.get("eventType", ""))
    body = encode(payload)
    created = now()
    outcome = await call(
        "POST", sub.url, headers=delivery_headers(sub), content=body, timeout=timeout
    )
    delivery_id = await store.execute(
        INSERT_ATTEMPT,
        attempt_row(sub.id, event_type, body, outcome, attempt, created, next_attempt_at),
    )
    return DeliveryAttempt(
        id=delivery_id,
        webhookId=sub.id,
        eventType=event_type,
        attemptNumber=attempt,
        success=outcome.ok,
        statusCode=outcome.statusCode,
        errorMessage=outcome.errorMessage,
        durationMs=outcome.durationMs,
        createdAt=created,
    )
