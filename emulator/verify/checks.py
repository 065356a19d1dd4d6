"""Pure verdicts over a CRM's answers: no I/O, every decision of `emulator verify` lives here.

A verdict function takes the answers a probe got (and what it sent) and returns a `Verdict`;
inside, a broken expectation raises `Broken`, which `verdict` turns into a failure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import wraps
from typing import Any, Literal, ParamSpec

import msgspec

from emulator.wire import decode, parse_iso

Outcome = Literal["pass", "fail", "warn", "skip"]
USERS_ABSENT = (404, 405, 501)
P = ParamSpec("P")


@dataclass(frozen=True)
class Answer:
    """What the CRM answered to one request (status 0: no HTTP answer at all)."""

    status: int
    body: bytes = b""
    error: str | None = None

    def describe(self) -> str:
        if self.status == 0:
            return f"no answer ({self.error})"
        text = self.body[:160].decode("utf-8", "replace")
        return f"{self.status} {text}".rstrip()


@dataclass(frozen=True)
class Verdict:
    outcome: Outcome
    message: str


@dataclass
class Broken(Exception):
    """An expectation the answer does not meet (the check fails with this message)."""

    message: str


@dataclass
class Learned:
    """What a verdict found out for the probes after it (ids the CRM issued, properties)."""

    ids: dict[str, str] = field(default_factory=dict)


def verdict(check: Callable[P, Verdict]) -> Callable[P, Verdict]:
    """Turn a `Broken` raised by the check into a failing verdict."""

    @wraps(check)
    def run(*args: P.args, **kwargs: P.kwargs) -> Verdict:
        try:
            return check(*args, **kwargs)
        except Broken as exc:
            return Verdict("fail", exc.message)

    return run


def ok(answer: Answer, what: str) -> Any:
    """The JSON body of a 2xx answer; `Broken` for anything else."""
    if not 200 <= answer.status < 300:
        raise Broken(f"{what} answered {answer.describe()}")
    try:
        return decode(answer.body)
    except (msgspec.DecodeError, UnicodeDecodeError):
        raise Broken(f"{what} answered {answer.status} with a body that is not JSON: "
                     f"{answer.body[:120]!r}") from None


def obj(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise Broken(f"{what} is not a JSON object: {short(value)}")
    return value


def items(body: Any, key: str, what: str) -> list[dict[str, Any]]:
    """`body[key]` as a list of objects."""
    found = obj(body, what).get(key)
    if not isinstance(found, list):
        raise Broken(f"{what} has no `{key}` array: {short(body)}")
    for i, item in enumerate(found):
        obj(item, f"{what} {key}[{i}]")
    return found


def text(value: Any) -> bool:
    return isinstance(value, str) and value != ""


def short(value: Any, limit: int = 160) -> str:
    out = msgspec.json.encode(value).decode() if not isinstance(value, str) else repr(value)
    return out if len(out) <= limit else out[:limit] + "..."


def iso(value: Any) -> bool:
    try:
        parse_iso(value)
    except (TypeError, ValueError, AttributeError):
        return False
    return True


# --- health, users, auth ----------------------------------------------------------------


@verdict
def health(answer: Answer) -> Verdict:
    body = obj(ok(answer, "GET /health"), "the health body")
    if not isinstance(body.get("status"), str):
        raise Broken(f"the health body has no string `status`: {short(body)}")
    return Verdict("pass", f"{answer.status} {{status: {body['status']!r}}}")


@verdict
def users(answer: Answer) -> Verdict:
    if answer.status in USERS_ABSENT:
        return Verdict("pass", f"{answer.status}: the CRM lists no users (owner selection off)")
    body = ok(answer, "GET /users")
    listed = body
    if isinstance(body, dict):  # tolerated wrappers (decisions.md §3)
        listed = next((body[k] for k in ("users", "results", "data") if isinstance(body.get(k), list)), body)
    if not isinstance(listed, list):
        raise Broken(f"GET /users answered neither a list of users nor 404/405/501: {short(body)}")
    for i, user in enumerate(listed):
        if not isinstance(user, dict) or not text(user.get("id")):
            raise Broken(f"user [{i}] has no string `id`: {short(user)}")
    shape = "a bare array" if listed is body else "a wrapped list"
    return Verdict("pass", f"{len(listed)} user(s) listed ({shape})")


@verdict
def auth(endpoint: str, answer: Answer, users_absent: int | None) -> Verdict:
    """The answer to a call with a missing or wrong key; `users_absent`: GET /users's 404/405/501."""
    if answer.status == 401:
        return Verdict("pass", "401")
    if answer.status == 0:
        raise Broken(f"no answer ({answer.error})")
    if endpoint == "GET /health" and 200 <= answer.status < 300:
        return Verdict("warn", f"{answer.status}: /health is open without a valid key "
                               "(the spec asks 401; fine if deliberate)")
    if endpoint == "GET /users" and users_absent is not None and answer.status == users_absent:
        return Verdict("pass", f"{answer.status}: GET /users is absent (answered so with the key too)")
    raise Broken(f"answered {answer.describe()}; expected 401")


