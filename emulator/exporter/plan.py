"""Pure export decisions: what to create, update, clear and report (no I/O, Hypothesis-tested).

Every function here takes decoded JSON (`Any`) or plain platform rows and answers plain
values, so the rules of interfaces.md Part A and decisions.md §3 can be checked exhaustively.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeGuard

Kind = Literal["companies", "contacts"]
Severity = Literal["violation", "warning"]

# Syncable property names given as common in interfaces.md ("Sync result item").
COMMON_PROPERTIES: dict[str, frozenset[str]] = {
    "companies": frozenset(
        {"domain", "phone", "accountTier", "totalDeals", "lifetimeValue", "accountOwner",
         "industry", "tags", "lastActivityDate"}
    ),
    "contacts": frozenset(
        {"email", "phone", "mobilePhone", "leadScore", "lifecycleStage", "lastActivityDate",
         "owner", "dealValue", "tags"}
    ),
}
# Sync-back names that land on a platform column; every other name lives in customFields.
CORE_COLUMNS: dict[str, dict[str, str]] = {
    "companies": {"domain": "domain", "phone": "phoneNumber", "industry": "industry"},
    "contacts": {"email": "professionalEmail", "phone": "phones", "mobilePhone": "mobilePhone"},
}
# Clearing these loses how the record is matched: flagged as a warning (decisions.md §3).
WARN_ON_CLEAR = frozenset({"domain", "phone", "email"})
# Keys a CRM echoes when it returns a whole stored record as `properties`: not properties.
ECHO_KEYS = frozenset({"externalId", "crmId", "customFields", "id"})


@dataclass(frozen=True)
class Finding:
    """A contract violation or a tolerated deviation, named after the check it belongs to."""

    severity: Severity
    check: str
    message: str  # the kind of finding: the same text for every record it concerns
    about: str | None = None  # which record or value showed it


# ---------------------------------------------------------------------------------------------
# Sync answers


@dataclass(frozen=True)
class Match:
    crm_id: str
    properties: dict[str, Any] | None  # None: the item had no `properties` object


@dataclass
class SyncPlan:
    """Per asked externalId exactly one of: matched (PUT), failed, new (POST)."""

    matched: dict[str, Match] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    new: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


def _is_id(value: Any) -> TypeGuard[str]:
    return isinstance(value, str) and value != ""


def _asked_id(item: Any, asked: set[str], check: str, what: str, findings: list[Finding]) -> str | None:
    """The item's externalId when it names an asked record; a violation otherwise."""
    ext = item.get("externalId") if isinstance(item, dict) else None
    if not _is_id(ext):
        findings.append(Finding("violation", check, f"{what} without a string externalId", repr(item)[:300]))
        return None
    if ext not in asked:
        findings.append(Finding("violation", check, f"{what} for an externalId that was not asked", f"externalId {ext!r}"))
        return None
    return ext


def _has_results(body: Any, check: str, asked: Sequence[str], plan: SyncPlan | WritePlan) -> bool:
    """Whether `body` has a `results` array; if not, every asked record fails as a violation."""
    if isinstance(body, dict) and isinstance(body.get("results"), list):
        return True
    reason = f"{check} answer is not an object with a `results` array"
    plan.findings.append(Finding("violation", check, reason))
    plan.failed = {x: reason for x in asked}
    return False


def plan_sync(kind: Kind, asked: Sequence[str], body: Any) -> SyncPlan:
    """Decide each asked record's fate from a decoded sync answer (decisions.md §3)."""
    check = f"POST /{kind}/sync"
    plan = SyncPlan()
    if not _has_results(body, check, asked, plan):
        return plan
    asked_set = set(asked)
    errors = body.get("errors")
    if errors is None:
        errors = []
    elif not isinstance(errors, list):
        plan.findings.append(Finding("violation", check, "`errors` is not an array"))
        errors = []
    failed: dict[str, str] = {}
    for item in errors:
        ext = _asked_id(item, asked_set, check, "error item", plan.findings)
        if ext is None:
            continue
        message = item.get("error")
        failed.setdefault(ext, f"CRM sync error: {message}" if isinstance(message, str) else "CRM sync error")
    matched: dict[str, Match] = {}
    for item in body["results"]:
        if not isinstance(item, dict):
            plan.findings.append(Finding("violation", check, "result item is not an object", repr(item)[:300]))
            continue
        ext = _asked_id(item, asked_set, check, "result item", plan.findings)
        if ext is None:
            continue
        crm_id, props = item.get("crmId"), item.get("properties")
        if not _is_id(crm_id):
            plan.findings.append(Finding("violation", check, "sync result without a string crmId", f"externalId {ext}: crmId {crm_id!r}"))
            failed.setdefault(ext, f"sync result without a string crmId ({crm_id!r})")
            continue
        if props is not None and not isinstance(props, dict):
            reason = "sync result `properties` is not an object"
            plan.findings.append(Finding("violation", check, reason, f"externalId {ext}"))
            failed.setdefault(ext, reason)
            continue
        if ext in failed:
            if ext not in matched:
                plan.findings.append(
                    Finding("violation", check, "externalId both in `results` and `errors`", f"externalId {ext}")
                )
            continue
        previous = matched.get(ext)
        if previous is not None:
            if previous.crm_id != crm_id:
                reason = f"sync matched it to two CRM records ({previous.crm_id}, {crm_id})"
                plan.findings.append(Finding("violation", check, "sync matched one record to two CRM records", f"externalId {ext}: {reason}"))
                failed[ext] = reason
                del matched[ext]
            else:
                plan.findings.append(Finding("warning", check, "externalId returned twice in `results`", f"externalId {ext}"))
            continue
        matched[ext] = Match(crm_id, props)
        if props is not None and (ECHO_KEYS & props.keys()):
            plan.findings.append(
                Finding("warning", check, "`properties` carry a whole stored record", f"externalId {ext}")
            )
    for ext in asked:
        if ext in failed:
            plan.failed[ext] = failed[ext]
        elif ext in matched:
            plan.matched[ext] = matched[ext]
        elif ext not in plan.failed and ext not in plan.matched:
            plan.new.append(ext)
    plan.new = list(dict.fromkeys(plan.new))
    return plan


