"""HTTP handler of a conversation's messages."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from emulator.http import json_response
from emulator.openapi import operation
from emulator.public_api import conversations as service
from emulator.public_api.auth import guarded
from emulator.public_api.context import ApiContext
from emulator.public_api.envelopes import Success, success
from emulator.public_api.params import path_id
from emulator.public_api.schemas import Conversation
from emulator.workspace_scope import workspace


@operation("Messages of a conversation", Success[Conversation], errors=(400, 404))
@guarded("CONVERSATIONS_READ")
async def conversation_messages(request: Request) -> Response:
    ctx: ApiContext = workspace(request).public_api
    conversation_id = path_id(request.path_params["conversationId"], "conversationId")
    data = await service.conversation_messages(ctx, conversation_id)
    return json_response(success(data, "Messages retrieved"))


routes = [
    Route("/conversation/{conversationId}/messages", conversation_messages, methods=["GET"]),
]
