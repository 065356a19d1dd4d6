"""/_emulator/crm: the reference CRM's switches and faults, and what it holds."""

from __future__ import annotations

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from emulator.asgi_guards import token_matches
from emulator.control.schemas import STORED_ONE, STORED_PAGES
from emulator.crm import inspect, tasks
from emulator.crm.faults import rule_problems
from emulator.crm.routes import crm_context
from emulator.crm.schemas import Task
from emulator.errors import BadRequest, FieldError, NotFound
from emulator.fixtures.models import CrmSettings
from emulator.http import decode_body, json_response
from emulator.openapi import PAGE, Param, operation, query
from emulator.public_api.envelopes import meta_list
from emulator.public_api.params import page_params
from emulator.wire import Wire
from emulator.workspace_scope import workspace

KIND = Param(
    name="kind",
    where="path",
    required=True,
    schema={"type": "string", "enum": list(inspect.INSPECTABLE)},
)


REDACTED = "***"


@operation(
    "The reference CRM's settings (apiKey shown only to a request with the control token)",
    CrmSettings,
    errors=(),
    security=None,
)
async def get_settings(request: Request) -> Response:
    return json_response(shown(request, await crm_context(request).settings()))


def shown(request: Request, settings: CrmSettings) -> CrmSettings:
    """The settings as this request may see them: the key only to a holder of the token."""
    if token_matches(request.headers.raw, workspace(request).emulator.settings.controlToken):
        return settings
    return msgspec.structs.replace(settings, apiKey=REDACTED)


@operation(
    "Replace the reference CRM's settings (fault counters restart)",
    CrmSettings,
    body=CrmSettings,
    security=None,
)
async def put_settings(request: Request) -> Response:
    """Replace the settings as a whole; fault call counters start again from 1."""
    settings = await decode_body(request, CrmSettings, BadRequest.field)
    if settings.apiKey == REDACTED:  # a GET's answer sent back: the key stays as it is
        current = await crm_context(request).settings()
        settings = msgspec.structs.replace(settings, apiKey=current.apiKey)
    errors = [
        FieldError(field=f"faults[{i}].{field}", message=message)
        for i, rule in enumerate(settings.faults)
        for field, message in rule_problems(rule)
    ]
    if not settings.apiKey:
        errors.append(FieldError(field="apiKey", message="must not be empty"))
    if not settings.apiKeyHeader.strip():
        errors.append(FieldError(field="apiKeyHeader", message="must not be empty"))
    if errors:
        raise BadRequest("; ".join(f"{e.field}: {e.message}" for e in errors), errors)
    await crm_context(request).replace_settings(settings)
    return json_response(shown(request, settings))


def kind_param(request: Request) -> str:
    kind: str = request.path_params["kind"]
    if kind not in inspect.INSPECTABLE:
        raise NotFound(f"Unknown CRM collection {kind!r}; one of {', '.join(inspect.INSPECTABLE)}")
    return kind


@operation(
    "A page of what the reference CRM holds",
    STORED_PAGES,
    params=(
        KIND,
        *PAGE,
        query("externalId", "Only the contacts or companies with this externalId"),
    ),
    errors=(400, (404, "Unknown collection")),
    security=None,
)
async def list_records(request: Request) -> Response:
    kind = kind_param(request)
    page, page_size = page_params(request.query_params)
    external_id = request.query_params.get("externalId")
    ctx = crm_context(request)
    total, data = await inspect.list_stored(ctx.db, kind, page, page_size, external_id)
    return json_response(meta_list(data, page, page_size, total))


@operation(
    "One record the reference CRM holds (for associations: every link of the crmId)",
    STORED_ONE,
    params=(KIND,),
    errors=((404, "Unknown collection or id"),),
    security=None,
)
async def get_record(request: Request) -> Response:
    kind = kind_param(request)
    record_id = request.path_params["recordId"]
    found = await inspect.get_stored(crm_context(request).db, kind, record_id)
    if found is None:
        raise NotFound(f"No CRM {kind} record {record_id}")
    return json_response(found)


class CrmTaskChange(Wire):
    """What a CRM user does to a task on the CRM side."""

    completed: bool


TASK_ID = Param(name="crmId", where="path", required=True, description="The CRM's task id")


@operation(
    "Complete (or reopen) a task on the CRM side, as a CRM user would; the next export's "
    "task read-back brings the completion to the platform",
    Task,
    body=CrmTaskChange,
    params=(TASK_ID,),
    errors=(400, (404, "Unknown task id")),
    security=None,
)
async def change_task(request: Request) -> Response:
    body = await decode_body(request, CrmTaskChange, BadRequest.field)
    ctx = crm_context(request)
    crm_id = request.path_params["crmId"]
    found = await tasks.set_completed(ctx.db, [crm_id], body.completed, ctx.now())
    if not found:
        raise NotFound(f"No CRM task {crm_id}")
    return json_response(found[0])


@operation(
    "Delete a task on the CRM side, as a CRM user would (the exporter then finds it unknown)",
    Task,
    params=(TASK_ID,),
    errors=((404, "Unknown task id"),),
    security=None,
)
async def delete_task(request: Request) -> Response:
    crm_id = request.path_params["crmId"]
    deleted = await tasks.delete_task(crm_context(request).db, crm_id)
    if deleted is None:
        raise NotFound(f"No CRM task {crm_id}")
    return json_response(deleted)


routes: list[BaseRoute] = [
    Route("/crm/settings", get_settings, methods=["GET"]),
    Route("/crm/settings", put_settings, methods=["PUT"]),
    Route("/crm/{kind}", list_records, methods=["GET"]),
    Route("/crm/{kind}/{recordId}", get_record, methods=["GET"]),
    Route("/crm/tasks/{crmId}", change_task, methods=["PATCH"]),
    Route("/crm/tasks/{crmId}", delete_task, methods=["DELETE"]),
]
