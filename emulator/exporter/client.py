"""httpx client of a CRM's Part A endpoints: key header, TLS, retries with backoff, journaling.

StopExport        the run cannot go on (401, CRM unreachable at health); exit code 2
Exchange          one request and its final answer (status 0: no answer at all)
"""

from __future__ import annotations

import asyncio
import functools
import logging
import random
import ssl
import time
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, Self

import httpx
import msgspec

from emulator.asyncio_net import Lanes
from emulator.redaction import Redactor
from emulator.wire import decode, encode

log = logging.getLogger(__name__)

RETRY_STATUSES = frozenset({429, 502, 503, 504})


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


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter; `retry_after_cap` bounds a CRM's Retry-After (seconds)."""

    retries: int = 3
    base: float = 0.25
    cap: float = 8.0
    retry_after_cap: float = 60.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.retry_after_cap)
        return min(self.cap, self.base * 2**attempt) * random.uniform(0.5, 1.0)


def retry_after_seconds(value: str | None) -> float | None:
    """Retry-After as seconds or an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        # a real CRM's HTTP-date is wall time: the virtual clock does not apply here
        return parsedate_to_datetime(value).timestamp() - time.time()
    except (TypeError, ValueError):
        return None


def tls_verify(verify: bool, ca_file: str | None) -> ssl.SSLContext | bool:
    if not verify:
        return False
    if ca_file:
        return ssl.create_default_context(cafile=ca_file)
    return default_tls()


@functools.cache
def default_tls() -> ssl.SSLContext:
    """What httpx's verify=True builds (the CA bundle loaded: ~20-30 ms), once per process:
    auto-sync and the health check open a client on every advance of the clock."""
    return httpx.create_ssl_context()


URL_CACHE = 256  # request URLs kept per client (one per distinct path: a handful in practice)


@functools.cache
def _unverified_tls() -> ssl.SSLContext:
    return httpx.create_ssl_context(verify=False)


def transport_tls(tls: ssl.SSLContext | bool) -> ssl.SSLContext:
    """The context a transport takes for what `tls_verify` answered (False: unverified)."""
    return tls if isinstance(tls, ssl.SSLContext) else _unverified_tls()


@functools.cache
@functools.cache
def _client_defaults() -> tuple[tuple[bytes, bytes], ...]:
    return tuple(
        httpx.AsyncClient(transport=httpx.AsyncBaseTransport(), trust_env=False).headers.raw
    )


def client_headers(headers: Mapping[str, str] | None = None) -> httpx.Headers:
    """The headers an `httpx.AsyncClient` sends with a request: its own (Accept, User-Agent...)
    updated by `headers`, merged as it merges them."""
    merged = httpx.Headers(list(_client_defaults()))
    merged.update(headers or {})
    return merged


class CrmClient:
    """Calls one CRM; every attempt goes to `journal`, with the API key redacted.

    Requests go straight to an httpx transport: the one given (the app itself, a mock), else
    httpx's HTTP transport over `asyncio_net` (httpcore on plain asyncio: no anyio layer, one
    send() per request). Each request is the one `httpx.AsyncClient` would build (same
    URL, headers in the same order, body, timeouts; cookies a CRM sets are kept and sent
    back), without the client's per-request layers (auth, redirects, hooks: none are used).
    When the environment names a proxy and no transport is given, a plain
    `httpx.AsyncClient` sends instead, routing by HTTP(S)_PROXY and NO_PROXY.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        api_key_header: str = "X-API-Key",
        *,
        verify: bool = True,
        ca_file: str | None = None,
        timeout: float = 10.0,
        policy: RetryPolicy | None = None,
        journal: Callable[[Attempt], None] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        max_connections: int = 8,
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
        tls = tls_verify(verify, ca_file)
        limits = httpx.Limits(
            max_connections=max_connections, max_keepalive_connections=max_connections
        )
        self._http: httpx.AsyncClient | None = None
        self._transport = transport
        self._lanes: Lanes | None = None
        if transport is None and urllib.request.getproxies():
            self._http = httpx.AsyncClient(
                base_url=self.base_url, headers=headers, verify=tls, timeout=timeout, limits=limits
            )
        elif transport is None:
            self._lanes = Lanes(
                transport_tls(tls),
                max_connections,
                pool_timeout=timeout,
            )
        self._headers = client_headers(headers)
        self._base = httpx.URL(self.base_url + "/")  # AsyncClient's base_url ends in "/"
        self._extensions = {"timeout": httpx.Timeout(timeout).as_dict()}
        self._urls: dict[str, httpx.URL] = {}
        self._cookies = httpx.Cookies()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
        if self._transport is not None:  # AsyncClient closed a transport given to it too
            await self._transport.aclose()
        if self._lanes is not None:
            await self._lanes.aclose()

    def _url(self, path: str) -> httpx.URL:
        """`path` joined to the base URL as AsyncClient joins a relative URL to its base_url."""
        url = self._urls.get(path)
        if url is None:
            if len(self._urls) >= URL_CACHE:
                self._urls.clear()
            url = httpx.URL(path)
            if url.is_relative_url:
                url = self._base.copy_with(raw_path=self._base.raw_path + url.raw_path.lstrip(b"/"))
            self._urls[path] = url
        return url

    async def _send(self, method: str, path: str, content: bytes | None) -> httpx.Response:
        """One request and its whole answer."""
        if self._http is not None:
            return await self._http.request(method, path, content=content)
        request = httpx.Request(
            method,
            self._url(path),
            headers=self._headers,
            content=content,
            extensions=self._extensions,
        )
        if self._cookies:
            self._cookies.set_cookie_header(request)
        if self._transport is not None:
            response = await self._exchange(self._transport, request)
        else:
            assert self._lanes is not None
            lane = await self._lanes.take()
            try:
                response = await self._exchange(lane, request)
            finally:
                self._lanes.give(lane)
        if "set-cookie" in response.headers:
            self._cookies.extract_cookies(response)
        return response

    @staticmethod
    async def _exchange(
        transport: httpx.AsyncBaseTransport, request: httpx.Request
    ) -> httpx.Response:
        response = await transport.handle_async_request(request)
        response.request = request
        try:
            await response.aread()
        finally:
            await response.aclose()
        return response

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
        started = time.perf_counter()
        attempt = 0
        while True:
            await self._gate()
            t0 = time.perf_counter()
            status, data, error, retry_after = 0, b"", None, None
            try:
                response = await self._send(method, path, content)
                status, data = response.status_code, response.content
                retry_after = retry_after_seconds(response.headers.get("Retry-After"))
            except httpx.TransportError as exc:
                error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                error = self.redactor.text(error)
            if self._journal is not None:
                self._journal(
                    Attempt(
                        method,
                        path,
                        status or None,
                        (time.perf_counter() - t0) * 1000,
                        attempt + 1,
                        self._redact(content),
                        self._redact(data),
                        error,
                    )
                )
            paused = status == 429 and retry_after is not None
            if paused:
                self.pause(self.policy.delay(attempt, retry_after))
            retryable = status == 0 or status in RETRY_STATUSES
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
            self._redact(content),
            self._redact(data) or b"",
            attempt + 1,
            error,
        )
        if status == 401:
            raise StopExport(f"API key rejected by CRM (401 on {method} {path})")
        return exchange