# --- records: create, sync, update ------------------------------------------------------


@verdict
def create(kind: str, answer: Answer, sent: list[str], learned: Learned) -> Verdict:
    """POST /{kind}: one {externalId, crmId} per item sent; fills `learned.ids`."""
    results = items(ok(answer, f"POST /{kind}"), "results", f"the POST /{kind} answer")
    problems: list[str] = []
    seen: dict[str, str] = {}
    for i, result in enumerate(results):
        ext, crm_id = result.get("externalId"), result.get("crmId")
        if ext not in sent:
            problems.append(f"results[{i}] echoes externalId {short(ext)}, which was not sent")
        elif not text(crm_id):
            problems.append(f"results[{i}] ({ext}) has no string crmId: {short(crm_id)}")
        elif ext in seen:
            problems.append(f"{ext} comes back twice")
        else:
            seen[str(ext)] = str(crm_id)
    learned.ids.update(seen)
    missing = [e for e in sent if e not in seen and e not in {r.get("externalId") for r in results}]
    if missing:
        problems.append(f"{len(missing)} of {len(sent)} items have no result (first: {missing[0]})")
    if len(set(seen.values())) < len(seen):
        problems.append("two items were given the same crmId")
    if problems:
        raise Broken("; ".join(problems[:5]))
    if kind == "companies" and answer.status != 201:
        return Verdict("warn", f"{len(seen)} created, but answered {answer.status} where the spec "
                               "documents 201")
    return Verdict("pass", f"{answer.status}: {len(seen)} created, each with its crmId")


def sync_results(kind: str, answer: Answer) -> list[dict[str, Any]]:
    return items(ok(answer, f"POST /{kind}/sync"), "results", f"the POST /{kind}/sync answer")


@verdict
def sync_finds(kind: str, answer: Answer, created: dict[str, str]) -> Verdict:
    """Every record created before is matched, to the crmId the CRM issued."""
    found = {r.get("externalId"): r for r in sync_results(kind, answer)}
    problems = []
    for ext, crm_id in created.items():
        result = found.get(ext)
        if result is None:
            problems.append(f"{ext} (created as {crm_id}) was not matched")
        elif result.get("crmId") != crm_id:
            problems.append(f"{ext} matched crmId {short(result.get('crmId'))}, not {crm_id} "
                            "issued at create")
        elif "properties" in result and not isinstance(result["properties"], dict | None):
            problems.append(f"{ext}: `properties` is not an object: {short(result['properties'])}")
    if problems:
        raise Broken("; ".join(problems[:5]))
    return Verdict("pass", f"{len(created)} created records matched with their crmIds")