# ---------------------------------------------------------------------------------------------
# Create and update answers


@dataclass
class WritePlan:
    """Outcome of a POST (created: externalId -> crmId) or PUT (updated) batch."""

    created: dict[str, str] = field(default_factory=dict)
    updated: set[str] = field(default_factory=set)
    failed: dict[str, str] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)


def plan_create(kind: Kind, asked: Sequence[str], status: int, body: Any) -> WritePlan:
    """Map a POST /{kind} answer back to the asked externalIds."""
    check = f"POST /{kind}"
    plan = WritePlan()
    if status != 201:
        plan.findings.append(Finding("warning", check, f"answered {status} where 201 is documented"))
    if not _has_results(body, check, asked, plan):
        return plan
    asked_set = set(asked)
    for item in body.get("errors") or []:
        # Not documented for create, but a CRM telling us why is better than silence.
        ext = item.get("externalId") if isinstance(item, dict) else None
        if _is_id(ext) and ext in asked_set:
            plan.failed.setdefault(ext, f"CRM create error: {item.get('error')}")
    for item in body["results"]:
        ext = _asked_id(item, asked_set, check, "result item", plan.findings)
        if ext is None:
            continue
        crm_id = item.get("crmId")
        if not _is_id(crm_id):
            reason = f"create result without a string crmId ({crm_id!r})"
            plan.findings.append(Finding("violation", check, "create result without a string crmId", f"externalId {ext}: crmId {crm_id!r}"))
            plan.failed.setdefault(ext, reason)
            continue
        if ext in plan.created and plan.created[ext] != crm_id:
            reason = f"created twice ({plan.created[ext]}, {crm_id})"
            plan.findings.append(Finding("violation", check, "one record created twice", f"externalId {ext}: {reason}"))
            plan.failed.setdefault(ext, reason)
            continue
        plan.created.setdefault(ext, crm_id)
    for ext in asked:
        if ext in plan.failed:
            plan.created.pop(ext, None)
        elif ext not in plan.created:
            reason = "no result for this record in the create answer"
            plan.findings.append(Finding("violation", check, reason, f"externalId {ext}"))
            plan.failed[ext] = reason
    return plan


def plan_update(kind: Kind, asked: Sequence[tuple[str, str]], body: Any) -> WritePlan:
    """Map a PUT /{kind} answer ({results: [{crmId, success, error?}]}) to (externalId, crmId)s."""
    check = f"PUT /{kind}"
    plan = WritePlan()
    if not _has_results(body, check, [ext for ext, _ in asked], plan):
        return plan
    by_crm: dict[str, list[str]] = {}
    for ext, crm_id in asked:
        by_crm.setdefault(crm_id, []).append(ext)
    answered: dict[str, tuple[bool, str]] = {}
    for item in body["results"]:
        answered_id = item.get("crmId") if isinstance(item, dict) else None
        if not _is_id(answered_id):
            plan.findings.append(Finding("violation", check, "result item without a string crmId", repr(item)[:300]))
            continue
        crm_id = answered_id
        if crm_id not in by_crm:
            plan.findings.append(Finding("violation", check, "result for a crmId that was not sent", f"crmId {crm_id!r}"))
            continue
        success = item.get("success")
        if not isinstance(success, bool):
            plan.findings.append(Finding("violation", check, "`success` is not a boolean", f"crmId {crm_id}"))
            answered.setdefault(crm_id, (False, "update result without a boolean `success`"))
            continue
        error = item.get("error")
        reason = f"CRM update error: {error}" if isinstance(error, str) else "CRM update failed"
        # Any failure for a crmId wins over a success for it.
        if crm_id not in answered or not success:
            answered[crm_id] = (success, reason)
    for crm_id, exts in by_crm.items():
        if crm_id not in answered:
            reason = "no result for this record in the update answer"
            plan.findings.append(Finding("violation", check, reason, f"crmId {crm_id}"))
            for ext in exts:
                plan.failed[ext] = reason
            continue
        success, reason = answered[crm_id]
        for ext in exts:
            if success:
                plan.updated.add(ext)
            else:
                plan.failed[ext] = reason
    return plan


