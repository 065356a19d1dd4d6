"""/_emulator/verify: start `emulator verify` runs in the background, read their reports."""

from __future__ import annotations

import secrets
from typing import Annotated

import httpx
import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from emulator.control.verify_scratch import scratch_prober
from emulator.crm.routes import crm_context
from emulator.errors import BadRequest, Conflict, NotFound, refuse_control_target
from emulator.http import decode_body, json_response
from emulator.openapi import operation
from emulator.platform import connection as platform_connection
from emulator.verify.deep_report import (
    DEFAULT_EXAMPLES,
    DEFAULT_TIME_LIMIT,
    MAX_EXAMPLES,
    DeepOptions,
)
from emulator.verify.html import html_report
from emulator.verify.report import Report
from emulator.verify.runner import Prober
from emulator.verify.runs import Run, RunStatus, TooManyRuns, VerifyRuns
from emulator.wire import NonNegative64, WireOmit
from emulator.workspace_scope import workspace


class VerifyIn(WireOmit):
    """Which CRM to verify; without `crmUrl`, this emulator's own reference CRM (/crm)."""

    crmUrl: str | None = None
    apiKey: str | None = None
    apiKeyHeader: str | None = None
    deep: bool = False  # after the checks, random call sequences (`verify --deep`)
    examples: Annotated[int, msgspec.Meta(ge=1, le=MAX_EXAMPLES)] | None = None
    seed: NonNegative64 | None = None
    deepTime: Annotated[float, msgspec.Meta(gt=0, le=86400)] | None = None  # seconds
    # the reference CRM only: verify a scratch copy of it (same fixtures and settings), so
    # no probe record is left in the one in use
    scratch: bool = False


class VerifyRun(WireOmit):
    id: str
    status: RunStatus
    crmUrl: str
    startedAt: str
    scratch: bool  # a scratch copy of the reference CRM was verified
    message: str | None = None
    report: Report | None = None


class VerifyRunList(WireOmit):
    """The runs kept (the last 20, running ones always), newest first, without reports."""

    data: list[VerifyRun]


def _registry(request: Request) -> VerifyRuns:
    return workspace(request).verify_runs


def _run(request: Request) -> Run:
    run = _registry(request).get(request.path_params["verifyId"])
    if run is None:
        raise NotFound("unknown verify run")
    return run


def _view(run: Run, with_report: bool = True) -> VerifyRun:
    return VerifyRun(
        id=run.id,
        status=run.status,
        crmUrl=run.crm_url,
        startedAt=run.started_at,
        scratch=run.scratch,
        message=run.message,
        report=run.report if with_report else None,
    )


async def _prober(request: Request, body: VerifyIn) -> Prober:
    """A prober of the CRM asked for; this app's own /crm is called in-process (ASGI). Each
    call's deadline is `serve --outgoing-deadline`'s (the route takes no timeout)."""
    deadline = workspace(request).emulator.settings.outgoingDeadline
    url = body.crmUrl or "/crm"
    refuse_control_target("crmUrl", url)  # probes POST .../tasks: never the control API's
    if body.scratch:
        if url.rstrip("/") != "/crm":
            raise BadRequest.field(
                "scratch", "applies only to this emulator's reference CRM (/crm)"
            )
        return await scratch_prober(request, body.apiKey, body.apiKeyHeader)
    if url.startswith("/"):
        settings = await crm_context(request).settings()
        crm = platform_connection.resolve(
            url.rstrip("/") or "/",
            platform_connection.own_base(request),
            in_process=httpx.ASGITransport(app=request.app, raise_app_exceptions=False),
        )
        return Prober(
            crm.base_url,
            body.apiKey or settings.apiKey,
            body.apiKeyHeader or settings.apiKeyHeader,
            transport=crm.transport,
            timeout=deadline,
        )
    if not platform_connection.is_absolute(url):
        raise BadRequest.field("crmUrl", "must be an http(s) URL or a path of this emulator (/crm)")
    if not body.apiKey:
        raise BadRequest.field("apiKey", "is required with a crmUrl of another server")
    return Prober(url, body.apiKey, body.apiKeyHeader or "X-API-Key", timeout=deadline)


@operation(
    "Verify a CRM against every Part A endpoint and rule (runs in the background); with "
    "`deep`, then random call sequences checked after every call",
    VerifyRun,
    status=202,
    body=VerifyIn,
    errors=(400, 409),
    security=None,
)
async def start_verify(request: Request) -> Response:
    raw = await request.body()
    body = await decode_body(request, VerifyIn, BadRequest.field) if raw.strip() else VerifyIn()
    if body.apiKeyHeader is not None and not body.apiKeyHeader.strip():
        raise BadRequest.field("apiKeyHeader", "must not be empty")
    if not body.deep and any(v is not None for v in (body.examples, body.seed, body.deepTime)):
        raise BadRequest.field("deep", "must be true with examples, seed or deepTime")
    deep = None
    if body.deep:
        seed = body.seed if body.seed is not None else secrets.randbelow(2**32)
        deep = DeepOptions(
            examples=body.examples or DEFAULT_EXAMPLES,
            seed=seed,
            timeLimit=body.deepTime or DEFAULT_TIME_LIMIT,
        )
    prober = await _prober(request, body)
    # the key this run sends stays out of this app's answers and logs from now on
    workspace(request).secrets.add(prober.api_key)
    try:
        run = _registry(request).start(prober, deep)
    except TooManyRuns as exc:
        await prober.aclose()
        raise Conflict(str(exc)) from None
    run.scratch = body.scratch
    return json_response(_view(run), 202, {"Location": f"/_emulator/verify/{run.id}"})


@operation(
    "The verify runs kept (the last 20 finished ones and every running one), newest first, "
    "with their status but not their reports",
    VerifyRunList,
    security=None,
)
async def list_verify(request: Request) -> Response:
    runs = [_view(r, with_report=False) for r in _registry(request).recent()]
    return json_response(VerifyRunList(data=runs))


@operation(
    "A verify run: running, then pass, fail or error with the JSON report",
    VerifyRun,
    errors=(404,),
    security=None,
)
async def get_verify(request: Request) -> Response:
    return json_response(_view(_run(request)))


@operation(
    "Cancel a running verify run: it stops, and its report says so (the checks made so far "
    "keep their verdicts); 200 with the run. Cancelling a cancelled run again answers the "
    "same; one that ended otherwise answers 409",
    VerifyRun,
    errors=(404, 409),
    security=None,
)
async def cancel_verify(request: Request) -> Response:
    run = _run(request)
    if not await _registry(request).cancel(run) and run.status != "cancelled":
        raise Conflict(f"verify run {run.id} has already finished: {run.status}")
    return json_response(_view(run))


@operation(
    "A finished verify run's self-contained HTML report",
    str,
    errors=(404, 409),
    security=None,
    media="text/html",
)
async def verify_html(request: Request) -> Response:
    run = _run(request)
    if run.report is None:
        raise Conflict(f"verify run {run.id} has no report: {run.message or run.status}")
    return Response(html_report(run.report), 200, media_type="text/html; charset=utf-8")


routes: list[BaseRoute] = [
    Route("/verify", start_verify, methods=["POST"]),
    Route("/verify", list_verify, methods=["GET"]),
    Route("/verify/{verifyId}", get_verify, methods=["GET"]),
    Route("/verify/{verifyId}", cancel_verify, methods=["DELETE"]),
    Route("/verify/{verifyId}/report.html", verify_html, methods=["GET"]),
]
