"""Webhook subscriptions: list, create, change, delete, delivery log and test delivery.

The secret is stored but never shown: every answer carries `hasSecret` instead.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import msgspec

from emulator.errors import BadRequest, NotFound, refuse_control_target
from emulator.platform import webhooks
from emulator.public_api.context import ApiContext
from emulator.public_api.listing import Where, page_of, rows_by_ids
from emulator.public_api.schemas import Webhook, WebhookIn, WebhookLog, WebhookPatch
from emulator.simulation.webhooks import delivery
from emulator.wire import decode, encode

_SELECT = (
    "SELECT t.id, t.name, t.url, t.secret IS NOT NULL, t.events, t.campaignIds,"
    " t.customFields, t.enabled, t.createdAt, t.updatedAt FROM webhooks t"
)
_LOG_SELECT = (
    "SELECT t.id, t.eventType, t.statusCode, t.errorMessage, t.attemptNumber, t.durationMs,"
    " t.createdAt FROM webhook_deliveries t"
)


def _webhook(row: tuple[Any, ...]) -> Webhook:
    return Webhook(
        id=row[0],
        name=row[1],
        url=row[2],
        hasSecret=bool(row[3]),
        events=decode(row[4], list[str]),
        campaignIds=decode(row[5], list[int]),
        customFields=decode(row[6], list[str]),
        enabled=bool(row[7]),
        createdAt=row[8],
        updatedAt=row[9],
    )


def _log(row: tuple[Any, ...]) -> WebhookLog:
    return WebhookLog(
        id=row[0],
        eventType=row[1],
        statusCode=row[2],
        errorMessage=row[3],
        attemptNumber=row[4],
        durationMs=row[5],
        createdAt=row[6],
    )


def _json(value: Any) -> str:
    return encode(value).decode()


def _check_campaigns(conn: sqlite3.Connection, ids: list[int]) -> None:
    """Unknown campaign ids in `campaignIds` are a 400 naming them."""
    if not ids:
        return
    wanted = sorted(set(ids))
    marks = ",".join("?" * len(wanted))
    known = {r[0] for r in conn.execute(f"SELECT id FROM campaigns WHERE id IN ({marks})", wanted)}
    unknown = [i for i in wanted if i not in known]
    if unknown:
        raise BadRequest.field(
            "campaignIds", f"unknown campaign id(s): {', '.join(map(str, unknown))}"
        )


def _exists(conn: sqlite3.Connection, webhook_id: int) -> None:
    if conn.execute("SELECT 1 FROM webhooks WHERE id = ?", (webhook_id,)).fetchone() is None:
        raise NotFound(f"Webhook {webhook_id} not found")


async def get_webhook(ctx: ApiContext, webhook_id: int) -> Webhook:
    found = await rows_by_ids(ctx.store, [webhook_id], _SELECT, _webhook)
    if not found:
        raise NotFound(f"Webhook {webhook_id} not found")
    return found[0]


async def list_webhooks(ctx: ApiContext, page: int, page_size: int) -> tuple[int, list[Webhook]]:
    return await page_of(ctx, "webhooks", Where(), page, page_size, _SELECT, _webhook)


async def create_webhook(ctx: ApiContext, body: WebhookIn) -> Webhook:
    refuse_control_target("url", body.url)
    now = ctx.now()

    def insert(conn: sqlite3.Connection) -> int:
        _check_campaigns(conn, body.campaignIds)
        return webhooks.create_webhook(
            conn,
            (
                body.name,
                body.url,
                body.secret,
                _json(body.events),
                _json(body.campaignIds),
                _json(body.customFields),
                int(body.enabled),
                now,
                now,
            ),
        )

    return await get_webhook(ctx, await ctx.store.write(insert))


async def update_webhook(ctx: ApiContext, webhook_id: int, patch: WebhookPatch) -> Webhook:
    """Apply the given fields; absent ones stay, `secret: null` removes the secret."""
    if isinstance(patch.url, str):
        refuse_control_target("url", patch.url)
    changes: dict[str, Any] = {"updatedAt": ctx.now()}
    for name in WebhookPatch.__struct_fields__:
        value = getattr(patch, name)
        if value is msgspec.UNSET:
            continue
        if name in ("events", "campaignIds", "customFields"):
            value = _json(value)
        elif name == "enabled":
            value = int(value)
        changes[name] = value

    def update(conn: sqlite3.Connection) -> None:
        _exists(conn, webhook_id)
        if isinstance(patch.campaignIds, list):
            _check_campaigns(conn, patch.campaignIds)
        webhooks.update_webhook(conn, webhook_id, changes)

    await ctx.store.write(update)
    return await get_webhook(ctx, webhook_id)


async def delete_webhook(ctx: ApiContext, webhook_id: int) -> None:
    """Remove the subscription and its delivery log."""

    def delete(conn: sqlite3.Connection) -> None:
        _exists(conn, webhook_id)
        delivery.forget_log(conn, webhook_id)
        webhooks.delete_webhook(conn, webhook_id)

    await ctx.store.write(delete)


async def webhook_logs(
    ctx: ApiContext, webhook_id: int, page: int, page_size: int
) -> tuple[int, list[WebhookLog]]:
    """Delivery attempts of one subscription, newest first."""
    await get_webhook(ctx, webhook_id)
    where = Where().add("webhookId = ?", webhook_id)
    return await page_of(
        ctx, "webhook_deliveries", where, page, page_size, _LOG_SELECT, _log, order="id DESC"
    )


async def send_test_delivery(ctx: ApiContext, webhook_id: int) -> bool:
    """Send one sample TEST delivery now; True when the target answered 2xx."""
    sub = await delivery.load_subscription(ctx.store, webhook_id)
    if sub is None:
        raise NotFound(f"Webhook {webhook_id} not found")
    payload = await delivery.sample_payload(ctx.store, sub, ctx.now())
    attempt = await delivery.deliver_once(
        ctx.store, sub, payload, 1, ctx.now, timeout=ctx.emulator.settings.outgoingDeadline
    )
    return attempt.success
