"""Pure ASGI middleware: records every /v1 and /crm call in the journal and applies /v1 faults.

Pure ASGI (no BaseHTTPMiddleware): no task and no body copy beyond the journal's cap per
call. Without faults a /v1 call costs a timer, two wrapped callables and one ring append;
the bodies are kept as bytes and decoded only when the journal is read.
"""

from __future__ import annotations

import asyncio
import hmac
import time
from typing import Any
from urllib.parse import parse_qs

import msgspec
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from emulator.asgi_guards import BodyLimit
from emulator.calls.faults import Armed, Incoming, V1FaultIn, effects
from emulator.calls.journal import BODY_CAP, Call, CallFault
from emulator.calls.v1_routes import route_for
from emulator.crm.routes import DroppedConnection
from emulator.http import scope_header
from emulator.wire import encode
from emulator.workspace_scope import services_of

DROP_HEADER = (b"x-drop", b"\n")  # the invalid header DroppedConnection sends (see there)


def surface_of(path: str) -> str | None:
    """ "/v1" or "/crm" for a call of those surfaces, else None (not recorded)."""
    if path.startswith("/v1/") or path == "/v1":
        return "/v1"
    if path.startswith("/crm/") or path == "/crm":
        return "/crm"
    return None


def route_of(scope: Scope, surface: str, answered_early: bool) -> str | None:
    """The matched route's template after the mount, e.g. /v1/contact/{contactId}; for a call
    a fault answered before the router saw it, the route the router would have matched."""
    route = scope.get("route")
    if isinstance(route, Route):
        return surface + route.path
    return route_for(scope["method"], scope["path"]) if answered_early else None


