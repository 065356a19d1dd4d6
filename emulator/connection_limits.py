"""Server-side limits uvicorn lacks: a deadline for each request head, a cap on open connections.

uvicorn times out only idle keep-alive connections: a client that opens a connection and sends
nothing, or sends a request head a byte at a time (slowloris), holds a socket and a file
descriptor for ever. Enough of them exhaust the process's descriptors, and from then on every
new connection is reset. This protocol (uvicorn's httptools protocol, subclassed):

- closes a connection whose request head is not complete `head_timeout` seconds after the
  connection opened, or after the first byte of a later request on a kept-alive connection;
- keeps at most `max_connections` open: at the cap, the oldest connection still waiting for
  its head is closed to make room for a new one; when every connection is busy with a request,
  a new connection is closed at once, and uvicorn's own `limit_concurrency` (the same figure)
  answers 503 to a request that arrives while the cap is reached.

It also sends each response's pieces (head, body chunks) in one write (response_writes.py).
"""

from __future__ import annotations

import asyncio
import resource
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from emulator.response_writes import batch_writes

RESERVED_FDS = 256  # descriptors kept for the store, outgoing calls and the rest


class LimitedProtocol(HttpToolsProtocol):
    """HttpToolsProtocol with a request-head deadline and a cap on open connections; the
    figures and the shared table of connections waiting for a head are set by `limited`."""

    head_timeout: float = 5.0
    max_connections: int = 512
    waiting: dict[LimitedProtocol, None]  # connections whose head has not arrived, oldest first

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # One timer per connection, armed while a head is awaited and left armed when it
        # arrives: a head is due `head_timeout` after `_head_since` (loop time; None: no head
        # awaited), checked when the timer fires. Arming and cancelling a timer for each
        # request of a kept-alive connection cost more than the rest of these checks.
        self._head_timer: asyncio.TimerHandle | None = None
        self._head_since: float | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        # At the cap, the oldest connection that has sent no whole head yet makes room: the
        # newcomer's request is then answered, not refused 503 (uvicorn's limit_concurrency
        # refuses requests only while `max_connections` are open).
        if len(self.connections) >= self.max_connections and self.waiting:
            next(iter(self.waiting))._close()
        if len(self.connections) > self.max_connections:
            self._close()  # every connection is busy with a request: no room
            return
        self._await_head()

    def _await_head(self) -> None:
        if self._head_since is None:  # a later byte of the same head keeps its start
            self._head_since = self.loop.time()
            self.waiting[self] = None
            if self._head_timer is None:
                self._head_timer = self.loop.call_later(self.head_timeout, self._check_head)

    def _head_done(self) -> None:
        self._head_since = None  # the timer, if armed, finds nothing due
        self.waiting.pop(self, None)

    def _check_head(self) -> None:
        self._head_timer = None
        since = self._head_since
        if since is None:  # no head awaited now: the next one arms the timer again
            return
        left = since + self.head_timeout - self.loop.time()
        if left > 0:  # a later request's head, begun after the timer was armed
            self._head_timer = self.loop.call_later(left, self._check_head)
            return
        self._close()

    def _stop_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _close(self) -> None:
        self._head_done()
        self._stop_timer()
        self.connections.discard(self)
        if not self.transport.is_closing():
            self.transport.abort()  # nothing to flush: no response was started

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._await_head()  # a later request on a kept-alive connection: from its first byte

    def on_headers_complete(self) -> None:
        self._head_done()
        before = self.cycle
        super().on_headers_complete()
        if self.cycle is not None and self.cycle is not before:  # a new request's cycle
            batch_writes(self.cycle, self.transport, self.loop)  # its writes in one call

    def connection_lost(self, exc: Exception | None) -> None:
        self._head_done()
        self._stop_timer()
        super().connection_lost(exc)


def limited(head_timeout: float, max_connections: int) -> type[LimitedProtocol]:
    """A protocol class for one server (its own table of waiting connections)."""
    return type(
        "LimitedProtocol",
        (LimitedProtocol,),
        {"head_timeout": head_timeout, "max_connections": max_connections, "waiting": {}},
    )


def connection_cap(wanted: int) -> tuple[int, str | None]:
    """The cap the process's descriptor limit allows: the soft limit is raised toward the hard
    one when `wanted` plus RESERVED_FDS needs it; a cap lowered to fit comes with a warning."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = wanted + RESERVED_FDS
    if soft != resource.RLIM_INFINITY and soft < needed:
        target = needed if hard == resource.RLIM_INFINITY else min(hard, needed)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    if soft != resource.RLIM_INFINITY and soft < needed:
        cap = max(soft - RESERVED_FDS, 16)
        return cap, (
            f"--max-connections {wanted} lowered to {cap}: the process may open {soft} files "
            f"(ulimit -n) and keeps {RESERVED_FDS} for itself"
        )
    return wanted, None