# ---------------------------------------------------------------------------------------------
# Associations and tasks


@dataclass
class LinkPlan:
    """What a POST /associations answer says: links made, links refused, findings."""

    created: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)  # (contactCRMId, why)
    findings: list[Finding] = field(default_factory=list)


def plan_associations(sent: Sequence[str], body: Any) -> LinkPlan:
    """Map an answer {success, created?, errors?} to the links sent (contact CRM ids in order).

    `created` is what counts; without it, every link not in `errors` of a successful answer.
    A `created` that is not a count between 0 and the links sent fails every link.
    """
    check = "POST /associations"
    plan = LinkPlan()
    answer = body if isinstance(body, dict) else {}
    success = answer.get("success")
    if not isinstance(success, bool):
        plan.findings.append(Finding("violation", check, "answer is not {success: boolean, ...}"))
    errors = answer.get("errors")
    for e in errors if isinstance(errors, list) else []:
        if isinstance(e, dict):
            plan.failed.append((str(e.get("contactCRMId")), f"CRM association error: {e.get('error')}"))
    if errors is not None and not isinstance(errors, list):
        plan.findings.append(Finding("violation", check, "`errors` is not an array"))
    created = answer.get("created")
    if created is None:
        if success is False and not plan.failed:
            plan.failed = [(c, "CRM answered success: false") for c in sent]
        plan.created = len(sent) - len(plan.failed)
        return plan
    if not isinstance(created, int) or isinstance(created, bool) or not 0 <= created <= len(sent):
        plan.findings.append(
            Finding("violation", check, "`created` is not a count of the links sent", repr(created)[:100])
        )
        plan.created = 0
        plan.failed = [(c, "association answer without a usable `created` count") for c in sent]
        return plan
    # Fewer than sent without errors is no fault: a link that already existed is not created.
    plan.created = created
    return plan


def task_list(body: Any, check: str) -> tuple[list[Any] | None, list[Finding]]:
    """The array of tasks a POST or PATCH /tasks/batch answers (a wrapped one is tolerated)."""
    if isinstance(body, list):
        return body, []
    if isinstance(body, dict):
        for key in ("tasks", "results", "data"):
            if isinstance(body.get(key), list):
                return body[key], [Finding("warning", check, "tasks wrapped in an object, not a bare array")]
    return None, [Finding("violation", check, "answer is not an array of tasks")]


@dataclass
class ReadBackPlan:
    """What reading tasks back found, per asked CRM task id."""

    completed: dict[str, str | None] = field(default_factory=dict)  # crm id -> completedAt
    open: set[str] = field(default_factory=set)
    unknown: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


def plan_read_back(asked: Sequence[str], tasks: Sequence[Any], check: str) -> ReadBackPlan:
    """Sort asked task ids by what the CRM answered: completed, open, or left out (unknown)."""
    plan = ReadBackPlan()
    asked_set = set(asked)
    answered: set[str] = set()
    for task in tasks:
        task_id = task.get("id") if isinstance(task, dict) else None
        if isinstance(task_id, int) and not isinstance(task_id, bool):
            task_id = str(task_id)
        if not _is_id(task_id):
            plan.findings.append(Finding("violation", check, "task without a string `id`", repr(task)[:300]))
            continue
        if task_id not in asked_set:
            plan.findings.append(Finding("violation", check, "task for an id that was not asked", f"id {task_id!r}"))
            continue
        answered.add(task_id)
        completed, at = task.get("completed"), task.get("completedAt")
        if not isinstance(completed, bool):
            plan.findings.append(Finding("violation", check, "task without a boolean `completed`", f"id {task_id}"))
            continue
        if completed:
            if not isinstance(at, str):
                plan.findings.append(Finding("warning", check, "completed task without `completedAt`", f"id {task_id}"))
            plan.completed[task_id] = at if isinstance(at, str) else None
        else:
            plan.open.add(task_id)
    plan.unknown = [t for t in dict.fromkeys(asked) if t not in answered]
    return plan


# ---------------------------------------------------------------------------------------------
# The null-clearing rule


