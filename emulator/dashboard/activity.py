"""What happened: the CRM journal, the simulation's events and webhook deliveries."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from emulator.control.exports import read_journal
from emulator.dashboard.render import (
    PAGE_SIZE,
    api,
    api_problem,
    emulator_of,
    int_param,
    page,
    page_number,
    problem,
)
from emulator.dashboard.webhook_attempts import sent_by_attempt
from emulator.errors import ApiError
from emulator.public_api.webhooks import get_webhook, list_webhooks, webhook_logs
from emulator.simulation.campaigns.event_log import event_types, read_events
from emulator.simulation.webhooks.delivery import load_subscription
from emulator.simulation.webhooks.status import DeliveryCounts, delivery_counts, queued_attempts

JOURNAL_FILTERS = ("exportId", "method", "path", "status")


async def journal(request: Request) -> Response:
    number = page_number(request)
    try:
        total, entries = await read_journal(
            emulator_of(request).db, request.query_params, number, PAGE_SIZE
        )
    except ApiError as exc:
        return api_problem(request, exc)
    filters = {name: request.query_params.get(name, "") for name in JOURNAL_FILTERS}
    return page(
        request,
        "journal.html",
        entries=entries,
        total=total,
        number=number,
        filters=filters,
    )


async def events(request: Request) -> Response:
    store = emulator_of(request).db
    event_type = request.query_params.get("type") or None
    after = int_param(request, "afterId", 0) or 0
    found = await read_events(
        store,
        after,
        PAGE_SIZE,
        campaign_id=int_param(request, "campaignId"),
        contact_id=int_param(request, "contactId"),
        event_type=event_type,
    )
    next_after = found[-1].id if len(found) == PAGE_SIZE else None
    return page(
        request,
        "events.html",
        events=found,
        types=await event_types(store),
        event_type=event_type,
        next_after=next_after,
        after=after,
        campaign_id=request.query_params.get("campaignId", ""),
        contact_id=request.query_params.get("contactId", ""),
    )


async def webhooks(request: Request) -> Response:
    total, subscriptions = await list_webhooks(api(request), 1, 100)
    counts = await delivery_counts(emulator_of(request).db)
    return page(
        request,
        "webhooks.html",
        subscriptions=subscriptions,
        total=total,
        counts=counts,
        none=DeliveryCounts(),
    )


async def webhook(request: Request) -> Response:
    text = request.path_params["webhookId"]
    if not text.isdigit() or not 0 < int(text) < 2**63:
        return problem(request, 404, f"No webhook {text}")
    ctx, number = api(request), page_number(request)
    try:
        subscription = await get_webhook(ctx, int(text))
        total, attempts = await webhook_logs(ctx, int(text), number, PAGE_SIZE)
    except ApiError as exc:
        return api_problem(request, exc)
    store = emulator_of(request).db
    queued = await queued_attempts(store, subscription.id, PAGE_SIZE)
    stored = await load_subscription(store, subscription.id)
    sent = {} if stored is None else await sent_by_attempt(store, stored, [a.id for a in attempts])
    return page(
        request,
        "webhook.html",
        subscription=subscription,
        attempts=attempts,
        total=total,
        number=number,
        queued=queued,
        sent=sent,
    )
