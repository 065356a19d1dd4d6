"""/_emulator/tasks: the platform's sequence tasks (list, complete, inject), for tests and scenarios.

Completing a task here is what a user does in the platform; the next export then completes it
on the CRM (one PATCH /tasks/:taskId for one task, PATCH /tasks/batch for several).
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from emulator.errors import BadRequest
from emulator.http import decode_body, json_response
from emulator.openapi import PAGE, operation, query
from emulator.public_api.envelopes import MetaList, meta_list
from emulator.public_api.params import page_params
from emulator.sequence_text import task_subject
from emulator.state import Emulator
from emulator.wire import Int64, Wire


class PlatformTask(Wire):
    id: int
    contactId: int
    campaignId: int
    stepIndex: int
    subject: str
    type: str | None
    dueDate: str | None
    completed: bool
    completedAt: str | None
    crmTaskId: str | None
    crmCompleted: bool


class CompleteTasksIn(Wire):
    """`ids` to complete, or `all: true` for every open task."""

    ids: list[Int64] | None = None
    all: bool = False


class CompleteTasksOut(Wire):
    completed: list[int]
    unknown: list[int]


class NewPlatformTask(Wire):
    """A sequence task reached by a campaign member (what a TASK step makes)."""

    contactId: Int64
    campaignId: Int64
    stepIndex: Int64 | None = None  # default: the campaign's first TASK step
    subject: str | None = None
    dueDate: str | None = None


COLUMNS = ", ".join(PlatformTask.__struct_fields__)


def _row(r: tuple[Any, ...]) -> PlatformTask:
    values = dict(zip(PlatformTask.__struct_fields__, r))
    values["completed"], values["crmCompleted"] = bool(values["completed"]), bool(values["crmCompleted"])
    return PlatformTask(**values)


def _emulator(request: Request) -> Emulator:
    return request.app.state.services.emulator  # type: ignore[no-any-return]


@operation(
    "The platform's sequence tasks, oldest first", MetaList[PlatformTask],
    params=(*PAGE, query("completed", "true or false"), query("contactId")), security=None,
)
async def list_tasks(request: Request) -> Response:
    page, size = page_params(request.query_params)
    clauses: list[str] = []
    params: list[Any] = []
    completed = request.query_params.get("completed")
    if completed is not None:
        if completed not in ("true", "false"):
            raise BadRequest.field("completed", "must be true or false")
        clauses.append("completed = ?")
        params.append(int(completed == "true"))
    contact = request.query_params.get("contactId")
    if contact is not None:
        if not contact.isdigit():
            raise BadRequest.field("contactId", "must be an integer")
        clauses.append("contactId = ?")
        params.append(int(contact))
    total, rows = await _emulator(request).db.page("platform_tasks", COLUMNS, clauses, params, page, size)
    return json_response(meta_list([_row(r) for r in rows], page, size, total))


@operation(
    "Complete platform tasks (the next export completes them on the CRM)", CompleteTasksOut,
    body=CompleteTasksIn, security=None,
)
async def complete_tasks(request: Request) -> Response:
    body = await decode_body(request, CompleteTasksIn, BadRequest.field)
    if (body.ids is None) == (not body.all):
        raise BadRequest.field("ids", "give ids or all: true (not both)")
    now = _emulator(request).clock.now_iso()

    def complete(conn: sqlite3.Connection) -> CompleteTasksOut:
        if body.all:
            ids = [r[0] for r in conn.execute("SELECT id FROM platform_tasks WHERE completed = 0 ORDER BY id")]
            unknown: list[int] = []
        else:
            asked = list(dict.fromkeys(body.ids or []))
            known = {r[0] for r in conn.execute(
                f"SELECT id FROM platform_tasks WHERE id IN ({','.join('?' * len(asked))})", asked)} if asked else set()
            ids, unknown = [i for i in asked if i in known], [i for i in asked if i not in known]
        conn.executemany(
            "UPDATE platform_tasks SET completed = 1, completedAt = ? WHERE id = ? AND completed = 0",
            [(now, i) for i in ids],
        )
        return CompleteTasksOut(completed=ids, unknown=unknown)

    return json_response(await _emulator(request).db.write(complete))


@operation(
    "Add a platform task as a campaign's TASK step would", PlatformTask, status=201,
    body=NewPlatformTask, security=None,
)
async def create_task(request: Request) -> Response:
    body = await decode_body(request, NewPlatformTask, BadRequest.field)

    def create(conn: sqlite3.Connection) -> PlatformTask:
        campaign = conn.execute("SELECT name, sequence FROM campaigns WHERE id = ?", (body.campaignId,)).fetchone()
        if campaign is None:
            raise BadRequest.field("campaignId", f"unknown campaign {body.campaignId}")
        contact = conn.execute(
            "SELECT c.firstName, co.name FROM contacts c LEFT JOIN companies co ON co.id = c.companyId"
            " WHERE c.id = ?", (body.contactId,),
        ).fetchone()
        if contact is None:
            raise BadRequest.field("contactId", f"unknown contact {body.contactId}")
        steps = json.loads(campaign[1] or "[]")
        task_steps = [i for i, s in enumerate(steps) if s.get("type") == "TASK"]
        index = body.stepIndex if body.stepIndex is not None else (task_steps[0] if task_steps else None)
        if index is None or index not in task_steps:
            raise BadRequest.field("stepIndex", "the campaign has no TASK step there")
        if conn.execute(
            "SELECT 1 FROM platform_tasks WHERE contactId = ? AND campaignId = ? AND stepIndex = ?",
            (body.contactId, body.campaignId, index),
        ).fetchone():
            raise BadRequest.field("stepIndex", "this member already has that task")
        step = steps[index]
        subject = task_subject(
            body.subject or step.get("taskSubject"), step.get("taskType"), campaign[0], *contact
        )
        cur = conn.execute(
            "INSERT INTO platform_tasks(contactId, campaignId, stepIndex, subject, type, dueDate)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (body.contactId, body.campaignId, index, subject, step.get("taskType"), body.dueDate),
        )
        row = conn.execute(f"SELECT {COLUMNS} FROM platform_tasks WHERE id = ?", (cur.lastrowid,)).fetchone()
        return _row(row)

    return json_response(await _emulator(request).db.write(create), 201)


routes: list[BaseRoute] = [
    Route("/tasks", list_tasks, methods=["GET"]),
    Route("/tasks", create_task, methods=["POST"]),
    Route("/tasks/complete", complete_tasks, methods=["POST"]),
]
