"""The writes of one response leave in one system call.

uvicorn writes a response's status line and headers, then each body chunk, each with its own
`transport.write`: a page read is two sends, two TCP segments on loopback and two wake-ups of
the client, for ~80 KB that could be one. `BatchedWrites` stands in for the transport of one
request/response cycle: it holds what the cycle writes and hands it to the real transport in
one `writelines` (a single scatter write on uvloop, no copy of the body) when the response is
complete, or, for anything written before (a streamed chunk, a `100 Continue`), at the end
of the event loop's current iteration: a stream still flows, only a response's own pieces
are joined. What is held never passes FLUSH_BYTES: a stream that sends many chunks without
waiting in between reaches the transport (and its flow control) as it would without this.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

FLUSH_BYTES = 256 << 10  # held at most: beyond it the pieces go to the transport at once


class BatchedWrites:
    """The transport a cycle writes to; `completed` is the cycle's `on_response`."""

    __slots__ = ("_held", "_loop", "_on_response", "_pending", "_transport")

    def __init__(
        self,
        transport: asyncio.Transport,
        loop: asyncio.AbstractEventLoop,
        on_response: Callable[[], None],
    ) -> None:
        self._transport, self._loop, self._on_response = transport, loop, on_response
        self._pending: list[bytes] = []
        self._held = 0

    def write(self, data: bytes) -> None:
        if not self._pending:
            self._loop.call_soon(self.flush)  # a piece no completion follows soon still leaves
        self._pending.append(data)
        self._held += len(data)
        if self._held > FLUSH_BYTES:
            self.flush()

    def flush(self) -> None:
        if self._pending:
            pending, self._pending, self._held = self._pending, [], 0
            if not self._transport.is_closing():
                self._transport.writelines(pending)

    def completed(self) -> None:
        """The response is whole: out it goes, then what the server does next."""
        self.flush()
        self._on_response()

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def __getattr__(self, name: str) -> Any:  # anything else the cycle may ask
        return getattr(self._transport, name)


def batch_writes(cycle: Any, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
    """Give uvicorn's RequestResponseCycle `cycle` a BatchedWrites over `transport`."""
    batched = BatchedWrites(transport, loop, cycle.on_response)
    cycle.transport = batched
    cycle.on_response = batched.completed
