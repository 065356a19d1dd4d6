"""Pure ASGI guards in front of every route: the control token and the body-size limit.

Pure ASGI (no BaseHTTPMiddleware): they add no task or body copy to the request path, and
they cover every route mounted under /_emulator, whoever adds it.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Iterable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from emulator.errors import PayloadTooLarge, Unauthorized, surface_response

CONTROL = "/_emulator"
OPEN_CONTROL_PATHS = frozenset({"/_emulator/health"})  # probes need no token
TOKEN_FORM = "/control-token"  # the dashboard's token form: where the token is presented
COOKIE = "emulator_control"  # the dashboard's cookie (HttpOnly, SameSite=Strict)
# /v1 routes that call out (a CRM's health and users, a webhook's test delivery): with a token
# set, an exposed port must not be a way to make the server call any URL.
OUTGOING_V1 = re.compile(r"^/v1/(custom-crm/(test|connect)|webhooks/[^/]+/test)/?$")
DEFAULT_MAX_BODY = 16 * 1024 * 1024  # a 100-item batch of long records is ~2 MB


def is_control(path: str) -> bool:
    return path == CONTROL or path.startswith(CONTROL + "/")


def needs_token(method: str, path: str) -> bool:
    """Every /_emulator route but health, and any other request that is not a read outside
    the emulated APIs (a dashboard form, e.g. POST /scenarios): what an exposed port risks."""
    if path in OPEN_CONTROL_PATHS or path == TOKEN_FORM:
        return False
    if is_control(path):
        return True
    if method == "POST" and OUTGOING_V1.match(path):
        return True
    emulated = path.startswith(("/v1/", "/crm/")) or path in ("/v1", "/crm")
    return method not in ("GET", "HEAD", "OPTIONS") and not emulated


def cookie_value(token: str) -> str:
    """The dashboard cookie's value: derived from the token, so the token itself is never
    sent back in a Set-Cookie header."""
    return hmac.new(token.encode(), b"emulator dashboard cookie", hashlib.sha256).hexdigest()


def _cookie(value: bytes, name: str) -> bytes | None:
    for pair in value.split(b";"):
        key, _, presented = pair.strip().partition(b"=")
        if key == name.encode():
            return presented.strip()
    return None


def token_matches(headers: Iterable[tuple[bytes, bytes]], token: str | None) -> bool:
    """Whether the request carries `Authorization: Bearer <token>`, or the dashboard's cookie
    for it (both compared in constant time)."""
    if not token:
        return False
    for raw_name, value in headers:
        name = raw_name.lower()
        if name == b"authorization":
            scheme, _, presented = value.strip().partition(b" ")
            if scheme.lower() == b"bearer" and hmac.compare_digest(
                presented.strip(), token.encode()
            ):
                return True
        elif name == b"cookie":
            presented_cookie = _cookie(value, COOKIE)
            if presented_cookie is not None and hmac.compare_digest(
                presented_cookie, cookie_value(token).encode()
            ):
                return True
    return False


class ControlToken:
    """With a token set, every request `needs_token` names answers 401 without it."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app, self.token = app, token

    def refused(self, scope: Scope) -> ASGIApp | None:
        """The 401 an http request gets, or None when it passes."""
        if (
            self.token
            and needs_token(scope["method"], scope["path"])
            and not token_matches(scope["headers"], self.token)
        ):
            return Unauthorized(
                "the control API needs `Authorization: Bearer <token>` (emulator serve "
                f"--control-token); in the dashboard, enter it at {TOKEN_FORM}",
                headers={"WWW-Authenticate": "Bearer"},
            ).response()
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and (answer := self.refused(scope)) is not None:
            await answer(scope, receive, send)
            return
        await self.app(scope, receive, send)


class _TooLarge(Exception):
    pass


class BodyLimit:
    """A request body over `max_body` bytes is answered 413 before it is read whole."""

    def __init__(self, app: ASGIApp, max_body: int = DEFAULT_MAX_BODY) -> None:
        self.app, self.max_body = app, max_body

    def unwatched(self, scope: Scope) -> bool:
        """Whether an http request leaves the limit nothing to do: no declared length over
        it (the server reads no byte past a declared one) and no Transfer-Encoding (HTTP/1.1:
        without either there is no body)."""
        for name, value in scope["headers"]:
            if name == b"content-length":
                if value.isdigit() and int(value) > self.max_body:
                    return False
            elif name == b"transfer-encoding":
                return False
        return True

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.unwatched(scope):
            await self.app(scope, receive, send)
            return
        for name, value in scope["headers"]:
            if name == b"content-length" and value.isdigit() and int(value) > self.max_body:
                await self._refuse(scope, receive, send)
                return
        # chunked: no length was declared, the body is counted as it is read
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
