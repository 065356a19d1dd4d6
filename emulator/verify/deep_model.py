"""What `verify --deep` expects of a CRM after each call: a model of what it was sent, and the
invariants every answer must keep (pure, no I/O).

The model knows only what this run sent; the CRM may hold anything else. A broken invariant
raises `Violation` with the id of the rule it broke (`DEEP_RULES`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from emulator.verify.checks import Answer, Broken, items, ok, short, task, text

DEEP_RULES = {
    "answers": "Every valid request gets a 2xx answer with the documented JSON shape",
    "distinct-crm-ids": "POST /{kind}: one result per item, each a string crmId no other "
    "record of the kind was given",
    "update-results": "Errors rule 2: PUT answers one result per item; only unknown crmIds "
    "fail, as {crmId, success: false, error}",
    "sync-matches": "Sync matches every created record to the crmId it was given and omits "
    "records never created (a failure may be reported in `errors` instead)",
    "fields-kept": "Stored fields are never lost: a field a sync showed stays, with the value "
    "last written by PUT; once syncs show fields PUT wrote, every record shows every field "
    "PUT wrote to it",
    "task-state": "A task reads the same `completed`/`completedAt` through GET, POST "
    "/tasks/batch and both PATCHes; a new task is open (completed false, completedAt null)",
    "unknown-tasks": "Unknown task ids: 404 on PATCH /tasks/:taskId (a 4xx on GET), left out "
    "by POST and PATCH /tasks/batch without an error",
}


@dataclass
class Violation(Exception):
    """An invariant the CRM's answer broke."""

    rule: str
    message: str

    def __str__(self) -> str:
        return f"{self.rule}: {self.message}"


def answered(answer: Answer, what: str, rule: str = "answers") -> Any:
    """The JSON body of a 2xx answer, or a `Violation` of `rule`."""
    try:
        return ok(answer, what)
    except Broken as exc:
        raise Violation(rule, exc.message) from None


def shaped(rule: str, check: Any, *args: Any) -> Any:
    """Run a shape helper of `checks`, its `Broken` as a `Violation` of `rule`."""
    try:
        return check(*args)
    except Broken as exc:
        raise Violation(rule, exc.message) from None


@dataclass
class Record:
    ext: str
    crm_id: str
    sent: dict[str, Any]
    written: dict[str, Any] = field(default_factory=dict)  # PUT fields, last value each
    seen: set[str] = field(default_factory=set)  # fields a sync showed with a value


@dataclass
class TaskState:
    id: str
    completed: bool = False
    completed_at: str | None = None
    step: int = 0  # the step that set this state, for the messages


