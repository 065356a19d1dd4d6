"""What `emulator record` keeps of an export to a real CRM, and the scenario it writes.

A transport under the exporter's client
keeps every exchange in full (no journal body cap; the response cap of every outgoing call
still holds). The file written is a scenario whose
CRM is a `playback` of those answers (each with the request body it answered), and whose
expectations are that run's: the number of calls to each endpoint, the phases in the same
order each opening with the same call and status, and the report's status, exit code,
per-phase counts, checks and failed records. `emulator replay FILE` then shows the same run
anywhere, without the CRM.

The CRM's API key never reaches the file: it is not written in the connection and every
occurrence in a recorded body is replaced by "***".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx
import msgspec

from emulator.outbound import RESPONSE_CAP, ResponseTooLarge
from emulator.redaction import Redactor

if TYPE_CHECKING:
    from emulator.exporter.report import Report

# Answer headers a playback needs to behave the same (the exporter reads Retry-After).
KEPT_HEADERS = ("retry-after", "content-type")
# Connection fields a replay has no use for: where the CRM was, its key, its TLS.
NOT_RECORDED = ("crmUrl", "apiKey", "caFile", "verify")
# "requests" last: a recording with unanswered attempts leaves it out.
REPORT_PHASE_FIELDS = (
    "sent",
    "created",
    "updated",
    "unchanged",
    "alreadyLinked",
    "linkedUncounted",
    "failed",
    "heldBack",
    "skipped",
    "requests",
)


@dataclass
class Exchange:
    """One CRM exchange: its slot is taken when the request goes out (the order a playback
    answers in), the answer is filled in when it comes back (None: no answer)."""

    method: str
    path: str
    phase: str
    request: Any = None  # the JSON body sent (None: none, or not JSON)
    answer: dict[str, Any] | None = None

    @property
    def status(self) -> int | None:
        """The answer's status; None when no answer came (e.g. a dropped connection)."""
        return None if self.answer is None else int(self.answer["status"])


class RecordingTransport(httpx.AsyncBaseTransport):
    """Passes requests on and keeps every answer in full."""

    def __init__(
        self, inner: httpx.AsyncBaseTransport, prefix: str, secret: str, cap: int = RESPONSE_CAP
    ) -> None:
        self.inner, self.prefix, self.cap = inner, prefix.rstrip("/"), cap
        self.redactor = Redactor([secret])
        self.exchanges: list[Exchange] = []
        self.phase: Callable[[], str] = lambda: ""  # the exporter's phase at each request

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if self.prefix and path.startswith(self.prefix):
            path = path[len(self.prefix) :] or "/"
        body = self.request_body(await request.aread())
        exchange = Exchange(request.method.upper(), path, self.phase(), body)
        self.exchanges.append(exchange)
        response = await self.inner.handle_async_request(request)
        try:
            raw = await _raw(response, self.cap, request)
            body = _decoded(response, raw)
        except httpx.StreamConsumed:  # an answer built in memory (tests, mock transports)
            raw = body = response.content
        finally:
            await response.aclose()
        # Playback keeps the decoded body (gzip or not, the same JSON).
        exchange.answer = self.answer(response.status_code, response.headers, body)
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=httpx.ByteStream(raw),
            extensions=response.extensions,
            request=request,
        )

    def redact(self, raw: bytes) -> bytes:
        return self.redactor.bytes(raw)

    def request_body(self, raw: bytes) -> Any:
        try:
            return msgspec.json.decode(self.redact(raw)) if raw else None
        except msgspec.DecodeError:
            return None

    def answer(self, status: int, headers: httpx.Headers, raw: bytes) -> dict[str, Any]:
        raw = self.redact(raw)
        answer: dict[str, Any] = {"status": status}
        kept = {k: self.redactor.text(headers[k]) for k in KEPT_HEADERS if k in headers}
        try:
            if not raw:
                raise msgspec.DecodeError("empty")  # kept as text: "" is not JSON
            answer["body"] = msgspec.json.decode(raw)
            kept.pop("content-type", None)  # a JSON body gets application/json on playback
        except msgspec.DecodeError:
            answer["text"] = raw.decode("utf-8", "replace")
        if kept:
            answer["headers"] = kept
        return answer

    async def aclose(self) -> None:
        await self.inner.aclose()


async def _raw(response: httpx.Response, cap: int, request: httpx.Request) -> bytes:
    """The body as it came (content-encoding kept), at most `cap` bytes of it (the outgoing
    calls' response cap: a larger one is read no further)."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_raw():
        size += len(chunk)
        if size > cap:
            raise ResponseTooLarge(cap, request)
        chunks.append(chunk)
    return b"".join(chunks)


def _decoded(response: httpx.Response, raw: bytes) -> bytes:
    """The body without its content-encoding (what the exporter's client reads)."""
    if not response.headers.get("content-encoding"):
        return raw
    copy = httpx.Response(response.status_code, headers=response.headers, content=raw)
    return copy.read()


def expected_calls(answered: list[Exchange]) -> dict[str, Any]:
    """The calls a replay must make: as many to each endpoint, and the phases in the same
    order, each opening with the same call. Within a phase the exporter keeps several calls
    in flight, so their interleaving is not part of the expectation."""
    counts: dict[str, int] = {}
    openings: list[dict[str, Any]] = []
    phase = None
    for e in answered:
        key = f"{e.method} {e.path}"
        counts[key] = counts.get(key, 0) + 1
        if e.phase != phase:
            phase = e.phase
            openings.append({"method": e.method, "path": e.path, "status": e.status})
    return {"calls": openings, "counts": counts}


def expected_report(report: Report, count_requests: bool = True) -> dict[str, Any]:
    """The parts of a report a replay must reproduce (no times, ids or URLs). Attempts that
    got no answer are not played back, so with any of them the request counts differ."""
    data = msgspec.to_builtins(report)
    fields = REPORT_PHASE_FIELDS if count_requests else REPORT_PHASE_FIELDS[:-1]
    return {
        "status": data["status"],
        "exitCode": data["exitCode"],
        "phases": {name: {k: stats[k] for k in fields} for name, stats in data["phases"].items()},
        "checks": {
            name: {k: check[k] for k in ("calls", "violations", "warnings")}
            for name, check in data["checks"].items()
        },
        "failed": data["failed"],
    }


def playback(e: Exchange) -> dict[str, Any]:
    """One PlaybackAnswer: the request body is kept so that a replay gives each request the
    answer its twin got, whatever order concurrent calls and retries arrive in."""
    answer = {"method": e.method, "path": e.path, **(e.answer or {})}
    if e.request is not None:
        answer["request"] = e.request
    return answer


def scenario(
    name: str,
    crm_url: str,
    report: Report,
    exchanges: list[Exchange],
    connection: dict[str, Any],
    fixtures_dir: str | None,
) -> dict[str, Any]:
    answered = [e for e in exchanges if e.answer is not None]
    lost = len(exchanges) - len(answered)
    note = f"; {lost} exchanges got no answer and are not played back" if lost else ""
    return {
        "name": name,
        "description": (
            f"Recorded by `emulator record` from {crm_url} at {report.startedAt}: "
            f"{len(answered)} CRM answers played back in order per method and path{note}."
        ),
        "fixtures": {"directory": fixtures_dir} if fixtures_dir else {},
        "crm": {"playback": [playback(e) for e in answered]},
        "connection": connection,
        "steps": [{"step": "export"}],
        "expect": {
            "crmCalls": expected_calls(answered),
            "report": expected_report(report, not lost),
        },
    }
