"""A scratch copy of the reference CRM for a verify run, so its probes never touch this one.

Verify creates probe companies, contacts, activities and tasks (a hundred and more of some
kinds). Run against this emulator's own /crm they would stay in the CRM a user is looking at;
`POST /_emulator/verify {"scratch": true}` instead verifies a fresh in-memory emulator seeded
from the same fixtures, served on a free loopback port as `emulator verify` without
`--crm-url` does, with the reference CRM's current settings (key, key header, switches and
fault rules) copied in: the same behaviour, none of the probes left behind.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import Any

import httpx
from starlette.requests import Request

from emulator.crm.routes import crm_context
from emulator.errors import ApiError
from emulator.server import ServerOpener
from emulator.settings import Settings
from emulator.state import Emulator
from emulator.verify.runner import Prober
from emulator.wire import encode
from emulator.workspace_scope import workspace


class ScratchProber(Prober):
    """A prober of a scratch emulator's /crm; closing it stops that emulator too."""

    def __init__(self, scratch: AsyncExitStack, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._scratch = scratch

    async def aclose(self) -> None:
        try:
            await super().aclose()
        finally:
            await self._scratch.aclose()


async def scratch_prober(
    request: Request, api_key: str | None, api_key_header: str | None
) -> ScratchProber:
    """A prober of a new in-memory emulator like this one (same fixtures, the reference CRM's
    settings as they are now); the caller's run closes it."""
    services = workspace(request)  # the workspace's own CRM, under /w/{id}/ too
    own: Emulator = services.emulator
    open_server: ServerOpener = services.open_server
    settings = Settings(
        fixtures=own.settings.fixtures,
        seedCache=own.settings.seedCache,
        outgoingDeadline=own.settings.outgoingDeadline,
    )
    crm_settings = await crm_context(request).settings()
    scratch = AsyncExitStack()
    try:
        platform = await scratch.enter_async_context(open_server(settings, own.fixtures))
        base = str(platform.server_base)
        async with httpx.AsyncClient(base_url=base, timeout=own.settings.outgoingDeadline) as http:
            copied = await http.put(
                "/_emulator/crm/settings",
                content=encode(crm_settings),
                headers={"content-type": "application/json"},
            )
        if copied.status_code != 200:
            raise ApiError(f"the scratch CRM refused the settings ({copied.status_code})")
        return ScratchProber(
            scratch,
            f"{base}/crm",
            api_key or crm_settings.apiKey,
            api_key_header or crm_settings.apiKeyHeader,
            timeout=own.settings.outgoingDeadline,
        )
    except BaseException:
        await scratch.aclose()
        raise
