"""Every check `emulator verify` makes: its id, the spec endpoint it judges and the rule it holds.

The order is the order the checks run (and are printed) in. Every report lists every check:
one that could not run is reported as `skip`, with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from emulator.part_a import ENDPOINTS

# The spec's activity table: (type, direction) of each event logged with POST /activities.
ACTIVITY_KINDS = (
    ("NETWORK", "OUTBOUND"),
    ("NETWORK", "INBOUND"),
    ("NETWORK_INMAIL", "OUTBOUND"),
    ("NETWORK_INMAIL", "INBOUND"),
    ("NETWORK_CONNECTION", "OUTBOUND"),
    ("NETWORK_CONNECTION", "INBOUND"),
    ("EMAIL", "OUTBOUND"),
    ("EMAIL", "INBOUND"),
)

AUTH_RULE = "Authentication: when the key is missing or invalid, the CRM returns 401"
RULE_1 = "Errors rule 1: sync failures are reported in `errors` as {externalId, error}"
RULE_2 = "Errors rule 2: update failures are reported per item as {crmId, success: false, error}"
RULE_3 = "Errors rule 3: a batch get of tasks omits unknown ids without an error"
RULE_4 = "Errors rule 4: a sync that matches no record returns an empty `results` array"
INVALID_RULE = (
    "Status codes: 400 invalid request; a body {what} is answered 400, never 2xx or 5xx "
    "(another 4xx is a warning)"
)
# Endpoints with a request body: each gets a missing-field and a wrong-type check.
BODY_ENDPOINTS = tuple(e for e in ENDPOINTS if not e.startswith("GET "))


@dataclass(frozen=True)
class Check:
    id: str
    endpoint: str
    rule: str


def slug(endpoint: str) -> str:
    """ "PATCH /tasks/:taskId" -> "patch-task"; "POST /tasks/batch" -> "post-tasks-batch"."""
    method, path = endpoint.split(" ")
    if path == "/tasks/:taskId":
        return f"{method.lower()}-task"
    return "-".join([method.lower(), *path.strip("/").split("/")])


def _record_checks(kind: str) -> list[Check]:
    create, sync, update = f"POST /{kind}", f"POST /{kind}/sync", f"PUT /{kind}"
    status = "status 201 with" if kind == "companies" else "answer"
    return [
        Check(
            f"{slug(create)}/create",
            create,
            f"POST /{kind}: {status} {{results: [{{externalId, crmId}}]}}, crmId a string for each item",
        ),
        Check(
            f"{slug(create)}/batch-100",
            create,
            "Limits: up to 100 items per request; one result with its own crmId for each",
        ),
        Check(
            f"{slug(sync)}/finds-created",
            sync,
            f"POST /{kind}/sync: matched records come back as {{externalId, crmId, properties?}}; "
            "records created before are matched",
        ),
        Check(
            f"{slug(sync)}/omits-unmatched",
            sync,
            f"POST /{kind}/sync: the response contains only records that exist in the CRM; "
            "unmatched ones are omitted",
        ),
        Check(f"{slug(sync)}/empty-results", sync, RULE_4),
        Check(f"{slug(sync)}/errors-shape", sync, RULE_1),
        Check(
            f"{slug(update)}/update",
            update,
            f"PUT /{kind}: {{results: [update result items]}}, one per item, `success` a boolean",
        ),
        Check(
            f"{slug(update)}/any-field-names",
            update,
            "Engagement fields: the CRM must accept and store any field name (unknown fields "
            "must be stored, not ignored)",
        ),
        Check(f"{slug(update)}/unknown-crm-id", update, RULE_2),
        Check(
            f"{slug(update)}/keeps-fields",
            update,
            "PUT updates the fields sent and keeps the others (sync properties: an absent "
            "property clears the platform's value)",
        ),
    ]


def _catalogue() -> tuple[Check, ...]:
    checks = [
        Check(
            "get-health/status",
            "GET /health",
            "GET /health: any 2xx status means healthy; a body of the form {status: string}",
        ),
        Check(
            "get-users/list",
            "GET /users",
            "GET /users: a list of users, or 404, 405 or 501 when the CRM lists none",
        ),
    ]
    for endpoint in ENDPOINTS:
        for probe in ("missing-key", "wrong-key"):
            checks.append(Check(f"{slug(endpoint)}/auth-{probe}", endpoint, AUTH_RULE))
    checks += _record_checks("companies") + _record_checks("contacts")
    checks.append(
        Check(
            "post-associations/link",
            "POST /associations",
            "POST /associations links contacts to companies by the crmIds the CRM "
            "issued: {success: true, created?, errors?}",
        )
    )
    for type_, direction in ACTIVITY_KINDS:
        checks.append(
            Check(
                f"post-activities/{type_.lower().replace('_', '-')}-{direction.lower()}",
                "POST /activities",
                f"POST /activities accepts type {type_} direction {direction} and answers the "
                "activity with at least `id`",
            )
        )
    checks += [
        Check(
            "post-tasks/create",
            "POST /tasks",
            "POST /tasks: the created task with at least `id`, `completed` false",
        ),
        Check(
            "get-task/read",
            "GET /tasks/:taskId",
            "GET /tasks/:taskId: the task object including `completedAt`",
        ),
        Check("get-task/unknown-id", "GET /tasks/:taskId", "Errors: 404 resource not found"),
        Check(
            "patch-task/complete",
            "PATCH /tasks/:taskId",
            "PATCH /tasks/:taskId with completed=true: `completed` true and `completedAt` set "
            "to the completion time",
        ),
        Check(
            "post-tasks-batch/known-ids",
            "POST /tasks/batch",
            "POST /tasks/batch {ids}: an array of the task objects",
        ),
        Check("post-tasks-batch/unknown-ids", "POST /tasks/batch", RULE_3),
        Check(
            "patch-tasks-batch/complete",
            "PATCH /tasks/batch",
            "PATCH /tasks/batch {ids, completed: true}: the updated tasks, each with `completedAt`",
        ),
    ]
    return tuple(checks + _status_checks())


def _status_checks() -> list[Check]:
    """The spec's status codes: invalid bodies, unknown ids, repeated completion, activity types."""
    checks = [
        Check(
            "patch-task/unknown-id",
            "PATCH /tasks/:taskId",
            "Errors: 404 resource not found; completing a task id no CRM issued answers 404",
        ),
        Check(
            "patch-task/complete-again",
            "PATCH /tasks/:taskId",
            "`completedAt` is the completion time: completing a completed task keeps its first "
            "`completedAt` (a warning when it changes; the spec does not show the transition)",
        ),
        Check(
            "post-activities/unknown-type",
            "POST /activities",
            "Activity `type` is one of EMAIL, NETWORK, NETWORK_CONNECTION, NETWORK_INMAIL; "
            "another type is refused with 400 (a warning when accepted)",
        ),
    ]
    for endpoint in BODY_ENDPOINTS:
        required = REQUIRED.get(endpoint, "its required fields")
        checks.append(
            Check(
                f"{slug(endpoint)}/missing-field",
                endpoint,
                INVALID_RULE.format(what=f"without {required}"),
            )
        )
        checks.append(
            Check(
                f"{slug(endpoint)}/wrong-type",
                endpoint,
                INVALID_RULE.format(what="with a field of the wrong JSON type"),
            )
        )
    return checks


# What each endpoint's body requires (interfaces.md Part A), as the rules of the invalid-body checks.
REQUIRED = {
    "POST /contacts": "`contacts`, or an item without `externalId`",
    "POST /contacts/sync": "`contacts`, or an item without `externalId`",
    "PUT /contacts": "`contacts`, or an item without `crmId`",
    "POST /companies": "`companies`, or an item without `externalId`",
    "POST /companies/sync": "`companies`, or an item without `externalId`",
    "PUT /companies": "`companies`, or an item without `crmId`",
    "POST /associations": "`associations`",
    "POST /activities": "`type` (the only required field)",
    "POST /tasks": "`subject` (the only required field)",
    "PATCH /tasks/:taskId": "`completed`",
    "POST /tasks/batch": "`ids` (required)",
    "PATCH /tasks/batch": "`ids` or `completed` (both required)",
}


CHECKS = _catalogue()
BY_ID = {c.id: c for c in CHECKS}
