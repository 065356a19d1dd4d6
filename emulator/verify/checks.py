"""Pure verdicts over a CRM's answers: no I/O, every decision of `emulator verify` lives here.

A verdict function takes the answers a probe got (and what it sent) and returns a `Verdict`;
inside, a broken expectation raises `Broken`, which `verdict` turns into a failure.
"""

from __future__ import annotations

from collections.abc import Callable
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
        raise Broken(
            f"{what} answered {answer.status} with a body that is not JSON: {answer.body[:120]!r}"
        ) from None


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
        listed = next(
            (body[k] for k in ("users", "results", "data") if isinstance(body.get(k), list)), body
        )
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
        return Verdict(
            "warn",
            f"{answer.status}: /health is open without a valid key "
            "(the spec asks 401; fine if deliberate)",
        )
    if endpoint == "GET /users" and users_absent is not None and answer.status == users_absent:
        return Verdict(
            "pass", f"{answer.status}: GET /users is absent (answered so with the key too)"
        )
    raise Broken(f"answered {answer.describe()}; expected 401")


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
        return Verdict(
            "warn",
            f"{answer.status}, but the body is not the JSON object "
            "{success, created?, errors?} the platform reads",
        )
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
        raise Broken(
            f"id {activity_id!r} was already given to another activity "
            "(the platform would take it as logged)"
        )
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
        raise Broken(
            f"{what}: `completedAt` is {short(found.get('completedAt'))}, not an ISO 8601 time"
        )


@verdict
def task_created(answers: list[Answer], learned: Learned) -> Verdict:
    """POST /tasks: `id` and `completed: false`; fills learned.ids (by position)."""
    for n, answer in enumerate(answers):
        found = task(ok(answer, "POST /tasks"), "the created task")
        if found.get("completed") is not False:
            raise Broken(
                f"the created task has `completed` {short(found.get('completed'))}, not false"
            )
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
        return Verdict(
            "warn", f"answered {answer.status} for an unknown task id; the spec's code is 404"
        )
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


# --- the spec's status codes ------------------------------------------------------------


@verdict
def invalid_body(answers: list[tuple[str, Answer]]) -> Verdict:
    """Each (what is wrong, answer) of an invalid body: 400; another 4xx warns; else it fails."""
    wrong, other = [], []
    for what, answer in answers:
        if answer.status == 400:
            continue
        if 400 <= answer.status < 500:
            other.append(f"a body with {what} answered {answer.status}")
        else:
            wrong.append(f"a body with {what} answered {answer.describe()}")
    if wrong:
        raise Broken("; ".join(wrong) + " (expected 400)")
    if other:
        return Verdict("warn", "; ".join(other) + "; the spec's code for an invalid request is 400")
    return Verdict(
        "pass", "400 for a body with " + " and for one with ".join(w for w, _ in answers)
    )


@verdict
def patch_unknown(answer: Answer) -> Verdict:
    if answer.status == 404:
        return Verdict("pass", "404")
    raise Broken(f"completing an unknown task id answered {answer.describe()}; expected 404")


@verdict
def completed_again(first: Answer, again: Answer, task_id: str) -> Verdict:
    """Two PATCH {completed: true} of one task: the second keeps the first `completedAt`."""
    before = task(ok(first, f"PATCH /tasks/{task_id}"), "the first completion")
    after = task(ok(again, f"PATCH /tasks/{task_id} again"), "the second completion")
    try:
        completed(before, "the first completion")
        completed(after, "the second completion")
    except Broken as exc:  # completing at all is patch-task/complete's rule
        return Verdict("skip", f"{exc.message} (see patch-task/complete)")
    if after["completedAt"] != before["completedAt"]:
        return Verdict(
            "warn",
            f"completing the completed task again moved `completedAt` from "
            f"{before['completedAt']} to {after['completedAt']} (the completion time is the first)",
        )
    return Verdict("pass", f"`completedAt` kept at {before['completedAt']}")


@verdict
def unknown_activity_type(answer: Answer, sent: str) -> Verdict:
    if answer.status == 400:
        return Verdict("pass", f"type {sent!r} refused with 400")
    if 200 <= answer.status < 300:
        return Verdict(
            "warn", f"type {sent!r} accepted ({answer.status}); the spec lists four activity types"
        )
    if 400 <= answer.status < 500:
        return Verdict(
            "warn", f"type {sent!r} refused with {answer.status}; the spec's code is 400"
        )
    raise Broken(f"type {sent!r} answered {answer.describe()}")
