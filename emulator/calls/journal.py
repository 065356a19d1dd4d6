"""The journal of incoming calls: an in-memory ring, bounded in rows and in bytes.

Recording is cheap on purpose (it sits on every /v1 and /crm call): a call keeps raw bytes and
numbers; JSON decoding, ISO formatting and filtering happen only when the journal is read.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import msgspec

from emulator.public_api.envelopes import Meta
from emulator.wire import Wire, now_iso

BODY_CAP = 16 * 1024  # bytes of each request and response body kept per call
DEFAULT_ROWS = 10_000
DEFAULT_BYTES = 8 * 1024 * 1024  # at most this much memory grows under a load of big answers
ROW_OVERHEAD = 256  # what a call costs beside its bodies, path and query (an estimate)
MAX_PAGE_SIZE = 1000
REDACTED = "***"
SECRET_KEYS = frozenset(
    {"apikey", "secret", "password", "token", "accesstoken", "refreshtoken", "clientsecret"}
)
_SECRET_PAIR = re.compile(
    r'("(?:' + "|".join(SECRET_KEYS) + r')"\s*:\s*)"(?:[^"\\]|\\.)*(?:"|\Z)', re.IGNORECASE
)


class CallFault(Wire):
    """The fault that shaped a call: its id and what it did."""

    id: str
    effects: list[str]


class Call(msgspec.Struct, gc=False):
    """One call as recorded: raw pieces, turned into wire form only when read. Not tracked
    by the cyclic garbage collector (it holds no container that could form a cycle): thousands
    of live calls would otherwise make each collection walk them all, on the hot path."""

    id: int
    method: str
    path: str
    query: str
    at: float  # wall clock, seconds since the epoch
    virtual_at: datetime
    route: str | None = None
    status: int | None = None  # None: no answer (the connection was dropped)
    duration_ms: float = 0.0
    request_body: bytes = b""
    request_truncated: bool = False
    response_body: bytes = b""
    response_truncated: bool = False
    key_id: str | None = None
    fault: CallFault | None = None
    size: int = 0
    generation: int = 0  # the journal's generation when the call came in


class CallOut(Wire):
    """A call as GET /_emulator/requests answers it."""

    id: int
    method: str
    path: str
    route: str | None  # the route template, e.g. /v1/contact/{contactId}; null: no route
    query: str  # the raw query string, e.g. "page=2&pageSize=10"
    status: int | None  # null: no answer (a dropped connection)
    durationMs: float
    requestBody: Any  # JSON when the body is complete JSON, else its text; null: none
    requestTruncated: bool
    responseBody: Any
    responseTruncated: bool
    at: str  # wall clock
    virtualAt: str  # the emulator's clock
    keyId: str | None  # /v1: the fixture key's name; /crm: "crm" when the CRM key matched
    fault: CallFault | None = None


class CallPage(Wire):
    data: list[CallOut]
    meta: Meta


class CallFilter(msgspec.Struct, frozen=True):
    method: str | None = None
    route: str | None = None
    path: str | None = None
    status: int | None = None
    unanswered: bool = False  # only calls that got no answer (status "none")

    def accepts(self, call: Call) -> bool:
        return (
            (self.method is None or call.method == self.method)
            and (self.route is None or call.route == self.route)
            and (self.path is None or call.path == self.path)
            and (self.status is None or call.status == self.status)
            and (not self.unanswered or call.status is None)
        )


def redacted(value: Any) -> Any:
    """A JSON value with the values of secret-named keys (a CRM's apiKey in POST
    /v1/custom-crm/connect, a webhook's secret) replaced by REDACTED."""
    if isinstance(value, dict):
        return {
            k: REDACTED if k.lower() in SECRET_KEYS and v is not None else redacted(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [redacted(v) for v in value]
    return value


def body_value(body: bytes, truncated: bool) -> Any:
    """A body as JSON when it is complete JSON; else its text (None when empty); secrets
    redacted either way."""
    if not body:
        return None
    if not truncated:
        try:
            return redacted(msgspec.json.decode(body))
        except (msgspec.DecodeError, UnicodeDecodeError):
            pass
    text = body.decode("utf-8", errors="replace")
    # a cut-off or non-JSON body: each "secretKey": "value" pair it holds, and a value the
    # cut left open ("apiKey": "abc... at the end)
    return _SECRET_PAIR.sub(lambda m: f'{m.group(1)}"{REDACTED}"', text)


def wire(call: Call) -> CallOut:
    return CallOut(
        id=call.id,
        method=call.method,
        path=call.path,
        route=call.route,
        query=call.query,
        status=call.status,
        durationMs=round(call.duration_ms, 3),
        requestBody=body_value(call.request_body, call.request_truncated),
        requestTruncated=call.request_truncated,
        responseBody=body_value(call.response_body, call.response_truncated),
        responseTruncated=call.response_truncated,
        at=now_iso(datetime.fromtimestamp(call.at, UTC)),
        virtualAt=now_iso(call.virtual_at),
        keyId=call.key_id,
        fault=call.fault,
    )


class CallJournal:
    """Calls oldest to newest; beyond `max_rows` rows or `max_bytes` bytes the oldest go."""

    def __init__(self, max_rows: int = DEFAULT_ROWS, max_bytes: int = DEFAULT_BYTES) -> None:
        self.max_rows, self.max_bytes = max_rows, max_bytes
        self._calls: deque[Call] = deque()
        self._bytes = 0
        self._next_id = 1
        # Counts clears: a call still running when the journal was cleared (a slow one its
        # client gave up on, then a reset) belongs to the time before and is not added.
        self.generation = 0

    def __len__(self) -> int:
        return len(self._calls)

    @property
    def bytes(self) -> int:
        return self._bytes

    def next_id(self) -> int:
        n = self._next_id
        self._next_id += 1
        return n

    def add(self, call: Call) -> None:
        if call.generation != self.generation:
            return
        size = call.size = (
            ROW_OVERHEAD
            + len(call.request_body)
            + len(call.response_body)
            + len(call.path)
            + len(call.query)
        )
        calls = self._calls
        calls.append(call)
        self._bytes += size
        if len(calls) > self.max_rows or self._bytes > self.max_bytes:
            while len(calls) > 1 and (len(calls) > self.max_rows or self._bytes > self.max_bytes):
                self._bytes -= calls.popleft().size

    def clear(self) -> int:
        """Forget every call; answers how many there were (ids keep counting up)."""
        n = len(self._calls)
        self._calls.clear()
        self._bytes = 0
        self.generation += 1
        return n

    def newest_first(self, where: CallFilter) -> Iterator[Call]:
        return (c for c in reversed(self._calls) if where.accepts(c))

    def page(self, where: CallFilter, page: int, page_size: int) -> CallPage:
        found = list(self.newest_first(where))
        start = (page - 1) * page_size
        data = [wire(c) for c in found[start : start + page_size]]
        return CallPage(data=data, meta=Meta(page=page, pageSize=page_size, total=len(found)))
