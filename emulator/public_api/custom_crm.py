"""The custom CRM connection of the account: health test, connect, status, disconnect.

The connection lives in `crm_connection` as a CrmConnection (the exporter's settings);
connecting replaces where and how the CRM is reached and keeps every other setting.
"""

from __future__ import annotations

import sqlite3

import msgspec

from emulator.errors import NotFound
from emulator.fixtures.models import CrmConnection
from emulator.outbound import CONNECT_DEADLINE
from emulator.platform import connection as platform_connection
from emulator.public_api.context import ApiContext
from emulator.public_api.schemas import CustomCrmHealth, CustomCrmIn, CustomCrmStatus
from emulator.simulation.crm_link.health import (
    HEALTH_INTERVAL_SECONDS,
    ConnectionHealth,
    UsersProbe,
    probe,
    users_verdict,
)
from emulator.wire import decode, encode


async def check(
    url: str, api_key: str, header: str, at: str, *, timeout: float = CONNECT_DEADLINE
) -> tuple[CustomCrmHealth, UsersProbe]:
    """GET {url}/health and GET {url}/users with the key, each within `timeout` seconds: the
    health answer and the users verdict (owner selection)."""
    health, message, users = await probe(url, api_key, header, timeout=timeout)
    assert users is not None
    verdict = users_verdict(url.rstrip("/") + "/users", users, at)
    return CustomCrmHealth(
        success=health.ok,
        status=health.statusCode,
        message=message,
        ownerSelection=verdict.ownerSelection,
        usersStatus=verdict.status,
    ), verdict


def _status(settings: str | None, health: str | None) -> CustomCrmStatus:
    if settings is None:
        return CustomCrmStatus(
            connected=False,
            baseUrl=None,
            apiKeyHeader=None,
            contactLinkTemplate=None,
            companyLinkTemplate=None,
            lastHealth=None,
            ownerSelection=None,
            healthCheckIntervalSeconds=HEALTH_INTERVAL_SECONDS,
        )
    conn: CrmConnection = decode(settings, CrmConnection)
    return CustomCrmStatus(
        connected=True,
        baseUrl=conn.crmUrl,
        apiKeyHeader=conn.apiKeyHeader,
        contactLinkTemplate=conn.contactLinkTemplate,
        companyLinkTemplate=conn.companyLinkTemplate,
        lastHealth=None if health is None else decode(health),
        ownerSelection=None if health is None else _owner(decode(health, ConnectionHealth)),
        healthCheckIntervalSeconds=HEALTH_INTERVAL_SECONDS,
    )


def _owner(health: ConnectionHealth) -> bool | None:
    return None if health.users is None else health.users.ownerSelection


async def connect(
    ctx: ApiContext, body: CustomCrmIn, health: CustomCrmHealth, users: UsersProbe
) -> CustomCrmStatus:
    """Store the connection (baseUrl as given) with the outcome of its probes; a new
    connection starts its health history afresh."""
    last = ConnectionHealth(
        ok=health.success,
        status=health.status,
        checkedAt=ctx.now(),
        message=health.message,
        failuresInRow=0 if health.success else 1,
        users=users,
        crmUrl=body.baseUrl,
    )

    def store(conn: sqlite3.Connection) -> tuple[str, str]:
        base = platform_connection.read(conn) or CrmConnection(crmUrl="", apiKey="")
        settings = msgspec.structs.replace(
            base,
            crmUrl=body.baseUrl,
            apiKey=body.apiKey,
            apiKeyHeader=body.apiKeyHeader,
            contactLinkTemplate=body.contactLinkTemplate,
            companyLinkTemplate=body.companyLinkTemplate,
        )
        pair = (encode(settings).decode(), encode(last).decode())
        platform_connection.replace(conn, *pair)
        return pair

    return _status(*await ctx.store.write(store))


async def status(ctx: ApiContext) -> CustomCrmStatus:
    return _status(*await ctx.store.read(platform_connection.read_stored))


async def disconnect(ctx: ApiContext) -> CustomCrmStatus:
    def delete(conn: sqlite3.Connection) -> None:
        if not platform_connection.delete(conn):
            raise NotFound("No custom CRM is connected")

    await ctx.store.write(delete)
    return _status(None, None)
