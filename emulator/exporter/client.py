"""The exporter's client of a CRM's Part A endpoints: key header, retries with backoff, pauses,
journaling. Its transport, deadline, response cap and TLS are `emulator.outbound`'s.

StopExport        the run cannot go on (401, CRM unreachable at health); exit code 2
Exchange          one request and its final answer (status 0: no answer at all)
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Self

import httpx
import msgspec

from emulator.outbound import (
    EXPORT_DEADLINE,
    RESPONSE_CAP,
    RETRY_STATUSES,
    DeadlineExceeded,
    Peer,
    ResponseTooLarge,
    RetryPolicy,
    retry_after_seconds,
    tls_verify,
)
from emulator.redaction import Redactor
from emulator.wire import decode, encode

log = logging.getLogger(__name__)

REDACTED = b"***"

__all__ = [  # what callers import from here (the retry policy is the outbound module's)
    "Attempt",
    "CrmClient",
    "Exchange",
    "MalformedBody",
    "RetryPolicy",
    "StopExport",
]


class StopExport(Exception):
    """The export cannot go on at all (exit code 2)."""


class MalformedBody(Exception):
    """The answer is not JSON."""


@dataclass
class Exchange:
    """One call as finally answered, after retries."""

    method: str
    path: str
    status: int  # 0: no HTTP answer (connection refused, dropped, timed out)
    duration_ms: float
    request: bytes | None
    response: bytes
    attempts: int
    error: str | None = None

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def json(self) -> Any:
        try:
            return decode(self.response)
        except msgspec.DecodeError as exc:
            raise MalformedBody(
                f"{self.method} {self.path} answered a body that is not JSON: {exc}"
            ) from None

    def describe(self) -> str:
        """Why a call failed, in one line: the status and the CRM's message, or the error."""
        if self.status == 0:
            return f"{self.method} {self.path}: no answer ({self.error})"
        text = self.response[:200].decode("utf-8", "replace")
        return f"{self.method} {self.path} answered {self.status}: {text}"


@dataclass
class Attempt:
    """One HTTP attempt, as the journal stores it (bodies already redacted)."""

    method: str
    path: str
    status: int | None
    duration_ms: float
    attempt: int
    request: bytes | None
    response: bytes | None
    error: str | None


class CrmClient:
    """Calls one CRM through an `outbound.Peer`; every attempt goes to `journal`, with the API
    key redacted. `timeout` is each exchange's total deadline (connect, send, whole answer);
    an answer over `cap` bytes fails its exchange."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        api_key_header: str = "X-API-Key",
        *,
        verify: bool = True,
        ca_file: str | None = None,
        timeout: float = EXPORT_DEADLINE,
        policy: RetryPolicy | None = None,
        journal: Callable[[Attempt], None] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        max_connections: int = 8,
        cap: int = RESPONSE_CAP,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.policy = policy or RetryPolicy()
        # A 429 with Retry-After pauses every call to this CRM until then (decisions.md §3).
        self._resume_at = 0.0  # time.monotonic() before which no request starts
        self._journal = journal
        self.redactor = Redactor([api_key])
        headers = {
            api_key_header: api_key,
            "Content-Type": "application/json",
            "Accept": "application/json",
        }
        self._peer = Peer(
            self.base_url,
            headers,
            tls=tls_verify(verify, ca_file),
            deadline=timeout,
            cap=cap,
            transport=transport,
            max_connections=max_connections,
        )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._peer.aclose()

    def _redact(self, data: bytes | None) -> bytes | None:
        return data and self.redactor.bytes(data)

    def pause(self, seconds: float) -> None:
        """No request to this CRM starts within `seconds` from now (a later end wins)."""
        log.info("CRM asked to slow down: every call waits %.2fs", seconds)
        self._resume_at = max(self._resume_at, time.monotonic() + seconds)

    async def _gate(self) -> None:
        # Loops: a 429 answered meanwhile may push the end further.
        while (wait := self._resume_at - time.monotonic()) > 0:
            await asyncio.sleep(wait)

    async def call(self, method: str, path: str, body: Any = None) -> Exchange:
        """Send one request, retrying 429/502/503/504 and transport errors; 401 stops the run."""
        content = None if body is None else encode(body)
        # redacted once: every attempt's journal row and the exchange carry the same bytes
        # (a scan of the whole body each time, ~60 us for a batch of 100 contacts)
        sent = self._redact(content)
        received: bytes | None = None
        started = time.perf_counter()
        attempt = 0
        while True:
            await self._gate()
            t0 = time.perf_counter()
            status, data, error, retry_after = 0, b"", None, None
            final = False  # a failure that trying again would only repeat
            try:
                response, data = await self._peer.send(method, path, content)
                status = response.status_code
                retry_after = retry_after_seconds(response.headers.get("Retry-After"))
            except httpx.TransportError as exc:
                error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                error = self.redactor.text(error)
                # the bound of a call is its deadline, not the deadline times its attempts
                final = isinstance(exc, DeadlineExceeded | ResponseTooLarge)
            received = self._redact(data)
            if self._journal is not None:
                self._journal(
                    Attempt(
                        method,
                        path,
                        status or None,
                        (time.perf_counter() - t0) * 1000,
                        attempt + 1,
                        sent,
                        received,
                        error,
                    )
                )
            paused = status == 429 and retry_after is not None
            if paused:
                self.pause(self.policy.delay(attempt, retry_after))
            retryable = (status == 0 and not final) or status in RETRY_STATUSES
            if not retryable or attempt >= self.policy.retries:
                break
            if not paused:  # a pause is waited out by the gate, like every other call's
                delay = self.policy.delay(attempt, None)
                log.info("%s %s: %s, retry in %.2fs", method, path, error or status, delay)
                await asyncio.sleep(delay)
            attempt += 1
        exchange = Exchange(
            method,
            path,
            status,
            (time.perf_counter() - started) * 1000,
            sent,
            received or b"",
            attempt + 1,
            error,
        )
        if status == 401:
            raise StopExport(f"API key rejected by CRM (401 on {method} {path})")
        return exchange
