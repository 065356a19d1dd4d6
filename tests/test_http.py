"""PiecesResponse: a body sent as its pieces is the same answer as the joined body;
scope_header reads a header as Starlette's Headers do (the /v1 key, the journal's)."""

from __future__ import annotations

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from emulator.http import PiecesResponse, scope_header


def app_of(pieces: tuple[bytes, ...]) -> Starlette:
    async def page(request: Request) -> Response:
        response = PiecesResponse(pieces)
        response.headers["x-extra"] = "kept"  # headers set after it is made still go out
        return response

    return Starlette(routes=[Route("/p", page, methods=["GET"])])


@pytest.mark.anyio
@pytest.mark.parametrize(
    "pieces", [(b'{"data":[1,2', b'],"total":2}'), (b"", b"{}"), (b"x" * 70_000, b"y"), (b"",)]
)
async def test_the_pieces_arrive_as_one_body_with_its_length(pieces: tuple[bytes, ...]) -> None:
    transport = httpx.ASGITransport(app=app_of(pieces))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        r = await client.get("/p")
        head = await client.head("/p")
    body = b"".join(pieces)
    assert (r.status_code, r.content) == (200, body)
    assert r.headers["content-length"] == str(len(body)) == head.headers["content-length"]
    assert r.headers["content-type"] == "application/json"
    assert r.headers["x-extra"] == "kept"


names = st.sampled_from([b"x-api-key", b"host", b"x-api-keys", b"x-api", b"content-type"])
values = st.binary(max_size=12).map(lambda b: b.replace(b"\r", b"").replace(b"\n", b""))


@given(st.lists(st.tuples(names, values), max_size=6))
def test_a_header_is_the_first_of_its_name(headers: list[tuple[bytes, bytes]]) -> None:
    scope = {"type": "http", "headers": headers}
    expected = next((v.decode("latin-1") for n, v in headers if n == b"x-api-key"), None)
    assert scope_header(scope, b"x-api-key") == expected == Headers(scope=scope).get("x-api-key")
