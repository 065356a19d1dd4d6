"""The custom CRM connection of the account: health test, connect, status, disconnect.

The connection lives in `crm_connection` as a CrmConnection (the exporter's settings);
connecting replaces where and how the CRM is reached and keeps every other setting.
"""

from __future__ import annotations

import sqlite3

import msgspec

from emulator.errors import NotFound
from emulator.fixtures.models import CrmConnection
from emulator.public_api.context import ApiContext
from emulator.public_api.outbound import call
from emulator.public_api.schemas import CustomCrmHealth, CustomCrmIn, CustomCrmStatus
from emulator.wire import Wire, decode, encode


class Health(Wire):
    """The stored `lastHealth` of the connection."""

    ok: bool
    status: int | None
    checkedAt: str
    message: str


def resolve_base_url(base_url: str, own_base: str) -> str:
    """A relative baseUrl ("/crm") names the emulator's own embedded CRM."""
    if base_url.startswith("/"):
        return own_base.rstrip("/") + base_url
    return base_url


async def check_health(url: str, api_key: str, header: str) -> CustomCrmHealth:
    """GET {url}/health with the key; success means a 2xx answer within 10 s."""
    target = url.rstrip("/") + "/health"
    outcome = await call(
        "GET", target, headers={header: api_key, "Accept": "application/json"}
    )
    if outcome.ok:
        message = f"CRM reachable: GET {target} answered {outcome.statusCode}"
    else:
        message = f"CRM health check failed: GET {target}: {outcome.errorMessage}"
    return CustomCrmHealth(success=outcome.ok, status=outcome.statusCode, message=message)


def _status(settings: str | None, health: str | None) -> CustomCrmStatus:
    if settings is None:
        return CustomCrmStatus(
            connected=False, baseUrl=None, apiKeyHeader=None, contactLinkTemplate=None,
            companyLinkTemplate=None, lastHealth=None,
        )
    conn: CrmConnection = decode(settings, CrmConnection)
    return CustomCrmStatus(
        connected=True, baseUrl=conn.crmUrl, apiKeyHeader=conn.apiKeyHeader,
        contactLinkTemplate=conn.contactLinkTemplate,
        companyLinkTemplate=conn.companyLinkTemplate,
        lastHealth=None if health is None else decode(health),
    )


async def connect(ctx: ApiContext, body: CustomCrmIn, health: CustomCrmHealth) -> CustomCrmStatus:
    """Store the connection (baseUrl as given) with the outcome of its health check."""
    last = Health(
        ok=health.success, status=health.status, checkedAt=ctx.now(), message=health.message
    )

    def store(conn: sqlite3.Connection) -> tuple[str, str]:
        row = conn.execute("SELECT settings FROM crm_connection WHERE id = 1").fetchone()
        base = CrmConnection(crmUrl="", apiKey="") if row is None else decode(
            row[0], CrmConnection
        )
        settings = msgspec.structs.replace(
            base, crmUrl=body.baseUrl, apiKey=body.apiKey, apiKeyHeader=body.apiKeyHeader,
            contactLinkTemplate=body.contactLinkTemplate,
            companyLinkTemplate=body.companyLinkTemplate,
        )
        pair = (encode(settings).decode(), encode(last).decode())
        conn.execute(
            "INSERT INTO crm_connection(id, settings, lastHealth) VALUES (1, ?, ?)"
            " ON CONFLICT(id) DO UPDATE SET settings = excluded.settings,"
            " lastHealth = excluded.lastHealth",
            pair,
        )
        return pair

    return _status(*await ctx.store.write(store))


async def status(ctx: ApiContext) -> CustomCrmStatus:
    row = await ctx.store.fetchone("SELECT settings, lastHealth FROM crm_connection WHERE id = 1")
    return _status(None, None) if row is None else _status(row[0], row[1])


async def disconnect(ctx: ApiContext) -> CustomCrmStatus:
    def delete(conn: sqlite3.Connection) -> None:
        if conn.execute("DELETE FROM crm_connection WHERE id = 1").rowcount == 0:
            raise NotFound("No custom CRM is connected")

    await ctx.store.write(delete)
    return _status(None, None)
