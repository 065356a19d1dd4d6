"""The HTTP side of one delivery pass: POSTs over keep-alive httpx transports, one connection
each, kept per receiver.

httpcore's pool scans all its connections, and for each idle one all of them again, on every
request and every response (O(n^2): with 32 connections that cost more than the sends). A
lane here is an httpx transport holding one connection; idle lanes wait in a list per
receiver (scheme and host), so taking one is O(1) however many run at once. A lane is added
only when every lane of that receiver is busy, so the pass's own bound on concurrent
attempts bounds them too.

The lanes are `outbound.lane.Lane`s, the CRM client's (plain HTTP parsed by httptools, https
through httpcore on plain asyncio), used as transports, not through an `httpx.AsyncClient`: no cookie jar kept between deliveries, no
redirect or auth machinery (a delivery follows no redirect either way). The request still
carries the client's default headers (User-Agent, Accept-Encoding, Connection), so a
receiver sees the same request as before. When the environment names a proxy, every POST goes
through one plain `httpx.AsyncClient` instead (httpx's own transports), which routes by
HTTP(S)_PROXY and NO_PROXY as before. Every POST is bounded by `outbound.calls.call`: the
delivery deadline for the whole exchange, the response cap for the answer.
"""

from __future__ import annotations

import urllib.request
from typing import Self
from urllib.parse import urlsplit

import httpx

from emulator.outbound import DELIVERY_DEADLINE, client_headers, default_tls
from emulator.outbound.calls import Outcome, call
from emulator.outbound.lane import Lane

MAX_IDLE = 64  # idle lanes kept across receivers; beyond it a returned lane is closed
MAX_HEADER_SETS = 256  # merged header sets kept (one per subscription secret, or so)


class Sender:
    """Posts the attempts of a pass; lanes are opened only when something is sent."""

    def __init__(self, deadline: float = DELIVERY_DEADLINE) -> None:
        self.deadline = deadline  # of each POST as a whole
        self._idle: dict[tuple[str, str], list[Lane]] = {}
        self._idle_count = 0
        self._lanes: list[Lane] = []  # every lane opened, closed on exit
        self._client: httpx.AsyncClient | None = None
        # whether the environment names a proxy: read at the first POST (reading it costs
        # ~50 us, and most passes, one after every clock advance, post nothing)
        self._proxied: bool | None = None
        self._headers: dict[tuple[tuple[str, str], ...], httpx.Headers] = {}

    def _merged(self, headers: dict[str, str]) -> httpx.Headers:
        """The client's headers updated by `headers`, as `httpx.AsyncClient` merges them."""
        key = tuple(headers.items())
        merged = self._headers.get(key)
        if merged is None:
            if len(self._headers) >= MAX_HEADER_SETS:
                self._headers.clear()
            merged = self._headers[key] = client_headers(headers)
        return merged

    async def post(self, url: str, headers: dict[str, str], body: bytes) -> Outcome:
        if self._proxied is None:
            self._proxied = bool(urllib.request.getproxies())
        if self._proxied:
            if self._client is None:
                self._client = httpx.AsyncClient(verify=default_tls())  # its own transports
            return await call(
                "POST",
                url,
                headers=headers,
                content=body,
                client=self._client,
                timeout=self.deadline,
            )
        parts = urlsplit(url)
        key = (parts.scheme, parts.netloc)
        idle = self._idle.get(key)
        if idle:
            lane = idle.pop()
            self._idle_count -= 1
        else:
            lane = Lane(default_tls())
            self._lanes.append(lane)
        try:
            return await call(
                "POST",
                url,
                headers=self._merged(headers),
                content=body,
                client=lane,
                timeout=self.deadline,
            )
        finally:
            if self._idle_count < MAX_IDLE:
                self._idle.setdefault(key, []).append(lane)
                self._idle_count += 1
            else:
                self._lanes.remove(lane)
                await lane.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        lanes, self._lanes, self._idle = self._lanes, [], {}
        for lane in lanes:
            await lane.aclose()
        if self._client is not None:
            await self._client.aclose()