@verdict
def sync_omits(kind: str, answer: Answer, asked: list[str], unmatched: list[str]) -> Verdict:
    results = sync_results(kind, answer)
    extra = [r.get("externalId") for r in results if r.get("externalId") in unmatched]
    if extra:
        raise Broken(f"records that do not exist came back as matched: {short(extra)}")
    unasked = [r.get("externalId") for r in results if r.get("externalId") not in asked]
    if unasked:
        raise Broken(f"results carry externalIds that were not asked: {short(unasked)}")
    if any(not text(r.get("crmId")) for r in results):
        raise Broken("a result has no string crmId")
    return Verdict("pass", f"{len(unmatched)} unmatched records omitted")


@verdict
def sync_empty(kind: str, answer: Answer) -> Verdict:
    body = ok(answer, f"POST /{kind}/sync matching nothing")
    results = items(body, "results", f"the POST /{kind}/sync answer")
    if results:
        raise Broken(f"a sync of records that do not exist answered results: {short(results)}")
    if body.get("errors"):
        raise Broken(f"records that do not exist were reported as errors: {short(body['errors'])}")
    return Verdict("pass", f"{answer.status} {{results: []}}")


@verdict
def sync_errors(kind: str, answers: Iterable[tuple[Answer, list[str]]]) -> Verdict:
    """Every `errors` array of every 2xx sync answer seen: [{externalId (asked), error (text)}]."""
    seen = checked = 0
    for answer, asked in answers:
        if not 200 <= answer.status < 300:
            continue
        try:
            body: Any = decode(answer.body)
        except (msgspec.DecodeError, UnicodeDecodeError):
            continue  # the other sync checks report bodies that are not JSON
        if not isinstance(body, dict) or "errors" not in body:
            checked += 1
            continue
        errors = body["errors"]
        if not isinstance(errors, list):
            raise Broken(f"`errors` is not an array: {short(errors)}")
        matched = {r.get("externalId") for r in body.get("results") or [] if isinstance(r, dict)}
        for i, entry in enumerate(errors):
            if not isinstance(entry, dict) or not text(entry.get("externalId")) or not text(entry.get("error")):
                raise Broken(f"errors[{i}] is not {{externalId, error}} with texts: {short(entry)}")
            if entry["externalId"] not in asked:
                raise Broken(f"errors[{i}] names externalId {entry['externalId']!r}, not asked")
            if entry["externalId"] in matched:
                raise Broken(f"{entry['externalId']} is both matched in results and failed in errors")
        seen += len(errors)
        checked += 1
    if not checked:
        raise Broken("no sync answer could be checked (see the other sync checks)")
    return Verdict("pass", f"{checked} sync answers well formed; {seen} `errors` entries, all "
                           "{externalId, error}")


def update_results(kind: str, answer: Answer, sent: list[str]) -> dict[str, dict[str, Any]]:
    """PUT /{kind}: one result per crmId sent, `success` a boolean, `error` text on failure."""
    results = items(ok(answer, f"PUT /{kind}"), "results", f"the PUT /{kind} answer")
    by_id: dict[str, dict[str, Any]] = {}
    for i, result in enumerate(results):
        crm_id = result.get("crmId")
        if crm_id not in sent:
            raise Broken(f"results[{i}] has crmId {short(crm_id)}, which was not sent")
        if not isinstance(result.get("success"), bool):
            raise Broken(f"results[{i}] ({crm_id}): `success` is not a boolean: {short(result)}")
        if result["success"] is False and not text(result.get("error")):
            raise Broken(f"results[{i}] ({crm_id}) failed without `error` text: {short(result)}")
        by_id[crm_id] = result
    missing = [c for c in sent if c not in by_id]
    if missing:
        raise Broken(f"no result for {', '.join(missing)} ({len(results)} results for {len(sent)} items)")
    return by_id


@verdict
def update(kind: str, answer: Answer, sent: list[str], what: str) -> Verdict:
    by_id = update_results(kind, answer, sent)
    failed = [f"{c}: {r.get('error')}" for c, r in by_id.items() if not r["success"]]
    if failed:
        raise Broken(f"updates of records the CRM issued failed: {'; '.join(failed[:3])}")
    return Verdict("pass", f"{len(sent)} updated ({what})")