def _text(value: Any) -> str:
    """Core columns are text; a CRM that sends a number or a list still gets it stored."""
    if isinstance(value, str):
        return value
    return json.dumps(value) if isinstance(value, (list, dict)) else str(value)


@dataclass(frozen=True)
class Cleared:
    name: str
    previous: Any
    core: bool


@dataclass
class PropertyChange:
    """What a sync `properties` object does to one platform record."""

    columns: dict[str, Any] = field(default_factory=dict)  # platform column -> new value/None
    custom: dict[str, Any] = field(default_factory=dict)  # the whole new customFields object
    synced: frozenset[str] = frozenset()  # custom property names synced onto the record now
    cleared: list[Cleared] = field(default_factory=list)
    changed: bool = False


def apply_properties(
    kind: Kind,
    columns: Mapping[str, Any],
    custom: Mapping[str, Any],
    synced_before: Iterable[str],
    properties: Mapping[str, Any],
) -> PropertyChange:
    """The rule of decisions.md §3, applied exactly.

    `columns` holds the record's current core column values (CORE_COLUMNS targets), `custom`
    its customFields, `synced_before` the custom names an earlier sync put there.
    Every syncable name (common ones + synced_before) absent or null is cleared; every present
    one overwrites; other present names become custom fields (and syncable from now on).
    """
    core = CORE_COLUMNS[kind]
    common = COMMON_PROPERTIES[kind]
    synced = set(synced_before)
    syncable = common | synced if synced else common
    props = properties
    if not ECHO_KEYS.isdisjoint(props):
        props = {k: v for k, v in props.items() if k not in ECHO_KEYS}
    custom_out = dict(custom)
    columns_out: dict[str, Any] = {}
    cleared: list[Cleared] = []
    for name in syncable.union(props):
        value = props.get(name)
        column = core.get(name)
        if column is not None:
            previous = columns.get(column)
            if value is None:
                if previous is not None:
                    cleared.append(Cleared(name, previous, name in WARN_ON_CLEAR))
                    columns_out[column] = None
            else:
                text = value if isinstance(value, str) else _text(value)
                if previous != text:
                    columns_out[column] = text
        elif value is None:
            previous = custom_out.pop(name, None)
            if previous is not None:
                cleared.append(Cleared(name, previous, False))
            synced.discard(name)
        else:
            custom_out[name] = value
            if name not in common:
                synced.add(name)
    changed = bool(columns_out) or custom_out != custom
    return PropertyChange(columns_out, custom_out, frozenset(synced), cleared, changed)


# ---------------------------------------------------------------------------------------------
# Platform records -> Part A "as sent" shapes


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


def company_create_item(row: Mapping[str, Any], owner_id: str | None) -> dict[str, Any]:
    """POST /companies item: the as-sent fields plus the create table's own names."""
    item = company_as_sent(row)
    _put(item, "numberOfEmployees", row.get("numberOfEmployees"))
    _put(item, "ownerId", owner_id)
    return item


# (wire name, platform column) pairs a contact item copies as they are.
_CONTACT_FIELDS = (
    ("email", "professionalEmail"), ("firstName", "firstName"), ("lastName", "lastName"),
    ("phone", "phones"), ("mobilePhone", "mobilePhone"), ("title", "jobTitle"),
    ("networkUrl", "networkProfileUrl"), ("location", "contactCountry"),
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


def created_id(body: Any) -> str | None:
    """The `id` a POST /activities or POST /tasks answer must carry (numbers tolerated)."""
    if isinstance(body, dict):
        value = body.get("id")
        if _is_id(value):
            return str(value)
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
    return None


# ---------------------------------------------------------------------------------------------
# Engagement values


ENGAGEMENT_ORDER = (
    "Added to Campaign",
    "Connection Request Sent",
    "Connection Accepted",
    "Message Sent",
    "Message Replied",
)
CONTACT_ENGAGEMENT = (
    "campaignEngagementStatus",
    "campaignSequenceStatus",
    "campaignSequenceDetails",
    "campaignOpens",
    "campaignClicks",
    "campaignOpenAnalysis",
    "campaignClickAnalysis",
    "campaignReplyAnalysis",
    "activities",
    "senders",
    "campaigns",
)
_CONTACT_ONLY = frozenset(
    {"campaignSequenceDetails", "campaignOpenAnalysis", "campaignClickAnalysis",
     "campaignReplyAnalysis"}
)
COMPANY_ENGAGEMENT = tuple(f for f in CONTACT_ENGAGEMENT if f not in _CONTACT_ONLY)
ENGAGEMENT_FIELDS: dict[str, tuple[str, ...]] = {
    "contacts": CONTACT_ENGAGEMENT,
    "companies": COMPANY_ENGAGEMENT,
}


@dataclass(frozen=True)
class Membership:
    """One campaign_members row with what engagement values need from its campaign."""

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


def chunks(items: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]
