"""A scratch copy of the reference CRM for a verify run, so its probes never touch this one.

Verify creates probe companies, contacts, activities and tasks (about a hundred of each kind
it probes). Run against this emulator's own /crm they would stay in the CRM a user is looking
at; `POST /_emulator/verify {"scratch": true}` instead verifies a fresh in-memory emulator
seeded from the same fixtures, with the reference CRM's current settings (key, key header,
switches and fault rules) copied in: the same behaviour, none of the probes left behind.
`emulator verify` without `--crm-url` does the same from the command line.
"""

from __future__ import annotations

from typing import Any

import httpx
from starlette.requests import Request

from emulator.crm.routes import crm_context
from emulator.platform import connection as platform_connection
from emulator.settings import Settings
from emulator.state import Emulator
from emulator.verify.runner import Prober


class ScratchProber(Prober):
    """A prober of a scratch emulator's /crm; closing it closes that emulator too."""

    def __init__(self, scratch: Emulator, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.scratch = scratch

    async def aclose(self) -> None:
        try:
            await super().aclose()
        finally:
            await self.scratch.close()


async def scratch_prober(
    request: Request, api_key: str | None, api_key_header: str | None
) -> ScratchProber:
    """A prober of a new in-memory emulator like this one (same fixtures, the reference CRM's
    settings as they are now), reached in-process at this server's own address."""
    from emulator.app import create_app  # deferred: the app module imports the control routes

    own: Emulator = request.app.state.services.emulator
    settings = Settings(
        fixtures=own.settings.fixtures,
        seedCache=own.settings.seedCache,
        outgoingDeadline=own.settings.outgoingDeadline,
        allowedHosts=own.settings.allowedHosts,
        host=own.settings.host,
        port=own.settings.port,
    )
    app = create_app(settings, own.fixtures)
    scratch: Emulator = app.state.services.emulator
    await scratch.start()
    try:
        crm_settings = await crm_context(request).settings()
        await app.state.services.crm.replace_settings(crm_settings)
        crm = platform_connection.resolve(
            "/crm",
            platform_connection.own_base(request),
            in_process=httpx.ASGITransport(app=app, raise_app_exceptions=False),
        )
        return ScratchProber(
            scratch,
            crm.base_url,
            api_key or crm_settings.apiKey,
            api_key_header or crm_settings.apiKeyHeader,
            transport=crm.transport,
            timeout=own.settings.outgoingDeadline,
        )
    except BaseException:
        await scratch.close()
        raise