@verdict
def update_unknown(kind: str, answer: Answer, known: str, unknown: str) -> Verdict:
    if answer.status >= 400:
        raise Broken(f"one unknown crmId failed the whole batch: {answer.describe()}")
    by_id = update_results(kind, answer, [known, unknown])
    if by_id[known]["success"] is not True:
        raise Broken(f"the known record {known} failed beside the unknown one: {by_id[known].get('error')}")
    if by_id[unknown]["success"] is not False:
        raise Broken(f"the unknown crmId {unknown} was answered success: true")
    return Verdict("pass", f"only the unknown crmId failed: {by_id[unknown]['error']!r}")


def properties_of(answer: Answer, kind: str, ext: str) -> dict[str, Any] | None:
    """The `properties` a sync answer gave `ext` (None: none given); `Broken` if not matched."""
    for result in sync_results(kind, answer):
        if result.get("externalId") == ext:
            props = result.get("properties")
            return props if isinstance(props, dict) else None
    raise Broken(f"{ext} was not matched by the sync after the PUTs")


@verdict
def keeps_fields(
    kind: str, before: dict[str, Any] | None, after: Answer, ext: str, first: str, second: str
) -> Verdict:
    """After two PUTs (field `first`, then field `second`), nothing the sync showed is lost."""
    props = properties_of(after, kind, ext)
    if before is None and props is None:
        return Verdict("skip", "sync answers carry no `properties`: stored fields cannot be seen")
    if props is None:
        raise Broken("sync carried `properties` before the PUTs and none after: every synced "
                     "field would be cleared on the platform")
    lost = [k for k, v in (before or {}).items() if v is not None and props.get(k) is None]
    if second in props and first not in props:
        lost.append(first)
    if lost:
        raise Broken(f"fields lost after PUTs of other fields (PUT replaced the stored record?): "
                     f"{', '.join(lost[:8])}")
    shown = len([k for k, v in (before or {}).items() if v is not None])
    echoed = " (PUT fields echoed)" if first in props else ""
    return Verdict("pass", f"{shown} synced properties kept after two PUTs{echoed}")


# --- associations, activities, tasks ----------------------------------------------------


@verdict
def associations(answer: Answer) -> Verdict:
    if not 200 <= answer.status < 300:
        raise Broken(f"POST /associations answered {answer.describe()}")
    try:
        body: Any = decode(answer.body)
    except (msgspec.DecodeError, UnicodeDecodeError):
        body = None
    if not isinstance(body, dict):
        return Verdict("warn", f"{answer.status}, but the body is not the JSON object "
                               "{success, created?, errors?} the platform reads")
    if body.get("success") is False or body.get("errors"):
        raise Broken(f"linking ids the CRM issued failed: {short(body)}")
    if "created" in body and not isinstance(body["created"], int):
        raise Broken(f"`created` is not a number: {short(body['created'])}")
    return Verdict("pass", f"{answer.status} {short(body)}")


@verdict
def activity(answer: Answer, learned: Learned) -> Verdict:
    """POST /activities: a string `id` no earlier activity of the run was given (kept in `learned`)."""
    body = obj(ok(answer, "POST /activities"), "the activity")
    activity_id = body.get("id")
    if not text(activity_id):
        raise Broken(f"the answer has no string `id`: {short(body)}")
    if activity_id in learned.ids.values():
        raise Broken(f"id {activity_id!r} was already given to another activity "
                     "(the platform would take it as logged)")
    learned.ids[str(len(learned.ids))] = str(activity_id)
    return Verdict("pass", f"{answer.status} id {activity_id!r}")


def task(value: Any, what: str) -> dict[str, Any]:
    found = obj(value, what)
    if not text(found.get("id")):
        raise Broken(f"{what} has no string `id`: {short(found)}")
    return found