@dataclass
class Model:
    records: dict[str, list[Record]] = field(
        default_factory=lambda: {"companies": [], "contacts": []}
    )
    tasks: list[TaskState] = field(default_factory=list)
    # Whether a sync has shown a field written by PUT (per kind): a CRM that returns the fields
    # it stores under such names must return them for every record they were written to.
    echoes: dict[str, bool] = field(default_factory=lambda: {"companies": False, "contacts": False})

    def crm_ids(self, kind: str) -> dict[str, Record]:
        return {r.crm_id: r for r in self.records[kind]}

    # --- records ---------------------------------------------------------------------------

    def created(self, kind: str, sent: list[dict[str, Any]], answer: Answer) -> None:
        """POST /{kind}: one string crmId per item, distinct from every crmId of the kind."""
        body = answered(answer, f"POST /{kind}")
        results = shaped("answers", items, body, "results", f"the POST /{kind} answer")
        by_ext: dict[str, str] = {}
        for i, result in enumerate(results):
            ext, crm_id = result.get("externalId"), result.get("crmId")
            if not text(crm_id):
                raise Violation("distinct-crm-ids", f"results[{i}] has crmId {short(crm_id)}")
            if ext in by_ext:
                raise Violation("distinct-crm-ids", f"{ext} has two results")
            by_ext[str(ext)] = str(crm_id)
        missing = [item["externalId"] for item in sent if item["externalId"] not in by_ext]
        if missing or len(results) != len(sent):
            raise Violation(
                "distinct-crm-ids",
                f"{len(sent)} items sent, {len(results)} results"
                + (f"; no result for {', '.join(missing[:3])}" if missing else ""),
            )
        known = self.crm_ids(kind)
        fresh: dict[str, str] = {}
        for item in sent:
            crm_id = by_ext[item["externalId"]]
            other = known.get(crm_id)
            if other is not None or crm_id in fresh:
                owner = other.ext if other is not None else fresh[crm_id]
                raise Violation(
                    "distinct-crm-ids",
                    f"{item['externalId']} was given crmId {crm_id!r}, already given to {owner}",
                )
            fresh[crm_id] = item["externalId"]
        for item in sent:
            record = Record(item["externalId"], by_ext[item["externalId"]], dict(item))
            self.records[kind].append(record)

    def updated(
        self, kind: str, sent: list[dict[str, Any]], answer: Answer, unknown: set[str]
    ) -> None:
        """PUT /{kind}: one result per item; success exactly for the crmIds the CRM issued."""
        body = answered(answer, f"PUT /{kind}", "update-results")
        results = shaped("update-results", items, body, "results", f"the PUT /{kind} answer")
        if len(results) != len(sent):
            raise Violation("update-results", f"{len(sent)} items sent, {len(results)} results")
        by_id = {r.get("crmId"): r for r in results}
        known = self.crm_ids(kind)
        for n, item in enumerate(sent, 1):
            crm_id = item["crmId"]
            result = by_id.get(crm_id)
            if result is None:
                raise Violation("update-results", f"item {n} (crmId {crm_id}) has no result")
            success = result.get("success")
            if crm_id in unknown:
                if success is not False or not text(result.get("error")):
                    raise Violation(
                        "update-results",
                        f"item {n}, the unknown crmId {crm_id}, answered {short(result)}, "
                        "not {crmId, success: false, error}",
                    )
            elif success is not True:
                raise Violation(
                    "update-results",
                    f"item {n} (crmId {crm_id}, created before) answered {short(result)}",
                )
        for item in sent:
            record = known.get(item["crmId"])
            if record is not None:
                record.written.update({k: v for k, v in item.items() if k != "crmId"})

    def synced(self, kind: str, asked: list[Record], fresh: list[str], answer: Answer) -> None:
        """POST /{kind}/sync: created records matched (or failed), fresh ones omitted, fields kept."""
        body = answered(answer, f"POST /{kind}/sync", "sync-matches")
        results = shaped("sync-matches", items, body, "results", f"the POST /{kind}/sync answer")
        errors = body.get("errors") or []
        failed = {e.get("externalId") for e in errors if isinstance(e, dict)}
        found = {r.get("externalId"): r for r in results}
        for ext in fresh:
            if ext in found:
                raise Violation(
                    "sync-matches", f"{ext} was never created but matched {short(found[ext])}"
                )
        shown: list[tuple[Record, dict[str, Any]]] = []
        for record in asked:
            result = found.get(record.ext)
            if result is None:
                if record.ext in failed:
                    continue
                raise Violation(
                    "sync-matches",
                    f"{record.ext} (created as {record.crm_id}) was not matched",
                )
            if result.get("crmId") != record.crm_id:
                raise Violation(
                    "sync-matches",
                    f"{record.ext} matched crmId {short(result.get('crmId'))}, "
                    f"created as {record.crm_id}",
                )
            props = result.get("properties")
            if not isinstance(props, dict | None):
                raise Violation("answers", f"{record.ext}: `properties` {short(props)}")
            shown.append((record, props or {}))
        self.echoes[kind] = self.echoes[kind] or any(
            props.get(k) is not None for record, props in shown for k in record.written
        )
        for record, props in shown:
            self.fields_kept(record, props, self.echoes[kind])

    @staticmethod
    def fields_kept(record: Record, props: dict[str, Any], echoes: bool) -> None:
        shown = {k for k, v in props.items() if v is not None}
        missing = sorted(set(record.written) - shown) if echoes else []
        if missing:
            raise Violation(
                "fields-kept",
                f"{record.ext} ({record.crm_id}): fields written by PUT are gone: "
                f"{', '.join(missing[:6])} (syncs show the fields PUT wrote)",
            )
        lost = sorted(record.seen - shown)
        if lost:
            raise Violation(
                "fields-kept",
                f"{record.ext} ({record.crm_id}): fields an earlier sync showed are gone: "
                f"{', '.join(lost[:6])}",
            )
        for name, value in record.written.items():
            if name in shown and props[name] != value:
                raise Violation(
                    "fields-kept",
                    f"{record.ext} ({record.crm_id}): {name} is {short(props[name])}, "
                    f"last written {short(value)}",
                )
        record.seen |= shown

    # --- tasks -----------------------------------------------------------------------------

    def task_created(self, answer: Answer, step: int) -> None:
        found = shaped("answers", task, answered(answer, "POST /tasks"), "the created task")
        if any(t.id == found["id"] for t in self.tasks):
            raise Violation("task-state", f"the new task was given id {found['id']!r} again")
        if found.get("completed") is not False or found.get("completedAt") is not None:
            raise Violation(
                "task-state",
                f"the new task is not open: completed {short(found.get('completed'))}, "
                f"completedAt {short(found.get('completedAt'))}",
            )
        self.tasks.append(TaskState(found["id"], step=step))

    def by_id(self) -> dict[str, TaskState]:
        return {t.id: t for t in self.tasks}

    def task_seen(self, found: dict[str, Any], where: str) -> None:
        """A task as an answer shows it: the state the model holds for it."""
        state = self.by_id()[found["id"]]
        if found.get("completed") is not state.completed:
            told = f"completed at step {state.step}" if state.completed else "open"
            raise Violation(
                "task-state",
                f"{where} shows task {state.id} with completed {short(found.get('completed'))}; "
                f"it is {told}",
            )
        if state.completed and found.get("completedAt") != state.completed_at:
            raise Violation(
                "task-state",
                f"{where} shows task {state.id} completedAt {short(found.get('completedAt'))}; "
                f"step {state.step} answered {state.completed_at}",
            )
        if not state.completed and found.get("completedAt") is not None:
            raise Violation(
                "task-state",
                f"{where} shows open task {state.id} with completedAt {found['completedAt']}",
            )

    def task_completed(self, found: dict[str, Any], where: str, step: int) -> None:
        """A task a PATCH answered as completed: `completedAt` set (the model takes it)."""
        if found.get("completed") is not True or not text(found.get("completedAt")):
            raise Violation(
                "task-state",
                f"{where} answered task {found['id']} with completed "
                f"{short(found.get('completed'))}, completedAt {short(found.get('completedAt'))}",
            )
        state = self.by_id()[found["id"]]
        # Completing a completed task may move completedAt (verify's fixed check warns);
        # what every endpoint shows afterwards must agree with this answer.
        state.completed, state.completed_at, state.step = True, found["completedAt"], step

    def task_got(self, answer: Answer, task_id: str) -> None:
        where = f"GET /tasks/{task_id}"
        if task_id not in self.by_id():
            if not 400 <= answer.status < 500:
                raise Violation("unknown-tasks", f"{where} (unknown) answered {answer.describe()}")
            return
        found = shaped("answers", task, answered(answer, where, "task-state"), "the task")
        if found["id"] != task_id:
            raise Violation("task-state", f"{where} answered task {found['id']!r}")
        self.task_seen(found, where)

    def task_patched(self, answer: Answer, task_id: str, step: int) -> None:
        where = f"PATCH /tasks/{task_id}"
        if task_id not in self.by_id():
            if answer.status != 404:
                raise Violation("unknown-tasks", f"{where} (unknown) answered {answer.describe()}")
            return
        found = shaped("answers", task, answered(answer, where, "task-state"), "the task")
        if found["id"] != task_id:
            raise Violation("task-state", f"{where} answered task {found['id']!r}")
        self.task_completed(found, where, step)

    def task_list(self, answer: Answer, asked: list[str], where: str) -> list[dict[str, Any]]:
        body = answered(answer, where, "task-state")
        if not isinstance(body, list):
            raise Violation("answers", f"{where} answered {short(body)}, not an array")
        found = [shaped("answers", task, t, f"{where} [{i}]") for i, t in enumerate(body)]
        known = self.by_id()
        ids = [t["id"] for t in found]
        stray = [i for i in ids if i not in known or i not in asked]
        if stray:
            raise Violation(
                "unknown-tasks", f"{where} answered tasks unknown or not asked: {short(stray)}"
            )
        left_out = [i for i in asked if i in known and i not in ids]
        if left_out:
            raise Violation("task-state", f"{where} left out known tasks: {short(left_out)}")
        return found

    def tasks_got(self, answer: Answer, asked: list[str]) -> None:
        for found in self.task_list(answer, asked, "POST /tasks/batch"):
            self.task_seen(found, "POST /tasks/batch")

    def tasks_patched(self, answer: Answer, asked: list[str], step: int) -> None:
        for found in self.task_list(answer, asked, "PATCH /tasks/batch"):
            self.task_completed(found, "PATCH /tasks/batch", step)

    # --- the invariant over the whole model -------------------------------------------------

    def distinct(self) -> None:
        for kind, records in self.records.items():
            ids = [r.crm_id for r in records]
            if len(set(ids)) != len(ids):
                raise Violation("distinct-crm-ids", f"two {kind} share a crmId")
