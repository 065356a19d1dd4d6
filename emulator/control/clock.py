"""/_emulator: the virtual clock, campaign start and stop, injected and listed events."""

from __future__ import annotations

from datetime import datetime, timedelta

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from emulator.clock import LATEST, LATEST_ISO
from emulator.errors import ApiError, BadRequest, Conflict, NotFound
from emulator.http import decode_body, json_response
from emulator.openapi import BUSY, Param, operation, query
from emulator.public_api.params import path_id
from emulator.simulation.campaigns.engine import AdvanceResult, Simulation
from emulator.simulation.campaigns.event_log import EventOut, read_events
from emulator.simulation.campaigns.injection import Injected, InjectedOut
from emulator.simulation.campaigns.scheduling import SimulationError
from emulator.state import Emulator
from emulator.wire import Wire, WireOmit, now_iso, parse_iso
from emulator.workspace_scope import workspace

MAX_SECONDS = 10 * 365 * 86400  # ten years: beyond that a typo is likelier than a test


class ClockOut(Wire):
    now: str
    mode: str  # frozen | realtime
    speed: float | None
    start: str


class AdvanceIn(WireOmit):
    """Exactly one of `seconds` (>= 0) or `until` (an ISO 8601 time not before now)."""

    seconds: float | msgspec.UnsetType = msgspec.UNSET
    until: str | msgspec.UnsetType = msgspec.UNSET


class CampaignRun(Wire):
    id: int
    status: str
    scheduled: int = 0  # members given a timeline by this start


class EventPage(Wire):
    data: list[EventOut]
    nextAfterId: int | None  # pass as afterId for the next page; null at the end


def _simulation(request: Request) -> Simulation:
    return workspace(request).simulation


def _error(exc: SimulationError) -> ApiError:
    if exc.status == 404:
        return NotFound(exc.message)
    if exc.status == 409:
        return Conflict(exc.message)
    return BadRequest.field(exc.field or "", exc.message)


@operation("The virtual clock", ClockOut, errors=(), security=None)
async def get_clock(request: Request) -> Response:
    clock = workspace(request).emulator.clock
    return json_response(
        ClockOut(
            now=clock.now_iso(), mode=clock.mode, speed=clock.speed, start=now_iso(clock.start)
        )
    )


def advance_target(body: AdvanceIn, emulator: Emulator) -> datetime:
    """Where an advance asked for goes (400 for a body that names no valid moment)."""
    now = emulator.clock.now()
    has_seconds, has_until = body.seconds is not msgspec.UNSET, body.until is not msgspec.UNSET
    if has_seconds == has_until:
        raise BadRequest.field("", "give exactly one of seconds or until")
    if isinstance(body.seconds, float | int):
        if not 0 <= body.seconds <= MAX_SECONDS:
            raise BadRequest.field("seconds", f"must be between 0 and {MAX_SECONDS}")
        target = now + timedelta(seconds=body.seconds)
    else:
        assert isinstance(body.until, str)
        try:
            target = parse_iso(body.until)
        except ValueError:
            raise BadRequest.field("until", "not an ISO 8601 timestamp") from None
        if target < now.replace(microsecond=now.microsecond // 1000 * 1000):
            raise BadRequest.field("until", f"is before the clock ({emulator.clock.now_iso()})")
        if target - now > timedelta(seconds=MAX_SECONDS):
            raise BadRequest.field("until", "is more than ten years ahead")
    if target > LATEST:
        field = "seconds" if has_seconds else "until"
        raise BadRequest.field(field, f"would take the clock past its last moment {LATEST_ISO}")
    return target


@operation(
    "Advance the clock by `seconds` or to `until`: campaigns progress, listeners run",
    AdvanceResult,
    body=AdvanceIn,
    errors=(400, BUSY),
    security=None,
)
async def advance(request: Request) -> Response:
    body = await decode_body(request, AdvanceIn, BadRequest.field)
    target = advance_target(body, workspace(request).emulator)
    return json_response(await _simulation(request).advance_to(target))


CAMPAIGN_ID = [Param(name="campaignId", where="path", required=True)]


@operation(
    "Start a DRAFT or PENDING campaign (ACTIVE: members walk their sequences; a stopped one"
    " resumes)",
    CampaignRun,
    errors=(400, 404, 409),
    params=CAMPAIGN_ID,
    security=None,
)
async def start_campaign(request: Request) -> Response:
    cid = path_id(request.path_params["campaignId"], "campaignId")
    try:
        status, scheduled = await _simulation(request).start_campaign(cid)
    except SimulationError as exc:
        raise _error(exc) from None
    return json_response(CampaignRun(id=cid, status=status, scheduled=scheduled))


@operation(
    "Stop an ACTIVE campaign (PENDING: members keep their place until it starts again)",
    CampaignRun,
    errors=(400, 404, 409),
    params=CAMPAIGN_ID,
    security=None,
)
async def stop_campaign(request: Request) -> Response:
    cid = path_id(request.path_params["campaignId"], "campaignId")
    try:
        status = await _simulation(request).stop_campaign(cid)
    except SimulationError as exc:
        raise _error(exc) from None
    return json_response(CampaignRun(id=cid, status=status))


@operation(
    "Inject one event for a campaign member (same effects as a simulated one)",
    InjectedOut,
    status=201,
    body=Injected,
    errors=(400, 404, 409),
    security=None,
)
async def inject_event(request: Request) -> Response:
    body = await decode_body(request, Injected, BadRequest.field)
    try:
        out = await _simulation(request).inject(body)
    except SimulationError as exc:
        raise _error(exc) from None
    return json_response(out, 201)


def _int_query(request: Request, name: str, default: int | None, low: int, high: int) -> int | None:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    text = raw.strip()
    if not text.isascii() or not text.isdigit() or not low <= int(text) <= high:
        raise BadRequest.field(name, f"must be an integer between {low} and {high}")
    return int(text)


@operation(
    "Events in occurrence order (id ascending), after `afterId`",
    EventPage,
    params=[
        query("afterId", "only events with a larger id"),
        query("limit", "1..1000, default 100"),
        query("campaignId"),
        query("contactId"),
        query("type", "an event type"),
    ],
    security=None,
)
async def list_events(request: Request) -> Response:
    emulator: Emulator = workspace(request).emulator
    after = _int_query(request, "afterId", 0, 0, 2**63 - 1)
    limit = _int_query(request, "limit", 100, 1, 1000)
    assert after is not None and limit is not None
    data = await read_events(
        emulator.db,
        after,
        limit,
        campaign_id=_int_query(request, "campaignId", None, 0, 2**63 - 1),
        contact_id=_int_query(request, "contactId", None, 0, 2**63 - 1),
        event_type=request.query_params.get("type"),
    )
    next_after = data[-1].id if len(data) == limit else None
    return json_response(EventPage(data=data, nextAfterId=next_after))


routes: list[BaseRoute] = [
    Route("/clock", get_clock, methods=["GET"]),
    Route("/clock/advance", advance, methods=["POST"]),
    Route("/campaigns/{campaignId}/start", start_campaign, methods=["POST"]),
    Route("/campaigns/{campaignId}/stop", stop_campaign, methods=["POST"]),
    Route("/events", inject_event, methods=["POST"]),
    Route("/events", list_events, methods=["GET"]),
]
