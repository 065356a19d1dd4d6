"""/_emulator: the exporter's connection, export runs in the background, and the CRM journal."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import msgspec
from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from emulator.errors import BadRequest, Conflict, FieldError, NotFound
from emulator.exporter.report import Report
from emulator.exporter.runs import ExportRuns
from emulator.exporter.start import NoConnection, prepare_export
from emulator.fixtures.models import CrmConnection
from emulator.http import decode_body, json_response
from emulator.openapi import Param, operation, query
from emulator.platform import connection as platform_connection
from emulator.self_target import control_api_target
from emulator.state import Emulator
from emulator.store.db import Store
from emulator.store.export_lock import ExportLock, ExportLocked
from emulator.wire import Wire, encode, split_validation_error
from emulator.workspace_scope import workspace

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


def connection_problems(body: dict[str, Any]) -> list[FieldError]:
    """What PUT /_emulator/connection refuses, every field at once (the platform's rules)."""
    return [FieldError(field=f, message=m) for f, m in platform_connection.problems(body)]


def redacted(c: CrmConnection) -> CrmConnection:
    return msgspec.structs.replace(c, apiKey=REDACTED if c.apiKey else "")


def _emulator(request: Request) -> Emulator:
    return workspace(request).emulator


def _runs(request: Request) -> ExportRuns:
    """Export runs of this app, kept in memory (the reports are small)."""
    return workspace(request).exports


@operation(
    "The exporter's CRM connection (API key redacted)", CrmConnection, errors=(404,), security=None
)
async def get_connection(request: Request) -> Response:
    conn = await _emulator(request).db.read(platform_connection.read)
    if conn is None:
        raise NotFound("no CRM connection configured")
    return json_response(redacted(conn))


@operation("Set the exporter's CRM connection", CrmConnection, body=CrmConnection, security=None)
async def put_connection(request: Request) -> Response:
    body = await decode_body(request, dict[str, Any], BadRequest.field)
    problems = connection_problems(body)
    if problems:
        raise BadRequest("invalid connection", errors=problems)
    try:
        conn = msgspec.convert(body, CrmConnection)
    except msgspec.ValidationError as exc:
        raise BadRequest.field(*split_validation_error(exc)) from None
    await _emulator(request).db.write(lambda c: platform_connection.write(c, conn))
    return json_response(redacted(conn))


@operation(
    "Start an export to the configured CRM (runs in the background)",
    ExportStarted,
    status=202,
    errors=(404, 409),
    security=None,
)
async def start_export(request: Request) -> Response:
    emulator = _emulator(request)
    services = workspace(request)

    def checked(conn: CrmConnection | None) -> CrmConnection | None:
        if conn is not None and (loop := control_api_target(conn.crmUrl)) is not None:
            raise BadRequest.field("crmUrl", f"the stored connection's crmUrl {loop}")
        return conn

    runs = _runs(request)
    try:
        exporter = await prepare_export(
            emulator.db,
            emulator.clock.now_iso,
            emulator.settings,
            services.secrets,
            platform_connection.own_base(request),  # never the Host header
            changes=checked,
        )
    except NoConnection as exc:
        raise NotFound(str(exc)) from None
    conn = exporter.conn
    # The run holds the state (no reset, restore or advance meanwhile) and, with --db, the
    # file's export lock (no `emulator export` on the same file meanwhile) until it ends.
    await emulator.operations.acquire(f"export run {exporter.id}", wanted="export")
    file_lock = ExportLock(emulator.settings.db) if emulator.settings.db else None
    try:
        if file_lock is not None:
            file_lock.acquire()
    except ExportLocked as exc:
        emulator.operations.release()
        raise Conflict(str(exc)) from None
    runs.add(exporter)

    async def run() -> None:
        try:
            await exporter.run()
        except Exception as exc:  # the report must say so, not a silent dead task
            log.exception("export %s crashed", exporter.id)
            exporter.report.status, exporter.report.exitCode = "aborted", 2
            exporter.report.message = f"export crashed: {exc}"
        except asyncio.CancelledError:  # cancelled: the exporter's report says so, then stop
            if exporter.report.status == "running":  # cancelled before its session began
                exporter.report.status, exporter.report.exitCode = "cancelled", 2
                exporter.report.message = f"export cancelled: {exporter.cancel_reason}"
            raise
        finally:
            if file_lock is not None:
                file_lock.release()
            emulator.operations.release()

    runs.watch(asyncio.create_task(run()), exporter.id)
    body = ExportStarted(id=exporter.id, status="running", crmUrl=conn.crmUrl)
    return json_response(body, 202, {"Location": f"/_emulator/exports/{exporter.id}"})


@operation(
    "An export: progress while it runs, the whole report when done",
    Report,
    errors=(404,),
    params=[Param(name="exportId", where="path", required=True)],
    security=None,
)
async def get_export(request: Request) -> Response:
    exporter = _runs(request).get(request.path_params["exportId"])
    if exporter is None:
        raise NotFound("unknown export")
    return json_response(exporter.report)


@operation(
    "Cancel a running export: it stops at once, its report says it was cancelled (counts of "
    "what was done so far, records not reached as failed); 200 with the report. Cancelling "
    "a cancelled export again answers the same; one that ended otherwise answers 409",
    Report,
    errors=(404, 409),
    params=[Param(name="exportId", where="path", required=True)],
    security=None,
)
async def cancel_export(request: Request) -> Response:
    export_id = request.path_params["exportId"]
    exporter = _runs(request).get(export_id)
    if exporter is None:
        raise NotFound("unknown export")
    cancelled = await _runs(request).cancel(export_id, f"DELETE /_emulator/exports/{export_id}")
    if not cancelled and exporter.report.status != "cancelled":
        raise Conflict(f"export {export_id} has already finished: {exporter.report.status}")
    return json_response(exporter.report)


@operation(
    "An export's report as one self-contained HTML page (what `emulator export --html` writes)",
    str,
    errors=(404,),
    params=[Param(name="exportId", where="path", required=True)],
    security=None,
    media="text/html",
)
async def get_export_html(request: Request) -> Response:
    exporter = _runs(request).get(request.path_params["exportId"])
    if exporter is None:
        raise NotFound("unknown export")
    # Deferred: its template compiles on import (~20 ms of every start, for a page rarely asked)
    from emulator.exporter.report_html import html_report

    return HTMLResponse(html_report(exporter.report))


JOURNAL_FILTERS = (
    query("method", "e.g. POST"),
    query("path", "path prefix, e.g. /contacts"),
    query("exportId"),
    query("status", "an HTTP status, or none for exchanges that got no answer"),
)
JSONL_CHUNK = 1000  # rows per read while streaming JSON Lines
JOURNAL_COLUMNS = ", ".join(JournalEntry.__struct_fields__)


def journal_filter(q: QueryParams) -> tuple[list[str], list[Any]]:
    """SQL conditions and parameters for the journal's filters (same for JSON and JSON Lines)."""
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
    if q.get("status"):
        if q["status"] == "none":
            clauses.append("status IS NULL")
        elif q["status"].isdigit():
            clauses.append("status = ?")
            params.append(int(q["status"]))
        else:
            raise BadRequest.field("status", "must be an HTTP status or none")
    return clauses, params


async def read_journal(
    db: Store, q: QueryParams, page: int, size: int
) -> tuple[int, list[JournalEntry]]:
    """(total, one page) of the journal entries matching the filters of `q`, oldest first."""
    clauses, params = journal_filter(q)
    total, rows = await db.page("export_journal", JOURNAL_COLUMNS, clauses, params, page, size)
    return total, _entries(rows)


def bounded(q: QueryParams, name: str, default: int, low: int, high: int) -> int:
    text = q.get(name, str(default))
    if not text.isdigit() or not low <= int(text) <= high:
        raise BadRequest.field(name, f"must be an integer between {low} and {high}")
    return int(text)


def _entries(rows: list[tuple[Any, ...]]) -> list[JournalEntry]:
    names = JournalEntry.__struct_fields__
    return [JournalEntry(**dict(zip(names, r, strict=True))) for r in rows]


@operation(
    "Exchanges with the CRM, newest last (bodies capped, API key redacted); "
    "format=jsonl streams every matching entry as JSON Lines",
    JournalPage,
    params=[
        query("page"),
        query("pageSize", "1..500, default 50"),
        *JOURNAL_FILTERS,
        query("format", "json (default) or jsonl"),
    ],
    security=None,
)
async def journal(request: Request) -> Response:
    q = request.query_params
    if q.get("format", "json") not in ("json", "jsonl"):
        raise BadRequest.field("format", "must be json or jsonl")
    if q.get("format") == "jsonl":
        return await journal_jsonl(request)
    # Not page_params: that one holds /v1's 1..100 page size.
    page, size = bounded(q, "page", 1, 1, 10**9), bounded(q, "pageSize", 50, 1, 500)
    total, data = await read_journal(_emulator(request).db, q, page, size)
    return json_response(JournalPage(data=data, page=page, pageSize=size, total=total))


@operation(
    "Every matching journal entry, oldest first, one JSON object a line (streamed)",
    JournalEntry,
    params=list(JOURNAL_FILTERS),
    security=None,
    media="application/x-ndjson",
)
async def journal_jsonl(request: Request) -> Response:
    clauses, params = journal_filter(request.query_params)
    sql = (
        f"SELECT {JOURNAL_COLUMNS} FROM export_journal WHERE "
        f"{' AND '.join([*clauses, 'id > ?'])} ORDER BY id LIMIT {JSONL_CHUNK}"
    )
    db = _emulator(request).db

    async def lines() -> AsyncIterator[bytes]:
        last = 0  # keyset paging: rows the cap drops meanwhile do not shift later chunks
        while True:
            rows = await db.fetchall(sql, [*params, last])
            if not rows:
                return
            yield b"".join(encode(e) + b"\n" for e in _entries(rows))
            last = rows[-1][0]

    return StreamingResponse(lines(), media_type="application/x-ndjson")


routes: list[BaseRoute] = [
    Route("/connection", get_connection, methods=["GET"]),
    Route("/connection", put_connection, methods=["PUT"]),
    Route("/exports", start_export, methods=["POST"]),
    Route("/exports/{exportId}", get_export, methods=["GET"]),
    Route("/exports/{exportId}", cancel_export, methods=["DELETE"]),
    Route("/exports/{exportId}/report.html", get_export_html, methods=["GET"]),
    Route("/journal", journal, methods=["GET"]),
    Route("/journal.jsonl", journal_jsonl, methods=["GET"]),
]
