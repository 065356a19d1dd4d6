"""The contract checks of the activity and task answers: created ids, reading tasks back,
completing them (pure, like plan.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from emulator.exporter.plan import is_id
from emulator.exporter.terms import Finding

READ_ONE = "GET /tasks/:taskId"
COMPLETE_ONE = "PATCH /tasks/:taskId"


def task_list(body: Any, check: str) -> tuple[list[Any] | None, list[Finding]]:
    """The array of tasks a POST or PATCH /tasks/batch answers (a wrapped one is tolerated)."""
    if isinstance(body, list):
        return body, []
    if isinstance(body, dict):
        for key in ("tasks", "results", "data"):
            if isinstance(body.get(key), list):
                return body[key], [
                    Finding("warning", check, "tasks wrapped in an object, not a bare array")
                ]
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
        if not is_id(task_id):
            plan.findings.append(
                Finding("violation", check, "task without a string `id`", repr(task)[:300])
            )
            continue
        if task_id not in asked_set:
            plan.findings.append(
                Finding("violation", check, "task for an id that was not asked", f"id {task_id!r}")
            )
            continue
        answered.add(task_id)
        completed, at = task.get("completed"), task.get("completedAt")
        if not isinstance(completed, bool):
            plan.findings.append(
                Finding("violation", check, "task without a boolean `completed`", f"id {task_id}")
            )
            continue
        if completed:
            if not isinstance(at, str):
                plan.findings.append(
                    Finding(
                        "warning", check, "completed task without `completedAt`", f"id {task_id}"
                    )
                )
            plan.completed[task_id] = at if isinstance(at, str) else None
        else:
            plan.open.add(task_id)
    plan.unknown = [t for t in dict.fromkeys(asked) if t not in answered]
    return plan


# ---------------------------------------------------------------------------------------------
# The null-clearing rule


def created_id(body: Any) -> str | None:
    """The `id` a POST /activities or POST /tasks answer must carry (numbers tolerated)."""
    if isinstance(body, dict):
        value = body.get("id")
        if is_id(value):
            return str(value)
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
    return None


@dataclass
class CreatedPlan:
    """What a POST /activities or POST /tasks answer says: the new CRM id, or why none."""

    crm_id: str | None
    failed: str | None = None
    findings: list[Finding] = field(default_factory=list)


def plan_created(check: str, body: Any) -> CreatedPlan:
    """The created record's CRM id: a string `id` (a number is tolerated with a warning)."""
    crm_id = created_id(body)
    if crm_id is None:
        return CreatedPlan(
            None,
            f"{check} answer carries no id",
            [Finding("violation", check, "answer carries no string `id`")],
        )
    if not isinstance(body.get("id"), str):
        return CreatedPlan(
            crm_id, findings=[Finding("warning", check, "`id` is a number, not a string")]
        )
    return CreatedPlan(crm_id)


def task_gone(check: str, status: int) -> bool:
    """GET /tasks/:taskId answering 404: the CRM does not know the task (no failed call)."""
    return check == READ_ONE and status == 404


@dataclass
class TaskAnswer:
    """The tasks a read-back answer holds, or why it holds none usable."""

    tasks: list[Any] | None
    failed: str | None = None
    findings: list[Finding] = field(default_factory=list)


def answered_tasks(check: str, status: int, body: Any) -> TaskAnswer:
    """GET /tasks/:taskId answers one task (404: none); POST /tasks/batch an array of them."""
    if check == READ_ONE:
        return TaskAnswer([] if task_gone(check, status) else [body])
    tasks, findings = task_list(body, check)
    return TaskAnswer(
        tasks, None if tasks is not None else f"{check} answer is not an array of tasks", findings
    )


@dataclass
class CompletionPlan:
    """What a PATCH /tasks answer says: the asked CRM task ids it did not complete, and why."""

    failed: dict[str, str] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)


def plan_completion(check: str, asked: Sequence[str], body: Any) -> CompletionPlan:
    """PATCH /tasks/:taskId (2xx: done; the task echoed with completed true, else a
    violation) or PATCH /tasks/batch (done: each id answered with completed true)."""
    if check == COMPLETE_ONE:
        if isinstance(body, dict) and body.get("completed") is True:
            return CompletionPlan()
        return CompletionPlan(
            findings=[Finding("violation", check, "answer is not the task with completed true")]
        )
    tasks, findings = task_list(body, check)
    if tasks is None:
        return CompletionPlan(dict.fromkeys(asked, f"{check} answer is not an array"), findings)
    completed = {
        str(t.get("id")) for t in tasks if isinstance(t, dict) and t.get("completed") is True
    }
    return CompletionPlan(
        {c: f"CRM did not complete task {c}" for c in asked if c not in completed}, findings
    )
