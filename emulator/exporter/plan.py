"""The contract checks of the export: what each CRM answer means and what it breaks.

Every function here takes decoded JSON (`Any`) and answers plain values (no I/O, Hypothesis-
tested), so the rules of interfaces.md Part A and decisions.md §3 can be checked exhaustively.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeGuard

# Re-exported: callers outside the exporter read these names from plan.
from emulator.exporter.engagement import engagement_values as engagement_values
from emulator.exporter.properties import ECHO_KEYS, echoes_record
from emulator.exporter.terms import Finding as Finding
from emulator.exporter.terms import Kind as Kind

# ---------------------------------------------------------------------------------------------
# Health and users


# Statuses that say the endpoint does not exist at all (not that a call failed).
MISSING_ENDPOINT = frozenset({404, 405, 501})


def check_health(body: Any) -> list[Finding]:
    """GET /health's JSON body should be {status: string}; None: no JSON body to check."""
    if body is None or (isinstance(body, dict) and isinstance(body.get("status"), str)):
        return []
    return [Finding("warning", "GET /health", "body is not {status: string}")]


@dataclass
class UsersPlan:
    """What a GET /users answer says: whether owners can be selected, how many users."""

    owner_selection: bool
    users: int | None = None
    findings: list[Finding] = field(default_factory=list)


def plan_users(status: int, body: Any, owner_id: str | None, error: str | None = None) -> UsersPlan:
    """Owner selection is on only when GET /users answers a users array (a wrapped one is
    tolerated); `body` is the decoded 2xx answer (None: not JSON), `error` why no answer came."""
    check = "GET /users"
    if status in MISSING_ENDPOINT:
        return UsersPlan(False)  # optional endpoint: no owners, no fault
    if not 200 <= status < 300:
        answered = f"answered {status}" if status else "no answer"
        return UsersPlan(
            False, findings=[Finding("warning", check, f"{answered}; owner selection off", error)]
        )
    users = (
        body
        if isinstance(body, list)
        else next(
            (
                body[k]
                for k in ("users", "results", "data")
                if isinstance(body, dict) and isinstance(body.get(k), list)
            ),
            None,
        )
    )
    if users is None:
        return UsersPlan(
            False, findings=[Finding("violation", check, "answer is not a users array")]
        )
    plan = UsersPlan(True, len(users))
    ids = {str(u["id"]) for u in users if isinstance(u, dict) and "id" in u}
    if len(ids) < len(users):
        plan.findings.append(Finding("warning", check, "user item without an id"))
    if owner_id is not None and owner_id not in ids:
        plan.findings.append(
            Finding("warning", check, "ownerId is not among the CRM's users", f"ownerId {owner_id}")
        )
    return plan


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


def is_id(value: Any) -> TypeGuard[str]:
    return isinstance(value, str) and value != ""


def _asked_id(
    item: Any, asked: set[str], check: str, what: str, findings: list[Finding]
) -> str | None:
    """The item's externalId when it names an asked record; a violation otherwise."""
    ext = item.get("externalId") if isinstance(item, dict) else None
    if not is_id(ext):
        findings.append(
            Finding("violation", check, f"{what} without a string externalId", repr(item)[:300])
        )
        return None
    if ext not in asked:
        findings.append(
            Finding(
                "violation",
                check,
                f"{what} for an externalId that was not asked",
                f"externalId {ext!r}",
            )
        )
        return None
    return ext


def _has_results(body: Any, check: str, asked: Sequence[str], plan: SyncPlan | WritePlan) -> bool:
    """Whether `body` has a `results` array; if not, every asked record fails as a violation."""
    if isinstance(body, dict) and isinstance(body.get("results"), list):
        return True
    reason = f"{check} answer is not an object with a `results` array"
    plan.findings.append(Finding("violation", check, reason))
    plan.failed = dict.fromkeys(asked, reason)
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
        failed.setdefault(
            ext, f"CRM sync error: {message}" if isinstance(message, str) else "CRM sync error"
        )
    matched: dict[str, Match] = {}
    for item in body["results"]:
        if not isinstance(item, dict):
            plan.findings.append(
                Finding("violation", check, "result item is not an object", repr(item)[:300])
            )
            continue
        ext = _asked_id(item, asked_set, check, "result item", plan.findings)
        if ext is None:
            continue
        crm_id, props = item.get("crmId"), item.get("properties")
        if not is_id(crm_id):
            plan.findings.append(
                Finding(
                    "violation",
                    check,
                    "sync result without a string crmId",
                    f"externalId {ext}: crmId {crm_id!r}",
                )
            )
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
                    Finding(
                        "violation",
                        check,
                        "externalId both in `results` and `errors`",
                        f"externalId {ext}",
                    )
                )
            continue
        previous = matched.get(ext)
        if previous is not None:
            if previous.crm_id != crm_id:
                reason = f"sync matched it to two CRM records ({previous.crm_id}, {crm_id})"
                plan.findings.append(
                    Finding(
                        "violation",
                        check,
                        "sync matched one record to two CRM records",
                        f"externalId {ext}: {reason}",
                    )
                )
                failed[ext] = reason
                del matched[ext]
            else:
                plan.findings.append(
                    Finding(
                        "warning",
                        check,
                        "externalId returned twice in `results`",
                        f"externalId {ext}",
                    )
                )
            continue
        matched[ext] = Match(crm_id, props)
        if props is not None:
            plan.findings.extend(property_findings(kind, check, ext, props))
    for ext in asked:
        if ext in failed:
            plan.failed[ext] = failed[ext]
        elif ext in matched:
            plan.matched[ext] = matched[ext]
        elif ext not in plan.failed and ext not in plan.matched:
            plan.new.append(ext)
    plan.new = list(dict.fromkeys(plan.new))
    return plan