def completed(found: dict[str, Any], what: str) -> None:
    if found.get("completed") is not True:
        raise Broken(f"{what}: `completed` is {short(found.get('completed'))}, not true")
    if not iso(found.get("completedAt")):
        raise Broken(f"{what}: `completedAt` is {short(found.get('completedAt'))}, not an ISO 8601 time")


@verdict
def task_created(answers: list[Answer], learned: Learned) -> Verdict:
    """POST /tasks: `id` and `completed: false`; fills learned.ids (by position)."""
    for n, answer in enumerate(answers):
        found = task(ok(answer, "POST /tasks"), "the created task")
        if found.get("completed") is not False:
            raise Broken(f"the created task has `completed` {short(found.get('completed'))}, not false")
        learned.ids[str(n)] = found["id"]
    if len(set(learned.ids.values())) < len(answers):
        raise Broken("two tasks were given the same id")
    return Verdict("pass", f"{len(answers)} tasks created, completed: false")


@verdict
def task_read(answer: Answer, task_id: str) -> Verdict:
    found = task(ok(answer, f"GET /tasks/{task_id}"), "the task")
    if found["id"] != task_id:
        raise Broken(f"asked for {task_id}, answered task {found['id']!r}")
    if "completedAt" not in found:
        raise Broken(f"the task has no `completedAt` (null until completed): {short(found)}")
    if found["completedAt"] is not None or found.get("completed") is True:
        raise Broken(f"a task never completed reads as completed: {short(found)}")
    return Verdict("pass", f"{answer.status} task {task_id} with completedAt null")


@verdict
def task_unknown(answer: Answer) -> Verdict:
    if answer.status == 404:
        return Verdict("pass", "404")
    if 400 <= answer.status < 500:
        return Verdict("warn", f"answered {answer.status} for an unknown task id; the spec's code is 404")
    raise Broken(f"an unknown task id answered {answer.describe()}")


@verdict
def task_completed(patched: Answer, read_back: Answer, task_id: str) -> Verdict:
    found = task(ok(patched, f"PATCH /tasks/{task_id}"), "the updated task")
    if found["id"] != task_id:
        raise Broken(f"completed {task_id}, answered task {found['id']!r}")
    completed(found, "the PATCH answer")
    again = task(ok(read_back, f"GET /tasks/{task_id} after completing it"), "the task read back")
    completed(again, "the task read back")
    return Verdict("pass", f"completed at {found['completedAt']}, read back completed")


def task_list(answer: Answer, what: str) -> dict[str, dict[str, Any]]:
    body = ok(answer, what)
    if not isinstance(body, list):
        raise Broken(f"{what} answered {short(body)}, not an array of tasks")
    return {t["id"]: t for t in (task(v, f"{what} [{i}]") for i, v in enumerate(body))}


@verdict
def tasks_batch(answer: Answer, known: list[str], unknown: list[str]) -> Verdict:
    found = task_list(answer, "POST /tasks/batch")
    missing = [t for t in known if t not in found]
    if missing:
        raise Broken(f"known tasks left out: {', '.join(missing)}")
    if any(t in found for t in unknown):
        raise Broken(f"unknown ids came back as tasks: {short(unknown)}")
    extra = [t for t in found if t not in known]
    if extra:
        raise Broken(f"tasks that were not asked came back: {short(extra)}")
    left_out = f", {len(unknown)} unknown left out" if unknown else ""
    return Verdict("pass", f"{answer.status}: {len(known)} tasks{left_out}")


@verdict
def tasks_completed(answer: Answer, ids: list[str]) -> Verdict:
    found = task_list(answer, "PATCH /tasks/batch")
    for task_id in ids:
        if task_id not in found:
            raise Broken(f"task {task_id} is missing from the answer")
        completed(found[task_id], f"task {task_id}")
    return Verdict("pass", f"{len(ids)} tasks completed, each with completedAt")
