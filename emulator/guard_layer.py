"""The guards in front of the routes as one ASGI layer: redaction of the answers, the browser
guard (Host, Origin, Content-Type) and the control token, decided once per request.

Each stayed its own layer (`RedactAnswers`, `BrowserGuard`, `ControlToken`) until every
request paid three calls and three awaits to pass them; this layer asks each of them the
same question their own `__call__` asks (`send_for`, `refused`), in the order they were
stacked, so every request meets every check it met before and gets the same answer:

- the answer's `send` is chosen first (a refusal of the guards is redacted too);
- then the browser guard's refusal, then the control token's: the first one found answers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.types import ASGIApp, Receive, Scope, Send

from emulator.asgi_guards import ControlToken
from emulator.asgi_redaction import RedactAnswers
from emulator.browser_guards import BrowserGuard, HostRule
from emulator.redaction import Redactor


class Guards:
    """RedactAnswers over BrowserGuard over ControlToken, in one layer."""

    def __init__(
        self,
        app: ASGIApp,
        redactor: Callable[[Scope], Awaitable[Redactor]],
        hosts: HostRule,
        token: str | None = None,
    ) -> None:
        self.app = app
        # the three guards, over the same app: only their decisions are used here
        self.redaction = RedactAnswers(app, redactor, token)
        self.browser = BrowserGuard(app, hosts)
        self.control = ControlToken(app, token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan: none of the guards concerns it
            await self.app(scope, receive, send)
            return
        send = self.redaction.send_for(scope, send)
        answer = self.browser.refused(scope)
        if answer is None:
            answer = self.control.refused(scope)
        if answer is not None:
            await answer(scope, receive, send)
            return
        await self.app(scope, receive, send)