def cut_off(body: bytes) -> bytes:
    """A JSON body cut off halfway (never whole, never empty)."""
    return body[: len(body) // 2] if len(body) > 1 else b"{"


def injected_body(fault: V1FaultIn) -> bytes:
    assert fault.status is not None
    if fault.body is not None:
        return encode(fault.body)
    if fault.status >= 400:
        return encode({"status": "error", "message": f"Injected fault: status {fault.status}"})
    return b"{}"


def cutting(send: Send) -> Send:
    """A send that holds the handler's answer and sends it with its body cut off."""
    start: Message | None = None
    parts: list[bytes] = []

    async def cut(message: Message) -> None:
        nonlocal start
        if message["type"] == "http.response.start":
            start = message
            return
        if message["type"] != "http.response.body" or start is None:
            await send(message)
            return
        parts.append(message.get("body", b""))
        if message.get("more_body", False):
            return
        body = cut_off(b"".join(parts))
        headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(body)).encode()))
        await send({**start, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return cut


async def drain(receive: Receive) -> None:
    """Read the request body to its end (the journal's receive keeps what it may)."""
    while True:
        message = await receive()
        if message["type"] != "http.request" or not message.get("more_body", False):
            return


async def shape(fault: V1FaultIn, app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
    """Answer a call as `fault` says (the handler runs only for latency or malformed alone)."""
    if fault.latencyMs:
        await asyncio.sleep(fault.latencyMs / 1000)
    if fault.drop:
        await drain(receive)
        await DroppedConnection()(scope, receive, send)
        return
    out = cutting(send) if fault.malformed else send
    if fault.status is None:
        await app(scope, receive, out)
        return
    await drain(receive)
    headers = dict(fault.headers)
    if fault.status == 429 and not any(k.lower() == "retry-after" for k in headers):
        headers["Retry-After"] = "1"
    answer = Response(injected_body(fault), fault.status, headers, "application/json")
    await answer(scope, receive, out)


def replaying(first: Message, receive: Receive) -> Receive:
    """`receive` with `first` put back in front (a body read ahead is read again)."""
    pending: list[Message] = [first]

    async def replay() -> Message:
        return pending.pop() if pending else await receive()

    return replay


class CallRecorder:
    """Journal of /v1 and /crm calls, and /v1 faults, for the emulator the app serves; the
    body limit (asgi_guards.BodyLimit) inside it, so a 413 is a call the journal shows too.
    The limit is asked first whether it has anything to do: most requests go straight on."""

    def __init__(self, app: ASGIApp, max_body: int) -> None:
        self.limit = BodyLimit(app, max_body)
        self.inner = app  # what the limit hands a request it has nothing to do for

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.inner(scope, receive, send)
            return
        app = self.inner if self.limit.unwatched(scope) else self.limit
        surface = surface_of(scope["path"])
        if surface is None:
            await app(scope, receive, send)
            return
        services = services_of(scope)
        calls = services.calls
        journal = calls.journal
        started = time.perf_counter()
        call = Call(
            id=journal.next_id(),
            method=scope["method"],
            path=scope["path"],
            query=scope["query_string"].decode("latin-1"),
            at=time.time(),
            virtual_at=services.emulator.clock.now(),
            generation=journal.generation,
        )
        request_parts: list[bytes] = []
        response_parts: list[bytes] = []
        request_kept = response_kept = 0  # bytes of each body kept
        dropped = False

        async def recording_receive() -> Message:
            nonlocal request_kept
            message = await receive()
            if message["type"] == "http.request":
                chunk = message.get("body", b"")
                if chunk:
                    room = BODY_CAP - request_kept
                    if len(chunk) > room:
                        call.request_truncated = True
                        chunk = chunk[:room]
                    if chunk:
                        request_parts.append(chunk)
                        request_kept += len(chunk)
            return message

        async def recording_send(message: Message) -> None:
            nonlocal dropped, response_kept
            kind = message["type"]
            if kind == "http.response.body":  # the most frequent first
                chunk = message.get("body", b"")
                if chunk:
                    room = BODY_CAP - response_kept
                    if len(chunk) > room:
                        call.response_truncated = True
                        chunk = chunk[:room]
                    if chunk:
                        response_parts.append(chunk)
                        response_kept += len(chunk)
            elif kind == "http.response.start":
                if DROP_HEADER in message.get("headers", ()):
                    dropped = True
                else:
                    call.status = message["status"]
            await send(message)

        try:
            if surface == "/v1" and calls.faults:
                armed, ahead = await self._fault_for(scope, recording_receive, services)
                if armed is None:
                    await app(scope, ahead, recording_send)
                else:
                    call.fault = CallFault(id=armed.id, effects=effects(armed.fault))
                    await shape(armed.fault, app, scope, ahead, recording_send)
            else:  # a bodiless call's receive is read by few handlers: no need to tell
                await app(scope, recording_receive, recording_send)
        except BaseException:
            if call.status is None and not dropped:
                call.status = 500  # the server's error handler answers it, outside this one
            raise
        finally:
            call.duration_ms = (time.perf_counter() - started) * 1000
            call.route = route_of(scope, surface, call.fault is not None)
            call.request_body = b"".join(request_parts)
            call.response_body = b"".join(response_parts)
            call.key_id = self._key_id(scope, surface, services)
            journal.add(call)

    @staticmethod
    def _key_id(scope: Scope, surface: str, services: Any) -> str | None:
        if surface == "/v1":
            key = scope_header(scope, b"x-api-key")
            return None if key is None else services.public_api.keys.key_id(key)
        settings = services.crm.cached_settings()
        if settings is None:
            return None
        sent = scope_header(scope, settings.apiKeyHeader.lower().encode("latin-1", "replace"))
        matched = sent is not None and hmac.compare_digest(sent.encode(), settings.apiKey.encode())
        return "crm" if matched else None

    async def _fault_for(
        self, scope: Scope, receive: Receive, services: Any
    ) -> tuple[Armed | None, Receive]:
        """The fault that takes this call, if any, and the receive the app must read from."""
        book = services.calls.faults
        key_id = None
        key = scope_header(scope, b"x-api-key")
        if key is not None and book.wants_key:
            keys = services.public_api.keys
            await keys.scopes(key)  # brings the names up to date after a reset
            key_id = keys.key_id(key)
        body: Any = None
        if book.wants_body:
            parts: list[bytes] = []
            size, more = 0, True
            message: Message = {"type": "http.request", "body": b"", "more_body": False}
            while more and size <= self.limit.max_body:
                message = await receive()
                if message["type"] != "http.request":
                    break
                parts.append(message.get("body", b""))
                size += len(parts[-1])
                more = message.get("more_body", False)
            if message["type"] == "http.request":
                message = {"type": "http.request", "body": b"".join(parts), "more_body": more}
                if not more:
                    try:
                        body = msgspec.json.decode(message["body"]) if message["body"] else None
                    except (msgspec.DecodeError, UnicodeDecodeError):
                        body = None
            receive = replaying(message, receive)
        query = parse_qs(scope["query_string"].decode("latin-1"), keep_blank_values=True)
        incoming = Incoming(scope["method"], scope["path"], key_id, query, body)
        return book.take(incoming), receive
