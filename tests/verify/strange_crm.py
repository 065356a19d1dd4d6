"""A small CRM written to the public contract by somebody else, with switches that break one rule each.

It shares no code with the reference CRM: in-memory, its own header name, whole stored
records as sync `properties`. `StrangeCrm(breaks={...}).app` is an ASGI app.

The `seq-*` switches are bugs only a sequence of calls shows (`verify --deep` finds them; the
fixed checks pass): see SEQUENCE_BUGS.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

HEADER, KEY = "X-Api-Token", "strange-key"
DOCUMENTED = {"description", "title"}
ACTIVITY_TYPES = {"EMAIL", "NETWORK", "NETWORK_CONNECTION", "NETWORK_INMAIL"}
# Bodies as the contract has them: (list field, the fields each item needs) or the fields needed.
LISTS = {
    **{f"POST /{k}": (k, {"externalId": str}) for k in ("companies", "contacts")},
    **{f"POST /{k}/sync": (k, {"externalId": str}) for k in ("companies", "contacts")},
    **{f"PUT /{k}": (k, {"crmId": str}) for k in ("companies", "contacts")},
    "POST /associations": ("associations", {"contactCRMId": str, "companyCRMId": str}),
}
FIELDS: dict[str, dict[str, type]] = {
    "POST /activities": {"type": str},
    "POST /tasks": {"subject": str},
    "PATCH /tasks/:taskId": {"completed": bool},
    "POST /tasks/batch": {"ids": list},
    "PATCH /tasks/batch": {"ids": list, "completed": bool},
}

Handler = Callable[[Request], Awaitable[Response]]

# Bugs no single probe shows, each passing every fixed check of `verify`.
SEQUENCE_BUGS = {
    # state that drifts between batches: crmIds are made from the batch size and the position,
    # so two create calls of the same size give the same crmIds
    "seq-crmid-by-batch-size": "distinct-crm-ids",
    # position: an unknown crmId first in a PUT fails the whole batch (the fixed check puts it last)
    "seq-put-unknown-first-fails-all": "update-results",
    # past some position: PUT items after the third are answered success but not stored
    "seq-put-past-3-not-stored": "fields-kept",
    # between an update and a later one: the third PUT of a record drops what earlier PUTs wrote
    "seq-third-update-drops-fields": "fields-kept",
    # between the task endpoints: POST /tasks/batch reads a copy a single PATCH does not update
    "seq-batch-get-stale": "task-state",
    # between the task endpoints: PATCH /tasks/batch answers every task completed, stores one
    "seq-batch-complete-stores-first": "task-state",
}


def fields_flaw(body: dict[str, Any], needed: dict[str, type]) -> str | None:
    if any(name not in body for name in needed):
        return "missing-field"
    if any(not isinstance(body[name], kind) for name, kind in needed.items()):
        return "wrong-type"
    return None


def flaw(endpoint: str, body: Any) -> str | None:
    """ "missing-field", "wrong-type" or None: what is wrong with a request body."""
    if not isinstance(body, dict):
        return "wrong-type"
    if endpoint in LISTS:
        key, needed = LISTS[endpoint]
        if key not in body:
            return "missing-field"
        if not isinstance(body[key], list) or not all(isinstance(i, dict) for i in body[key]):
            return "wrong-type"
        return next(filter(None, (fields_flaw(i, needed) for i in body[key])), None)
    found = fields_flaw(body, FIELDS.get(endpoint, {}))
    if found is None and not all(isinstance(i, str) for i in body.get("ids", [])):
        return "wrong-type"
    return found


def match_key(kind: str, item: dict[str, Any]) -> str | None:
    value = item.get("domain" if kind == "companies" else "email")
    return value.lower() if isinstance(value, str) else None


class StrangeCrm:
    def __init__(self, breaks: set[str] | frozenset[str] = frozenset()) -> None:
        self.breaks = set(breaks)
        self.records: dict[str, dict[str, dict[str, Any]]] = {"companies": {}, "contacts": {}}
        self.index: dict[str, dict[str, str]] = {"companies": {}, "contacts": {}}
        self.tasks: dict[str, dict[str, Any]] = {}
        self.ids = itertools.count(1)
        self.created: dict[str, dict[str, Any]] = {}  # each record as created
        self.updates: dict[str, int] = {}  # PUTs per record
        self.task_copies: dict[str, dict[str, Any]] = {}  # seq-batch-get-stale's stale reads

    def broken(self, name: str) -> bool:
        return name in self.breaks

    def guard(self, endpoint: str, handler: Handler) -> Handler:
        async def run(request: Request) -> Response:
            sent = request.headers.get(HEADER)
            if sent is None and not self.broken(f"accept-missing-key:{endpoint}"):
                return JSONResponse({"error": "unauthorized"}, 401)
            if sent is not None and sent != KEY and not self.broken(f"accept-wrong-key:{endpoint}"):
                return JSONResponse({"error": "unauthorized"}, 401)
            if not endpoint.startswith("GET "):
                refused = await self.refuse(endpoint, request)
                if refused is not None:
                    return refused
            return await handler(request)

        return run

    async def refuse(self, endpoint: str, request: Request) -> Response | None:
        """400 for a body the contract calls invalid (each switch lets one kind through)."""
        try:
            body = await request.json()
        except ValueError:
            return JSONResponse({"error": "not JSON"}, 400)
        found = flaw(endpoint, body)
        if (found, endpoint) == ("missing-field", "POST /tasks/batch") and self.broken(
            "tasks-batch-all-without-ids"
        ):
            return None
        if found is not None and self.broken(f"invalid-body-422:{endpoint}"):
            return JSONResponse({"error": found}, 422)
        if found == "missing-field" and self.broken(f"missing-field-500:{endpoint}"):
            return JSONResponse({"error": "TypeError: cannot read properties of undefined"}, 500)
        if found == "wrong-type" and self.broken(f"wrong-type-accepted:{endpoint}"):
            return None
        if found is not None:
            return JSONResponse({"error": found}, 400)
        kind = body.get("type") if endpoint == "POST /activities" else None
        if kind not in (None, *ACTIVITY_TYPES) and not self.broken("activity-accepts-any-type"):
            return JSONResponse({"error": f"unknown activity type {kind}"}, 400)
        return None

    # --- handlers -----------------------------------------------------------------------

    async def health(self, request: Request) -> Response:
        return JSONResponse({} if self.broken("health-no-status") else {"status": "up"})

    async def users(self, request: Request) -> Response:
        if self.broken("users-500"):
            return JSONResponse({"error": "boom"}, 500)
        return JSONResponse({"users": [{"id": "u1", "name": "Ann"}]})

    def kind(self, request: Request) -> str:
        return request.url.path.strip("/").split("/")[0]

    async def create(self, request: Request) -> Response:
        kind = self.kind(request)
        items = (await request.json())[kind]
        if len(items) > 50 and self.broken("batch-limit-50"):
            return JSONResponse({"error": "at most 50 items"}, 400)
        results = []
        for position, item in enumerate(items):
            crm_id = f"s{next(self.ids)}"
            if self.broken("seq-crmid-by-batch-size"):
                crm_id = f"s{kind[:2]}{len(items)}x{position}"
            self.records[kind][crm_id] = dict(item)
            self.created[crm_id] = dict(item)
            key = match_key(kind, item)
            if key:
                self.index[kind][key] = crm_id
            small = len(items) < 100 and self.broken("create-number-crmid")
            results.append(
                {"externalId": item["externalId"], "crmId": int(crm_id[1:]) if small else crm_id}
            )
        status = 200 if self.broken("create-200") else 201
        return JSONResponse({"results": results}, status)

    async def sync(self, request: Request) -> Response:
        kind = self.kind(request)
        items = (await request.json())[kind]
        results, unmatched = [], []
        for item in items:
            crm_id = self.index[kind].get(match_key(kind, item) or "")
            if crm_id is None:
                unmatched.append(item["externalId"])
                continue
            shown = f"x-{crm_id}" if self.broken("sync-other-crmid") else crm_id
            results.append(
                {
                    "externalId": item["externalId"],
                    "crmId": shown,
                    "properties": dict(self.records[kind][crm_id]),
                }
            )
        if not results and self.broken("sync-404-when-none"):
            return JSONResponse({"error": "no match"}, 404)
        body: dict[str, Any] = {"results": results}
        if results and self.broken("sync-extra-result"):
            results.append({"externalId": "ghost", "crmId": "s999999"})
        if results and unmatched and self.broken("sync-errors-bad-shape"):
            body["errors"] = [{"externalId": e, "message": "not found"} for e in unmatched]
        return JSONResponse(body)

    async def update(self, request: Request) -> Response:
        kind = self.kind(request)
        items = (await request.json())[kind]
        stored = self.records[kind]
        if self.broken("put-fails-batch-on-unknown") and any(
            i["crmId"] not in stored for i in items
        ):
            return JSONResponse({"error": "unknown crmId"}, 404)
        results = []
        first_unknown = bool(items) and items[0]["crmId"] not in stored
        for position, item in enumerate(items):
            crm_id, fields = item["crmId"], {k: v for k, v in item.items() if k != "crmId"}
            if first_unknown and self.broken("seq-put-unknown-first-fails-all"):
                results.append({"crmId": crm_id, "success": False, "error": "batch rejected"})
            elif crm_id not in stored:
                results.append({"crmId": crm_id, "success": False, "error": "no such record"})
            elif self.broken("put-refuses-documented-field") and DOCUMENTED & set(fields):
                results.append({"crmId": crm_id, "success": False, "error": "read-only field"})
            elif self.broken("put-refuses-engagement") and any(
                k.startswith(("campaign", "verifyEngagement")) for k in fields
            ):
                results.append({"crmId": crm_id, "success": False, "error": "unknown field"})
            else:
                self.updates[crm_id] = self.updates.get(crm_id, 0) + 1
                if self.broken("put-replaces-record"):
                    stored[crm_id] = fields
                elif self.updates[crm_id] >= 3 and self.broken("seq-third-update-drops-fields"):
                    stored[crm_id] = {**self.created[crm_id], **fields}
                elif position < 3 or not self.broken("seq-put-past-3-not-stored"):
                    stored[crm_id].update(fields)
                results.append({"crmId": crm_id, "success": True})
        return JSONResponse({"results": results})

    async def associations(self, request: Request) -> Response:
        if self.broken("associations-500"):
            return JSONResponse({"error": "boom"}, 500)
        pairs = (await request.json())["associations"]
        return JSONResponse({"success": True, "created": len(pairs)})

    async def activities(self, request: Request) -> Response:
        body = await request.json()
        if self.broken(f"activity-refuses:{body.get('type')}:{body.get('direction')}"):
            return JSONResponse({"error": "unsupported activity"}, 400)
        return JSONResponse({"id": f"a{next(self.ids)}", **body}, 201)

    def view(self, task: dict[str, Any]) -> dict[str, Any]:
        if task["completedAt"] is None and self.broken("task-omits-null-completed-at"):
            return {k: v for k, v in task.items() if k != "completedAt"}
        return task

    async def create_task(self, request: Request) -> Response:
        task = {
            **await request.json(),
            "id": f"t{next(self.ids)}",
            "completed": False,
            "completedAt": None,
        }
        self.tasks[task["id"]] = task
        self.task_copies[task["id"]] = dict(task)
        if self.broken("task-created-without-completed"):
            return JSONResponse({k: v for k, v in task.items() if k != "completed"}, 201)
        return JSONResponse(task, 201)

    async def get_task(self, request: Request) -> Response:
        task = self.tasks.get(request.path_params["taskId"])
        if task is None:
            return JSONResponse(
                {"error": "not found"}, 500 if self.broken("task-unknown-500") else 404
            )
        return JSONResponse(self.view(task))

    def complete(self, task: dict[str, Any], completed: bool) -> None:
        task["completed"] = completed
        now = datetime.now(UTC).isoformat()
        if self.broken("task-complete-resets-completed-at"):
            task["completedAt"] = now if completed else None
        else:
            task["completedAt"] = (task["completedAt"] or now) if completed else None

    async def patch_task(self, request: Request) -> Response:
        task = self.tasks.get(request.path_params["taskId"])
        if task is None:
            return JSONResponse(
                {"error": "not found"}, 500 if self.broken("task-patch-unknown-500") else 404
            )
        if not self.broken("task-patch-ignores-completed"):
            self.complete(task, (await request.json())["completed"])
        return JSONResponse(self.view(task))

    async def get_tasks(self, request: Request) -> Response:
        ids = (await request.json()).get("ids")
        if ids is None:  # the switch tasks-batch-all-without-ids let it through
            return JSONResponse([self.view(t) for t in self.tasks.values()])
        if self.broken("tasks-batch-404-unknown") and any(i not in self.tasks for i in ids):
            return JSONResponse({"error": "unknown id"}, 404)
        if self.broken("tasks-batch-first-only"):
            ids = ids[:1]
        source = self.task_copies if self.broken("seq-batch-get-stale") else self.tasks
        return JSONResponse([self.view(source[i]) for i in ids if i in self.tasks])

    async def complete_tasks(self, request: Request) -> Response:
        body = await request.json()
        done = [self.tasks[i] for i in body["ids"] if i in self.tasks]
        if self.broken("seq-batch-complete-stores-first"):
            done = done[:1] + [dict(t) for t in done[1:]]  # the rest completed in copies
        for task in done:
            self.complete(task, body["completed"])
            self.task_copies[task["id"]] = dict(task)
        return JSONResponse(done)

    @property
    def app(self) -> Starlette:
        g = self.guard
        batch = [
            Route("/tasks/batch", g("POST /tasks/batch", self.get_tasks), methods=["POST"]),
            Route("/tasks/batch", g("PATCH /tasks/batch", self.complete_tasks), methods=["PATCH"]),
        ]
        by_id = [
            Route("/tasks/{taskId}", g("GET /tasks/:taskId", self.get_task), methods=["GET"]),
            Route("/tasks/{taskId}", g("PATCH /tasks/:taskId", self.patch_task), methods=["PATCH"]),
        ]
        # The bug of the issue: a /tasks/{taskId} route declared first takes "batch" for an id.
        tasks = by_id + batch if self.broken("tasks-route-swallows-batch") else batch + by_id
        routes = [
            Route("/health", g("GET /health", self.health), methods=["GET"]),
            Route("/users", g("GET /users", self.users), methods=["GET"]),
        ]
        for kind in ("companies", "contacts"):
            routes += [
                Route(f"/{kind}", g(f"POST /{kind}", self.create), methods=["POST"]),
                Route(f"/{kind}/sync", g(f"POST /{kind}/sync", self.sync), methods=["POST"]),
                Route(f"/{kind}", g(f"PUT /{kind}", self.update), methods=["PUT"]),
            ]
        routes += [
            Route("/associations", g("POST /associations", self.associations), methods=["POST"]),
            Route("/activities", g("POST /activities", self.activities), methods=["POST"]),
            Route("/tasks", g("POST /tasks", self.create_task), methods=["POST"]),
            *tasks,
        ]
        return Starlette(routes=routes)
