"""What every /v1 service function works with: the store, caches, clock and limits."""

from __future__ import annotations

from typing import Any

from emulator.platform import connection as platform_connection
from emulator.public_api.auth import KeyRing
from emulator.public_api.rate_limit import RateLimiter
from emulator.state import Emulator
from emulator.store.db import Store
from emulator.store.pages import EncodedPages, PageIndex
from emulator.wire import Wire, decode


class LinkTemplates(Wire):
    contact: str | None = None
    company: str | None = None


class ApiContext:
    """Built once per app; holds no request state."""

    def __init__(self, emulator: Emulator) -> None:
        self.emulator = emulator
        self.keys = KeyRing(lambda: emulator.db)
        self.limiter = RateLimiter(emulator.settings.rateLimit)
        self._pages: PageIndex | None = None
        self._bodies: EncodedPages | None = None
        self._links = LinkTemplates()
        self._links_version = -1
        emulator.on_reset.append(self.limiter.reset)

    @property
    def store(self) -> Store:
        return self.emulator.db

    @property
    def pages(self) -> PageIndex:
        if self._pages is None:
            self._pages = PageIndex(self.store)
        return self._pages

    @property
    def bodies(self) -> EncodedPages:
        if self._bodies is None:
            self._bodies = EncodedPages(self.store)
        return self._bodies

    def now(self) -> str:
        return self.emulator.clock.now_iso()

    async def links(self) -> LinkTemplates:
        """The connection's link templates, re-read only after a write to the connection."""
        if self.store.changed("crm_connection") > self._links_version:
            version = self.store.version  # read from here on: a later write is seen next time
            conn = await self.store.read(platform_connection.read)
            self._links = (
                LinkTemplates()
                if conn is None
                else LinkTemplates(
                    contact=conn.contactLinkTemplate, company=conn.companyLinkTemplate
                )
            )
            self._links_version = version
        return self._links


def link(template: str | None, crm_id: str | None) -> str | None:
    """A record link from a `{{crmId}}` template."""
    if template is None or crm_id is None:
        return None
    return template.replace("{{crmId}}", crm_id)


def decode_json_object(text: str | None) -> Any:
    return None if text is None else decode(text)
