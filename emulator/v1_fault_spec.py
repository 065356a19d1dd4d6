"""The body of a /v1 fault (POST /_emulator/v1-faults, a scenario's `v1Faults`): a match, an
effect and a budget. Apart from the rest of `calls` so that scenario files can be decoded
strictly with it."""

from __future__ import annotations

import re
from typing import Annotated, Any

import msgspec

from emulator.wire import Wire

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
MAX_LATENCY_MS = 60_000
Status = Annotated[int, msgspec.Meta(ge=200, le=599)]
Latency = Annotated[int, msgspec.Meta(ge=0, le=MAX_LATENCY_MS)]
Times = Annotated[int, msgspec.Meta(ge=1)]
HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # a header name (RFC 9110)
HEADER_VALUE = re.compile(r"[\x20-\x7e]*")  # printable ASCII: no line breaks
Probability = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]


class V1FaultIn(Wire, forbid_unknown_fields=True):
    """POST /_emulator/v1-faults (and a scenario's `v1Faults`): a match, an effect, a budget."""

    # the match: every field given must hold
    method: str | None = None  # GET, POST, ... (None: any)
    route: str | None = None  # a /v1 route template, e.g. /v1/contact/{contactId}
    path: str | None = None  # an exact path instead, e.g. /v1/contact/7
    keyId: str | None = None  # the fixture API key's name (GET /_emulator/requests shows it)
    query: dict[str, str] = {}  # query parameters the call must carry with these values
    json: Any = None  # a subset the JSON request body must contain (None: any body)
    # the effect
    status: Status | None = None  # answer this instead of calling the handler
    body: Any = None  # with `status`: the JSON body (default: the /v1 error body)
    headers: dict[str, str] = {}  # with `status`: more response headers
    latencyMs: Latency = 0  # wait this long first (wall time)
    drop: bool = False  # close the connection without an answer
    malformed: bool = False  # cut the JSON body off halfway
    # how often
    times: Times | None = None  # the first N matching calls (None: every one)
    probability: Probability | None = None  # a fraction of them, drawn from `seed`
    seed: int = 0
