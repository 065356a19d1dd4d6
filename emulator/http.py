"""Starlette-side helpers shared by the handlers of every surface."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from emulator.wire import decode, encode, split_validation_error

T = TypeVar("T")


def json_response(
    body: Any, status_code: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    return Response(encode(body), status_code, headers, "application/json")


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
