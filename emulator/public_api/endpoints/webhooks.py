"""HTTP handlers of webhook subscriptions, their delivery log and test delivery."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from emulator.errors import BadRequest
from emulator.http import decode_body, json_response
from emulator.openapi import PAGE, operation
from emulator.public_api import webhooks as service
from emulator.public_api.auth import guarded
from emulator.public_api.context import ApiContext
from emulator.public_api.envelopes import MetaList, Success, meta_list, success
from emulator.public_api.params import page_params, path_id
from emulator.public_api.schemas import (
    Deleted,
    TestResult,
    Webhook,
    WebhookIn,
    WebhookLog,
    WebhookPatch,
)
from emulator.workspace_scope import workspace


def _webhook_id(request: Request) -> int:
    return path_id(request.path_params["webhookId"], "webhookId")


@operation("List webhook subscriptions", MetaList[Webhook], params=PAGE)
@guarded("WEBHOOKS_READ")
async def list_webhooks(request: Request) -> Response:
    ctx: ApiContext = workspace(request).public_api
    page, page_size = page_params(request.query_params)
    total, data = await service.list_webhooks(ctx, page, page_size)
    return json_response(meta_list(data, page, page_size, total))


@operation("Create a webhook subscription", Success[Webhook], status=201, body=WebhookIn)
@guarded("WEBHOOKS_WRITE")
async def create_webhook(request: Request) -> Response:
    ctx: ApiContext = workspace(request).public_api
    body = await decode_body(request, WebhookIn, BadRequest.field)
    created = await service.create_webhook(ctx, body)
    return json_response(success(created, "Webhook created"), 201)


@operation("Update a webhook subscription", Success[Webhook], body=WebhookPatch, errors=(400, 404))
@guarded("WEBHOOKS_WRITE")
async def update_webhook(request: Request) -> Response:
    ctx: ApiContext = workspace(request).public_api
    webhook_id = _webhook_id(request)
    patch = await decode_body(request, WebhookPatch, BadRequest.field)
    updated = await service.update_webhook(ctx, webhook_id, patch)
    return json_response(success(updated, "Webhook updated"))


@operation("Delete a webhook subscription", Success[Deleted], errors=(400, 404))
@guarded("WEBHOOKS_WRITE")
async def delete_webhook(request: Request) -> Response:
    ctx: ApiContext = workspace(request).public_api
    webhook_id = _webhook_id(request)
    await service.delete_webhook(ctx, webhook_id)
    return json_response(success(Deleted(id=webhook_id), "Webhook deleted"))


@operation(
    "Delivery attempts of a subscription", MetaList[WebhookLog], params=PAGE, errors=(400, 404)
)
@guarded("ALL")
async def webhook_logs(request: Request) -> Response:
    ctx: ApiContext = workspace(request).public_api
    webhook_id = _webhook_id(request)
    page, page_size = page_params(request.query_params)
    total, data = await service.webhook_logs(ctx, webhook_id, page, page_size)
    return json_response(meta_list(data, page, page_size, total))


@operation("Send a test delivery", Success[TestResult], errors=(400, 404))
@guarded("WEBHOOKS_WRITE")
async def test_webhook(request: Request) -> Response:
    ctx: ApiContext = workspace(request).public_api
    ok = await service.send_test_delivery(ctx, _webhook_id(request))
    message = "Test delivery succeeded" if ok else "Test delivery failed"
    return json_response(success(TestResult(success=ok), message))


routes = [
    Route("/webhooks", list_webhooks, methods=["GET"]),
    Route("/webhooks", create_webhook, methods=["POST"]),
    Route("/webhooks/{webhookId}", update_webhook, methods=["PATCH"]),
    Route("/webhooks/{webhookId}", delete_webhook, methods=["DELETE"]),
    Route("/webhooks/{webhookId}/logs", webhook_logs, methods=["GET"]),
    Route("/webhooks/{webhookId}/test", test_webhook, methods=["POST"]),
]
