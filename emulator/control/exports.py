"""/_emulator: the exporter's connection, export runs in the background, and the CRM journal."""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from emulator.errors import BadRequest, Conflict, FieldError, NotFound
from emulator.exporter import records as rec
from emulator.exporter.plan import ENGAGEMENT_FIELDS
from emulator.exporter.report import Report
from emulator.exporter.run import Exporter, resolve_crm_url
from emulator.fixtures.models import CrmConnection
from emulator.http import decode_body, json_response
from emulator.openapi import Param, operation, query
from emulator.public_api.params import page_params
from emulator.state import Emulator
from emulator.wire import Wire

log = logging.getLogger(__name__)
REDACTED = "***"


class ExportStarted(Wire):
    id: str
    status: str
    crmUrl: str


class JournalEntry(Wire):
    id: int
    exportId: str
    at: str
    method: str
    path: str
    status: int | None
    durationMs: float
    attempt: int
    requestBody: str | None
    responseBody: str | None
    error: str | None


class JournalPage(Wire):
    data: list[JournalEntry]
    page: int
    pageSize: int
    total: int


def connection_problems(c: CrmConnection) -> list[FieldError]:
    """What PUT /_emulator/connection refuses beyond the struct's types."""
    problems: list[tuple[str, str]] = []
    if not c.crmUrl.startswith(("http://", "https://", "/")):
        problems.append(("crmUrl", "must be an http(s) URL or a path of this emulator (/crm)"))
    if not c.apiKeyHeader.strip():
        problems.append(("apiKeyHeader", "must not be empty"))
    if not 1 <= c.batchSize <= 100:
        problems.append(("batchSize", "must be between 1 and 100"))
    if not 0 <= c.retries <= 10:
        problems.append(("retries", "must be between 0 and 10"))
    if c.timeoutSeconds <= 0:
        problems.append(("timeoutSeconds", "must be positive"))
    for kind in ("contacts", "companies"):
        for name in getattr(c.engagementFields, kind):
            if name not in ENGAGEMENT_FIELDS[kind]:
                problems.append((f"engagementFields.{kind}.{name}", "unknown engagement field"))
    return [FieldError(field=f, message=m) for f, m in problems]


def redacted(c: CrmConnection) -> CrmConnection:
    return msgspec.structs.replace(c, apiKey=REDACTED if c.apiKey else "")


def _emulator(request: Request) -> Emulator:
    return request.app.state.emulator  # type: ignore[no-any-return]


def _runs(request: Request) -> dict[str, Exporter]:
    """Export runs of this app, kept in memory (the reports are small)."""
    state = request.app.state
    if not hasattr(state, "exports"):
        state.exports = {}
        state.export_tasks = set()
    return state.exports  # type: ignore[no-any-return]


@operation("The exporter's CRM connection (API key redacted)", CrmConnection, errors=(404,), security=None)
async def get_connection(request: Request) -> Response:
    conn = await _emulator(request).db.read(rec.read_connection)
    if conn is None:
        raise NotFound("no CRM connection configured")
    return json_response(redacted(conn))


@operation("Set the exporter's CRM connection", CrmConnection, body=CrmConnection, security=None)
async def put_connection(request: Request) -> Response:
    conn = await decode_body(request, CrmConnection, BadRequest.field)
    problems = connection_problems(conn)
    if problems:
        raise BadRequest("invalid connection", errors=problems)
    await _emulator(request).db.write(lambda c: rec.write_connection(c, conn))
    return json_response(redacted(conn))


@operation(
    "Start an export to the configured CRM (runs in the background)", ExportStarted,
    status=202, errors=(404, 409), security=None,
)
async def start_export(request: Request) -> Response:
    emulator = _emulator(request)
    conn = await emulator.db.read(rec.read_connection)
    if conn is None:
        raise NotFound("no CRM connection configured: PUT /_emulator/connection first")
    runs = _runs(request)
    if any(r.report.status == "running" for r in runs.values()):
        raise Conflict("an export is already running")
    base = str(request.base_url).rstrip("/")
    conn = msgspec.structs.replace(conn, crmUrl=resolve_crm_url(conn.crmUrl, base))
    exporter = Exporter(
        emulator.db, conn, now=emulator.clock.now_iso, export_id=uuid.uuid4().hex[:12],
        journal_limit=emulator.settings.journalLimit,
    )
    runs[exporter.id] = exporter

    async def run() -> None:
        try:
            await exporter.run()
        except Exception as exc:  # the report must say so, not a silent dead task
            log.exception("export %s crashed", exporter.id)
            exporter.report.status, exporter.report.exitCode = "aborted", 2
            exporter.report.message = f"export crashed: {exc}"

    task = asyncio.create_task(run())
    tasks: set[Any] = request.app.state.export_tasks
    tasks.add(task)
    task.add_done_callback(tasks.discard)
    body = ExportStarted(id=exporter.id, status="running", crmUrl=conn.crmUrl)
    return json_response(body, 202, {"Location": f"/_emulator/exports/{exporter.id}"})


@operation(
    "An export: progress while it runs, the whole report when done", Report, errors=(404,),
    params=[Param(name="exportId", where="path", required=True)], security=None,
)
async def get_export(request: Request) -> Response:
    exporter = _runs(request).get(request.path_params["exportId"])
    if exporter is None:
        raise NotFound("unknown export")
    return json_response(exporter.report)


@operation(
    "Exchanges with the CRM, newest last (bodies capped, API key redacted)", JournalPage,
    params=[query("page"), query("pageSize", "1..500, default 50"),
            query("method", "e.g. POST"), query("path", "path prefix, e.g. /contacts"),
            query("exportId")],
    security=None,
)
async def journal(request: Request) -> Response:
    q = request.query_params
    page, _ = page_params(q)
    size_text = q.get("pageSize", "50")
    if not size_text.isdigit() or not 1 <= int(size_text) <= 500:
        raise BadRequest.field("pageSize", "must be an integer between 1 and 500")
    size = int(size_text)
    clauses: list[str] = []
    params: list[Any] = []
    if q.get("method"):
        clauses.append("method = ?")
        params.append(q["method"].upper())
    if q.get("path"):
        clauses.append("substr(path, 1, ?) = ?")
        params += [len(q["path"]), q["path"]]
    if q.get("exportId"):
        clauses.append("exportId = ?")
        params.append(q["exportId"])
    where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    db = _emulator(request).db
    total_row = await db.fetchone(f"SELECT count(*) FROM export_journal{where}", params)
    rows = await db.fetchall(
        "SELECT id, exportId, at, method, path, status, durationMs, attempt, requestBody,"
        f" responseBody, error FROM export_journal{where} ORDER BY id LIMIT ? OFFSET ?",
        [*params, size, (page - 1) * size],
    )
    names = JournalEntry.__struct_fields__
    data = [JournalEntry(**dict(zip(names, r))) for r in rows]
    return json_response(JournalPage(data=data, page=page, pageSize=size, total=total_row[0] if total_row else 0))


routes: list[BaseRoute] = [
    Route("/connection", get_connection, methods=["GET"]),
    Route("/connection", put_connection, methods=["PUT"]),
    Route("/exports", start_export, methods=["POST"]),
    Route("/exports/{exportId}", get_export, methods=["GET"]),
    Route("/journal", journal, methods=["GET"]),
]
