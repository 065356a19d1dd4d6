"""Starlette-side helpers shared by the handlers of every surface."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from emulator.wire import decode, encode, split_validation_error

T = TypeVar("T")


def json_response(
    body: Any, status_code: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    return Response(encode(body), status_code, headers, "application/json")


def scope_header(scope: Scope, name: bytes) -> str | None:
    """The request's first header `name` (lower case, as the server gives header names), as
    `request.headers.get` reads it, without building a Headers object."""
    for key, value in scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return None


class PiecesResponse(Response):
    """A JSON 200 whose body is `pieces` joined, sent piece by piece without joining them (a
    cached page's items and its envelope's end: the server writes them out in one call)."""

    def __init__(self, pieces: tuple[bytes, ...]) -> None:
        self.status_code, self.background = 200, None
        kept = [piece for piece in pieces if piece]
        self.pieces = kept or [b""]
        self.body = b""  # unused: the pieces are the body
        self.raw_headers = [
            (b"content-length", str(sum(map(len, kept))).encode()),
            (b"content-type", b"application/json"),
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
        *first, last = self.pieces
        for piece in first:
            await send({"type": "http.response.body", "body": piece, "more_body": True})
        await send({"type": "http.response.body", "body": last, "more_body": False})


async def decode_body(request: Request, type: type[T], error: Callable[[str, str], Exception]) -> T:
    """Decode the request body as `type`; bad JSON or shape raises `error(field, message)`."""
    body = await request.body()
    if not body.strip():
        raise error("", "request body is required (JSON)")
    try:
        return decode(body, type)
    except msgspec.ValidationError as exc:
        raise error(*split_validation_error(exc)) from None
    except msgspec.DecodeError as exc:
        raise error("", f"malformed JSON: {exc}") from None
    except UnicodeDecodeError:  # msgspec raises it (not DecodeError) for invalid UTF-8
        raise error("", "malformed JSON: the body is not valid UTF-8") from None
