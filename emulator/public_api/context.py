"""What every /v1 service function works with: the store, caches, clock and limits."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

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
        # What a root-relative link template ("/crm-ui/contacts/{{crmId}}") is joined to: the
        # configured --link-base, else where requests reach this workspace (note_base).
        self.link_base: str | None = emulator.settings.linkBase
        self._server_seen: object = None  # the ASGI `server` of the last noted request
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

    def note_request(self, request: Request) -> None:
        """`note_base` of the address `request` came in on, worked out again only when it
        came in on another socket address than the last one (most /v1 calls cost a compare)."""
        server = request.scope.get("server")
        if server != self._server_seen or self.link_base is None:
            self._server_seen = server
            self.note_base(platform_connection.own_base(request))

    def note_base(self, base: str) -> None:
        """The origin (and `/w/{id}`) a /v1 request came in on: relative link templates point
        there, unless a base URL is configured. Cached pages built for another base go."""
        if self.emulator.settings.linkBase is None and base != self.link_base:
            self.link_base = base
            self._links_version = -1
            self._bodies = None

    async def links(self) -> LinkTemplates:
        """The connection's link templates, re-read only after a write to the connection."""
        if self.store.changed("crm_connection") > self._links_version:
            version = self.store.version  # read from here on: a later write is seen next time
            conn = await self.store.read(platform_connection.read)
            self._links = (
                LinkTemplates()
                if conn is None
                else LinkTemplates(
                    contact=absolute(conn.contactLinkTemplate, self.link_base),
                    company=absolute(conn.companyLinkTemplate, self.link_base),
                )
            )
            self._links_version = version
        return self._links


def absolute(template: str | None, base: str | None) -> str | None:
    """A root-relative template joined to `base` (kept as it is without one); an absolute
    one as it is."""
    if template is None or base is None or not template.startswith("/"):
        return template
    return base.rstrip("/") + template


def link(template: str | None, crm_id: str | None) -> str | None:
    """A record link from a `{{crmId}}` template."""
    if template is None or crm_id is None:
        return None
    return template.replace("{{crmId}}", crm_id)


def decode_json_object(text: str | None) -> Any:
    return None if text is None else decode(text)
