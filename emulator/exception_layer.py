"""Starlette's exception handling around the router, with less work per request.

Starlette's `ExceptionMiddleware` builds a `Request` and a wrapping app for every request
before it runs it, though a handler (the only reader of that `Request`) runs only when
something raises; `HandledExceptions` makes the request object when a handler needs it and
keeps the rest as Starlette does it: the same handlers, looked up the same way (a status
handler for an HTTPException first, then the exception's classes in order), the same refusal
once the answer has started, the same answer sent through the same `send`.
`EmulatorStarlette` is Starlette with this layer in place of `ExceptionMiddleware`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette._utils import is_async_callable
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.body_limit import RequestBodyLimitMiddleware
from starlette.middleware.errors import ServerErrorMiddleware
from starlette.middleware.exceptions import ExceptionMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, ExceptionHandler, Message, Receive, Scope, Send

Handlers = tuple[dict[Any, ExceptionHandler], dict[int, ExceptionHandler]]


def handler_for(exc: Exception, handlers: Handlers) -> ExceptionHandler | None:
    """Starlette's choice: an HTTPException's status handler, else the first of the
    exception's classes (most derived first) that has one."""
    exception_handlers, status_handlers = handlers
    if isinstance(exc, HTTPException):
        handler = status_handlers.get(exc.status_code)
        if handler is not None:
            return handler
    for cls in type(exc).__mro__:
        if cls in exception_handlers:
            return exception_handlers[cls]
    return None


async def answer_handled(
    exc: Exception,
    handler: ExceptionHandler,
    started: bool,
    request: Request,
    send: Send,
) -> None:
    """What Starlette does with an exception that has a handler: refuse once the answer has
    started, else send the handler's answer through `send`."""
    if started:
        raise RuntimeError("Caught handled exception, but response already started.") from exc
    if is_async_callable(handler):
        response = await handler(request, exc)  # type: ignore[arg-type]
    else:
        response = await run_in_threadpool(handler, request, exc)
    if response is not None:
        await response(request.scope, request.receive, send)
    exc.__traceback__ = None  # a reused exception would pile up tracebacks


class WatchedSend:
    """`send`, noting whether the answer has started (a handled exception after that point
    is refused, as Starlette refuses it)."""

    __slots__ = ("send", "started")

    def __init__(self, send: Send) -> None:
        self.send = send
        self.started = False

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.started = True
        await self.send(message)


class HandledExceptions(ExceptionMiddleware):
    """ExceptionMiddleware whose http requests pay for a `Request` only when one is handled."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # websocket and lifespan: Starlette's own way
            await super().__call__(scope, receive, send)
            return
        handlers = scope["starlette.exception_handlers"] = (
            self._exception_handlers,
            self._status_handlers,
        )
        sender = WatchedSend(send)

        try:
            await self.app(scope, receive, sender)
        except Exception as exc:
            handler = handler_for(exc, handlers)
            if handler is None:
                raise
            await answer_handled(
                exc, handler, sender.started, Request(scope, receive, send), sender
            )


def endpoint_app(endpoint: Callable[[Request], Awaitable[Response]]) -> ASGIApp:
    """The ASGI app Starlette's `request_response` makes of an async endpoint, in one
    function: the same `Request`, the same handlers (the scope's, as the exception layer put
    them there), the same answer to an exception, one wrapper fewer per request."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive, send)
        sender = WatchedSend(send)

        try:
            response = await endpoint(request)
            await response(scope, receive, sender)
        except Exception as exc:
            handler = handler_for(exc, scope.get("starlette.exception_handlers", ({}, {})))
            if handler is None:
                raise
            await answer_handled(exc, handler, sender.started, request, sender)

    return app


class EmulatorStarlette(Starlette):
    """Starlette, its stack built as Starlette builds it but for `HandledExceptions` (the
    same stack as the releases pyproject.toml allows build: a release that changed it would
    need this to follow; tests/test_exception_layer.py compares the two)."""

    def build_middleware_stack(self) -> ASGIApp:
        error_handler = None
        exception_handlers: dict[object, ExceptionHandler] = {}
        for key, value in self.exception_handlers.items():
            if key in (500, Exception):
                error_handler = value
            else:
                exception_handlers[key] = value
        middleware = [Middleware(ServerErrorMiddleware, handler=error_handler, debug=self.debug)]
        if self.max_body_size is not None:
            middleware.append(
                Middleware(RequestBodyLimitMiddleware, max_body_size=self.max_body_size)
            )
        middleware += self.user_middleware
        middleware.append(
            Middleware(HandledExceptions, handlers=exception_handlers, debug=self.debug)
        )
        app: ASGIApp = self.router
        for cls, args, kwargs in reversed(middleware):
            app = cls(app, *args, **kwargs)
        return app
