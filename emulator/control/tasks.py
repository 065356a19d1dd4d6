"""/_emulator/tasks: the platform's sequence tasks (list, complete, inject), for tests and scenarios.

Completing a task here is what a user does in the platform; the next export then completes it
on the CRM (one PATCH /tasks/:taskId for one task, PATCH /tasks/batch for several).
"""

from __future__ import annotations

import sqlite3
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from emulator.errors import BadRequest
from emulator.http import decode_body, json_response
from emulator.openapi import PAGE, operation, query
from emulator.platform import tasks as platform_tasks
from emulator.platform.errors import InvalidField
from emulator.public_api.envelopes import MetaList, meta_list
from emulator.public_api.params import page_params
from emulator.state import Emulator
from emulator.wire import Int64, Wire
from emulator.workspace_scope import workspace


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
    values = dict(zip(PlatformTask.__struct_fields__, r, strict=True))
    values["completed"], values["crmCompleted"] = (
        bool(values["completed"]),
        bool(values["crmCompleted"]),
    )
    return PlatformTask(**values)


def _emulator(request: Request) -> Emulator:
    return workspace(request).emulator


@operation(
    "The platform's sequence tasks, oldest first",
    MetaList[PlatformTask],
    params=(*PAGE, query("completed", "true or false"), query("contactId")),
    security=None,
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
    total, rows = await _emulator(request).db.page(
        "platform_tasks", COLUMNS, clauses, params, page, size
    )
    return json_response(meta_list([_row(r) for r in rows], page, size, total))


@operation(
    "Complete platform tasks (the next export completes them on the CRM)",
    CompleteTasksOut,
    body=CompleteTasksIn,
    security=None,
)
async def complete_tasks(request: Request) -> Response:
    body = await decode_body(request, CompleteTasksIn, BadRequest.field)
    if (body.ids is None) == (not body.all):
        raise BadRequest.field("ids", "give ids or all: true (not both)")
    now = _emulator(request).clock.now_iso()

    def complete(conn: sqlite3.Connection) -> CompleteTasksOut:
        if body.all:
            ids = [
                r[0]
                for r in conn.execute(
                    "SELECT id FROM platform_tasks WHERE completed = 0 ORDER BY id"
                )
            ]
            unknown: list[int] = []
        else:
            asked = list(dict.fromkeys(body.ids or []))
            known = (
                {
                    r[0]
                    for r in conn.execute(
                        f"SELECT id FROM platform_tasks WHERE id IN ({','.join('?' * len(asked))})",
                        asked,
                    )
                }
                if asked
                else set()
            )
            ids, unknown = [i for i in asked if i in known], [i for i in asked if i not in known]
        platform_tasks.complete(conn, ids, now)
        return CompleteTasksOut(completed=ids, unknown=unknown)

    return json_response(await _emulator(request).db.write(complete))


@operation(
    "Add a platform task as a campaign's TASK step would",
    PlatformTask,
    status=201,
    body=NewPlatformTask,
    security=None,
)
async def create_task(request: Request) -> Response:
    body = await decode_body(request, NewPlatformTask, BadRequest.field)

    def create(conn: sqlite3.Connection) -> PlatformTask:
        try:
            task_id = platform_tasks.create(
                conn, body.contactId, body.campaignId, body.stepIndex, body.subject, body.dueDate
            )
        except InvalidField as exc:
            raise BadRequest.field(exc.field, exc.message) from None
        row = conn.execute(
            f"SELECT {COLUMNS} FROM platform_tasks WHERE id = ?", (task_id,)
        ).fetchone()
        return _row(row)

    return json_response(await _emulator(request).db.write(create), 201)


routes: list[BaseRoute] = [
    Route("/tasks", list_tasks, methods=["GET"]),
    Route("/tasks", create_task, methods=["POST"]),
    Route("/tasks/complete", complete_tasks, methods=["POST"]),
]
