"""A scenario's CRM played back: recorded answers in order per method and path."""

from __future__ import annotations

from collections import defaultdict, deque
from typing import Any

import httpx
import msgspec
from msgspec import UNSET

from emulator.scenarios import models as sm


def json_or_text(data: bytes) -> Any:
    if not data:
        return None
    try:
        return msgspec.json.decode(data)
    except msgspec.DecodeError:
        return data.decode("utf-8", "replace")


def _take(queue: deque[sm.PlaybackAnswer], sent: bytes) -> sm.PlaybackAnswer:
    """The first answer recorded for an equal request body, else the next in line."""
    if any(a.request is not UNSET for a in queue):
        try:
            body = msgspec.json.decode(sent) if sent else None
        except msgspec.DecodeError:
            body = UNSET
        for i, answer in enumerate(queue):
            if answer.request is not UNSET and answer.request == body:
                del queue[i]
                return answer
    return queue.popleft()


class PlaybackTransport(httpx.AsyncBaseTransport):
    """Answers from recorded answers, in order per (method, path)."""

    def __init__(self, answers: list[sm.PlaybackAnswer]) -> None:
        self.answers = answers
        self.missing: list[str] = []
        self.rewind()

    def rewind(self) -> None:
        self.queues: dict[tuple[str, str], deque[sm.PlaybackAnswer]] = defaultdict(deque)
        for answer in self.answers:
            self.queues[(answer.method.upper(), answer.path)].append(answer)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        sent = await request.aread()
        key = (request.method.upper(), request.url.path)
        queue = self.queues.get(key)
        if not queue:
            self.missing.append(f"{key[0]} {key[1]}")
            return httpx.Response(
                500,
                json={
                    "error": "no_recording",
                    "message": f"no recorded answer left for {key[0]} {key[1]}",
                },
            )
        answer = _take(queue, sent)
        headers = dict(answer.headers)
        if answer.body is not UNSET:
            headers.setdefault("content-type", "application/json")
            return httpx.Response(
                answer.status, headers=headers, content=msgspec.json.encode(answer.body)
            )
        return httpx.Response(answer.status, headers=headers, content=(answer.text or "").encode())

    async def aclose(self) -> None:
        return None


# ---- matching CRM calls ---------------------------------------------------------------------
