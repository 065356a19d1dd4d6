"""GET /v1/conversation/{conversationId}/messages: oldest first, 404 for unknown ids."""

from __future__ import annotations

import httpx
import pytest
from starlette.applications import Starlette

from tests.conftest import ALL
from tests.public_api.checks import assert_error, assert_guarded
from tests.public_api.paging import fixtures

pytestmark = pytest.mark.anyio


async def test_answers_every_message_oldest_first(client: httpx.AsyncClient) -> None:
    for conversation in fixtures().conversations[:10]:
        response = await client.get(f"/v1/conversation/{conversation.id}/messages", headers=ALL)
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["status"] == "success" and body["message"]
        assert body["data"]["conversationId"] == conversation.id
        expected = sorted(conversation.messages, key=lambda m: (m.createdAt, m.id))
        messages = body["data"]["messages"]
        assert [m["id"] for m in messages] == [m.id for m in expected]
        for got, want in zip(messages, expected, strict=True):
            assert got == {
                "id": want.id,
                "content": want.content,
                "subject": want.subject,
                "type": want.type,
                "isContactSender": want.isContactSender,
                "isAutosent": want.isAutosent,
                "isAudio": want.isAudio,
                "url": want.url,
                "attachment": want.attachment,
                "attachmentName": want.attachmentName,
                "contentType": want.contentType,
                "createdAt": want.createdAt,
                "updatedAt": want.updatedAt,
                "viewCount": want.viewCount,
                "clickCount": want.clickCount,
            }


async def test_equal_times_are_ordered_by_id(client: httpx.AsyncClient, app: Starlette) -> None:
    conversation = fixtures().conversations[0]
    first = min(m.createdAt for m in conversation.messages)
    db = app.state.services.emulator.db
    for message_id in (900_002, 900_001):  # inserted out of order, at the earliest time
        await db.execute(
            "INSERT INTO messages(id, conversationId, content, type, createdAt, updatedAt)"
            " VALUES (?, ?, 'tie', 'EMAIL', ?, ?)",
            (message_id, conversation.id, first, first),
        )
    response = await client.get(f"/v1/conversation/{conversation.id}/messages", headers=ALL)
    ids = [m["id"] for m in response.json()["data"]["messages"]]
    earliest = [m.id for m in conversation.messages if m.createdAt == first]
    assert ids[: len(earliest) + 2] == sorted([*earliest, 900_001, 900_002])


async def test_conversation_without_messages_is_empty(
    client: httpx.AsyncClient, app: Starlette
) -> None:
    c = fixtures().conversations[0]
    await app.state.services.emulator.db.execute(
        "INSERT INTO conversations(id, contactId, campaignId, identityId) VALUES (?, ?, ?, ?)",
        (777_777, c.contactId, c.campaignId, c.identityId),
    )
    response = await client.get("/v1/conversation/777777/messages", headers=ALL)
    assert response.json()["data"] == {"conversationId": 777777, "messages": []}


async def test_unknown_and_malformed_ids(client: httpx.AsyncClient) -> None:
    unknown = max(c.id for c in fixtures().conversations) + 1
    assert_error(await client.get(f"/v1/conversation/{unknown}/messages", headers=ALL), 404)
    for bad in ("abc", "0", "-1", "1.5", "99999999999999999999999", "%C3%BC"):
        response = await client.get(f"/v1/conversation/{bad}/messages", headers=ALL)
        assert_error(response, 400, "conversationId")


async def test_needs_conversations_read(client: httpx.AsyncClient, app: Starlette) -> None:
    conversation = fixtures().conversations[0].id
    await assert_guarded(
        client, app, "GET", f"/v1/conversation/{conversation}/messages", "CONVERSATIONS_READ"
    )