ECHO_WARNING = (
    "`properties` echo the CRM's last update (the record as the platform sent it), not the"
    " fields to sync back: every syncable property it lacks is cleared"
)


def property_findings(kind: Kind, check: str, ext: str, props: dict[str, Any]) -> list[Finding]:
    """Warnings about one sync result's `properties`: an echo of the CRM's last update, or
    keys that are ids, not properties (ignored), each named."""
    if echoes_record(kind, props):
        return [Finding("warning", check, ECHO_WARNING, f"externalId {ext}")]
    return [
        Finding(
            "warning",
            check,
            f"`properties` carry `{key}`, which is not a property (ignored)",
            f"externalId {ext}",
        )
        for key in sorted(ECHO_KEYS.intersection(props))
    ]


# ---------------------------------------------------------------------------------------------
# Create and update answers


@dataclass
class WritePlan:
    """Outcome of a POST (created: externalId -> crmId) or PUT (updated) batch."""

    created: dict[str, str] = field(default_factory=dict)
    updated: set[str] = field(default_factory=set)
    failed: dict[str, str] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)


# Create statuses the spec documents: 201 for POST /companies; POST /contacts has none (any 2xx).
CREATED_STATUS: dict[str, int] = {"companies": 201}


def plan_create(kind: Kind, asked: Sequence[str], status: int, body: Any) -> WritePlan:
    """Map a POST /{kind} answer back to the asked externalIds."""
    check = f"POST /{kind}"
    plan = WritePlan()
    if status != CREATED_STATUS.get(kind, status):
        plan.findings.append(
            Finding("warning", check, f"answered {status} where 201 is documented")
        )
    if not _has_results(body, check, asked, plan):
        return plan
    asked_set = set(asked)
    for item in body.get("errors") or []:
        # Not documented for create, but a CRM telling us why is better than silence.
        ext = item.get("externalId") if isinstance(item, dict) else None
        if is_id(ext) and ext in asked_set:
            plan.failed.setdefault(ext, f"CRM create error: {item.get('error')}")
    for item in body["results"]:
        ext = _asked_id(item, asked_set, check, "result item", plan.findings)
        if ext is None:
            continue
        crm_id = item.get("crmId")
        if not is_id(crm_id):
            reason = f"create result without a string crmId ({crm_id!r})"
            plan.findings.append(
                Finding(
                    "violation",
                    check,
                    "create result without a string crmId",
                    f"externalId {ext}: crmId {crm_id!r}",
                )
            )
            plan.failed.setdefault(ext, reason)
            continue
        if ext in plan.created and plan.created[ext] != crm_id:
            reason = f"created twice ({plan.created[ext]}, {crm_id})"
            plan.findings.append(
                Finding(
                    "violation", check, "one record created twice", f"externalId {ext}: {reason}"
                )
            )
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
        if not is_id(answered_id):
            plan.findings.append(
                Finding("violation", check, "result item without a string crmId", repr(item)[:300])
            )
            continue
        crm_id = answered_id
        if crm_id not in by_crm:
            plan.findings.append(
                Finding(
                    "violation", check, "result for a crmId that was not sent", f"crmId {crm_id!r}"
                )
            )
            continue
        success = item.get("success")
        if not isinstance(success, bool):
            plan.findings.append(
                Finding("violation", check, "`success` is not a boolean", f"crmId {crm_id}")
            )
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
# Associations


@dataclass
class LinkPlan:
    """What a POST /associations answer says: links made, links refused, findings."""

    created: int = 0  # the CRM's `created`: links it says are new
    already_linked: int = 0  # links it took without creating them (it had them already)
    # Links a successful answer without `created` took: new or already there, it did not say.
    uncounted: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)  # (contactCRMId, why)
    findings: list[Finding] = field(default_factory=list)


def plan_associations(sent: Sequence[str], body: Any) -> LinkPlan:
    """Map an answer {success, created?, errors?} to the links sent (contact CRM ids in order).

    Counts are the CRM's: `created` is what it created, the other links it took (not in
    `errors`) it already had; an answer without `created` says neither, so its links are
    counted as linked, not created. A `created` that is not a count between 0 and the links
    sent fails every link.
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
            plan.failed.append(
                (str(e.get("contactCRMId")), f"CRM association error: {e.get('error')}")
            )
    if errors is not None and not isinstance(errors, list):
        plan.findings.append(Finding("violation", check, "`errors` is not an array"))
    created = answer.get("created")
    if created is None:
        if success is False and not plan.failed:
            plan.failed = [(c, "CRM answered success: false") for c in sent]
        plan.uncounted = max(0, len(sent) - len(plan.failed))
        return plan
    if not isinstance(created, int) or isinstance(created, bool) or not 0 <= created <= len(sent):
        plan.findings.append(
            Finding(
                "violation",
                check,
                "`created` is not a count of the links sent",
                repr(created)[:100],
            )
        )
        plan.created = 0
        plan.failed = [(c, "association answer without a usable `created` count") for c in sent]
        return plan
    # Fewer than sent without errors is no fault: a link that already existed is not created.
    plan.created = created
    plan.already_linked = max(0, len(sent) - len(plan.failed) - created)
    return plan


def chunks(items: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]
