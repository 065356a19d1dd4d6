"""emulator/exception_layer.py: the emulator's app, with its lighter exception handling (and
the router that runs its fixed paths' endpoints by `endpoint_app`), answers every kind of
error exactly as Starlette's own stack does over the same routes and handlers."""

from __future__ import annotations

import httpx
import pytest
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.types import Receive, Scope, Send

from emulator.exception_layer import EmulatorStarlette
from emulator.route_index import IndexedRouter, route_app

pytestmark = pytest.mark.anyio


class Teapot(Exception):
    pass


class Kettle(Teapot):
    pass


class Unhandled(Exception):
    pass


async def fine(request: Request) -> Response:
    return PlainTextResponse("fine")


async def teapot(request: Request) -> Response:
    raise Kettle("short and stout")  # handled by its base class's handler


async def not_found(request: Request) -> Response:
    raise HTTPException(404, "nothing here")  # the status handler takes it


async def conflict(request: Request) -> Response:
    raise HTTPException(409, "taken")  # no status handler: HTTPException's own


async def broken(request: Request) -> Response:
    raise Unhandled("no handler")  # the 500 handler, outermost


async def sync_handled(request: Request) -> Response:
    raise ValueError("sync handler")


def plain(request: Request) -> Response:  # a sync endpoint: Starlette's own wrapper
    raise Kettle("in a thread")


class Late:
    """A raw ASGI endpoint (not a function: Starlette runs it as it is) that starts its
    answer, then raises a handled exception."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        raise Kettle("after the start")


async def stream_fails(request: Request) -> Response:
    """An async endpoint whose streamed answer raises a handled exception once started."""

    async def chunks():  # type: ignore[no-untyped-def]
        yield b"first"
        raise Kettle("mid-stream")

    return StreamingResponse(chunks())


async def echo_body(request: Request) -> Response:
    return Response(await request.body())


async def on_teapot(request: Request, exc: Exception) -> Response:
    return JSONResponse({"teapot": str(exc), "path": request.url.path}, 418)


async def on_404(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return JSONResponse({"missing": exc.detail}, 404)


def on_value(request: Request, exc: Exception) -> Response:  # sync: run in a thread
    return PlainTextResponse(f"value: {exc}", 422)


async def on_500(request: Request, exc: Exception) -> Response:
    return JSONResponse({"error": "internal"}, 500)


ROUTES = [
    Route("/fine", fine),
    Route("/teapot", teapot, methods=["GET", "POST"]),
    Route("/missing", not_found),
    Route("/conflict", conflict),
    Route("/broken", broken),
    Route("/sync-handled", sync_handled),
    Route("/plain", plain),
    Route("/late", Late()),
    Route("/stream-fails", stream_fails),
    Mount("/api", routes=[Route("/echo", echo_body, methods=["POST"]), Route("/t", teapot)]),
]
HANDLERS = {Teapot: on_teapot, 404: on_404, ValueError: on_value, Exception: on_500}
REQUESTS = [
    ("GET", "/fine"),
    ("GET", "/teapot"),
    ("POST", "/teapot"),
    ("DELETE", "/teapot"),  # 405 from the route, before any endpoint
    ("GET", "/missing"),
    ("GET", "/nowhere"),  # 404 from the router
    ("GET", "/conflict"),
    ("GET", "/broken"),
    ("GET", "/sync-handled"),
    ("GET", "/plain"),
    ("GET", "/late"),
    ("GET", "/stream-fails"),
    ("POST", "/api/echo"),
    ("GET", "/api/echo"),
    ("GET", "/api/t"),
]


def starlettes() -> tuple[Starlette, Starlette]:
    theirs = Starlette(routes=ROUTES, exception_handlers=HANDLERS)  # type: ignore[arg-type]
    ours = EmulatorStarlette(routes=ROUTES, exception_handlers=HANDLERS)  # type: ignore[arg-type]
    ours.router = IndexedRouter(ours.router.routes)
    return theirs, ours


async def answer(app: Starlette, method: str, path: str) -> tuple[int, bytes, str] | str:
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        try:
            got = await client.request(method, path, content=b"sent body")
        except Exception as exc:  # the answer started, then the app raised
            return type(exc).__name__
    return got.status_code, got.content, got.headers.get("content-type", "")


@pytest.mark.parametrize(("method", "path"), REQUESTS)
async def test_every_error_is_answered_as_starlette_answers_it(method: str, path: str) -> None:
    theirs, ours = starlettes()
    assert await answer(ours, method, path) == await answer(theirs, method, path)


async def test_the_answers_are_the_handlers() -> None:
    """Spot checks: the comparison above is between real answers, not two failures."""
    _, ours = starlettes()
    assert await answer(ours, "GET", "/teapot") == (
        418,
        b'{"teapot":"short and stout","path":"/teapot"}',
        "application/json",
    )
    assert (await answer(ours, "GET", "/missing"))[:2] == (404, b'{"missing":"nothing here"}')  # type: ignore[index]
    assert (await answer(ours, "GET", "/broken"))[:2] == (500, b'{"error":"internal"}')  # type: ignore[index]
    assert (await answer(ours, "POST", "/api/echo"))[:2] == (200, b"sent body")  # type: ignore[index]


@pytest.mark.parametrize("which", [0, 1])
@pytest.mark.parametrize("path", ["/late", "/stream-fails"])
async def test_a_handled_exception_after_the_start_is_refused_as_starlette_does(
    which: int, path: str
) -> None:
    app = starlettes()[which]
    transport = httpx.ASGITransport(app=app)  # the app's exception reaches the client
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        with pytest.raises(RuntimeError, match="response already started"):
            await client.get(path)


async def test_the_fixed_paths_run_by_endpoint_app_only_for_async_endpoints() -> None:
    by_path = {r.path: r for r in ROUTES if isinstance(r, Route)}
    assert route_app(by_path["/fine"]) is not by_path["/fine"].app  # endpoint_app
    assert route_app(by_path["/plain"]) is by_path["/plain"].app  # sync: Starlette's
    assert route_app(by_path["/late"]) is by_path["/late"].app  # raw ASGI: itself
