"""Pure ASGI guards in front of every route: the control token and the body-size limit.

Pure ASGI (no BaseHTTPMiddleware): they add no task or body copy to the request path, and
they cover every route mounted under /_emulator, whoever adds it.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from emulator.errors import PayloadTooLarge, Unauthorized, surface_response

CONTROL = "/_emulator"
OPEN_CONTROL_PATHS = frozenset({"/_emulator/health"})  # probes need no token
DEFAULT_MAX_BODY = 16 * 1024 * 1024  # a 100-item batch of long records is ~2 MB


def is_control(path: str) -> bool:
    return path == CONTROL or path.startswith(CONTROL + "/")


def needs_token(method: str, path: str) -> bool:
    """Every /_emulator route but health, and any other request that is not a read outside
    the emulated APIs (a dashboard form, e.g. POST /scenarios): what an exposed port risks."""
    if path in OPEN_CONTROL_PATHS:
        return False
    if is_control(path):
        return True
    emulated = path.startswith(("/v1/", "/crm/")) or path in ("/v1", "/crm")
    return method not in ("GET", "HEAD", "OPTIONS") and not emulated


def token_matches(headers: Iterable[tuple[bytes, bytes]], token: str | None) -> bool:
    """Whether the request carries `Authorization: Bearer <token>` (compared in constant time)."""
    if not token:
        return False
    for name, value in headers:
        if name.lower() == b"authorization":
            scheme, _, presented = value.strip().partition(b" ")
            return scheme.lower() == b"bearer" and hmac.compare_digest(
                presented.strip(), token.encode()
            )
    return False


class ControlToken:
    """With a token set, every request `needs_token` names answers 401 without it."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app, self.token = app, token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            self.token
            and scope["type"] == "http"
            and needs_token(scope["method"], scope["path"])
            and not token_matches(scope["headers"], self.token)
        ):
            error = Unauthorized(
                "the control API needs `Authorization: Bearer <token>` (emulator serve "
                "--control-token)",
                headers={"WWW-Authenticate": "Bearer"},
            )
            await error.response()(scope, receive, send)
            return
        await self.app(scope, receive, send)


class _TooLarge(Exception):
    pass


class BodyLimit:
    """A request body over `max_body` bytes is answered 413 before it is read whole."""

    def __init__(self, app: ASGIApp, max_body: int = DEFAULT_MAX_BODY) -> None:
        self.app, self.max_body = app, max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope["headers"]:
            if name == b"content-length" and value.isdigit() and int(value) > self.max_body:
                await self._refuse(scope, receive, send)
                return
        received = 0
        started = False

        async def limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body:  # chunked: no length was declared
                    raise _TooLarge
            return message

        async def tracked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited, tracked)
        except _TooLarge:
            if not started:
                await self._refuse(scope, receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        message = f"request body larger than {self.max_body} bytes (emulator serve --max-body)"
        response = surface_response(scope["path"], PayloadTooLarge(message), "payload_too_large")
        response.headers["Connection"] = "close"  # the rest of the body is never read
        await response(scope, receive, send)
