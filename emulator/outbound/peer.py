"""Outgoing calls to one server (a CRM): its base URL, headers, TLS and connections.

Requests go straight to an httpx transport: the one given (the app itself, a mock, a
recorder), else `Lanes` (plain HTTP parsed by httptools; https through httpcore on plain
asyncio): no anyio layer, one send() per request. Each request is the one `httpx.AsyncClient`
would build (same URL, headers in the same order, body; cookies the server sets are kept and
sent back), without the client's per-request layers (auth, redirects, hooks: none are used).
When the environment names a proxy and no transport is given, a plain `httpx.AsyncClient`
sends instead, routing by HTTP(S)_PROXY and NO_PROXY. Every exchange, whichever the path, is
bounded by `limits.exchange`: the deadline and the response cap.
"""

from __future__ import annotations

import ssl
import urllib.request
from collections.abc import Mapping
from typing import Self

import httpx

from emulator.outbound.lane import Lanes
from emulator.outbound.limits import RESPONSE_CAP, exchange
from emulator.outbound.tls import client_headers, transport_tls

URL_CACHE = 256  # request URLs kept per peer (one per distinct path: a handful in practice)


class Peer:
    """One server's outgoing calls, each within `deadline` seconds and `cap` bytes of answer."""

    def __init__(
        self,
        base_url: str,
        headers: Mapping[str, str],
        *,
        tls: ssl.SSLContext | bool,
        deadline: float,
        cap: int = RESPONSE_CAP,
        transport: httpx.AsyncBaseTransport | None = None,
        max_connections: int = 8,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.deadline = deadline
        self.cap = cap
        self._http: httpx.AsyncClient | None = None
        self._transport = transport
        self._lanes: Lanes | None = None
        if transport is None and urllib.request.getproxies():
            self._http = httpx.AsyncClient(
                base_url=self.base_url,
                headers=headers,
                verify=tls,
                timeout=deadline,
                limits=httpx.Limits(
                    max_connections=max_connections, max_keepalive_connections=max_connections
                ),
            )
        elif transport is None:
            # waiting for a free connection is bounded apart: the exchange has not started
            self._lanes = Lanes(transport_tls(tls), max_connections, pool_timeout=deadline, cap=cap)
        self._headers = client_headers(headers)
        self._base = httpx.URL(self.base_url + "/")  # AsyncClient's base_url ends in "/"
        # no timer per read or write: the exchange's deadline bounds them all (one timer a call)
        self._extensions = {"timeout": httpx.Timeout(None).as_dict()}
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

    async def send(
        self,
        method: str,
        path: str,
        content: bytes | None,
        headers: Mapping[str, str] | None = None,
    ) -> tuple[httpx.Response, bytes]:
        """One request (`headers` over the peer's own) and its whole answer: the response
        (closed) and its body. httpx's TransportError subclasses when there is none, among
        them `DeadlineExceeded` and `ResponseTooLarge`."""
        if self._http is not None:
            request = self._http.build_request(method, path, content=content, headers=headers)
            return await exchange(self._http, request, deadline=self.deadline, cap=self.cap)
        merged = self._headers
        if headers:
            merged = self._headers.copy()
            merged.update(headers)
        request = httpx.Request(
            method, self._url(path), headers=merged, content=content, extensions=self._extensions
        )
        if self._cookies:
            self._cookies.set_cookie_header(request)
        if self._transport is not None:
            response, body = await exchange(
                self._transport, request, deadline=self.deadline, cap=self.cap
            )
        else:
            assert self._lanes is not None
            lane = await self._lanes.take()
            try:
                response, body = await exchange(lane, request, deadline=self.deadline, cap=self.cap)
            finally:
                self._lanes.give(lane)
        if "set-cookie" in response.headers:
            self._cookies.extract_cookies(response)
        return response, body
