"""The messages of one conversation, oldest first."""

from __future__ import annotations

from typing import Any

from emulator.errors import NotFound
from emulator.public_api.context import ApiContext
from emulator.public_api.schemas import Conversation, Message

_SELECT = (
    "SELECT id, content, subject, type, isContactSender, isAutosent, isAudio, url, attachment,"
    " attachmentName, contentType, createdAt, updatedAt, viewCount, clickCount"
    " FROM messages WHERE conversationId = ? ORDER BY createdAt, id"
)


def _message(row: tuple[Any, ...]) -> Message:
    return Message(
        id=row[0],
        content=row[1],
        subject=row[2],
        type=row[3],
        isContactSender=bool(row[4]),
        isAutosent=bool(row[5]),
        isAudio=bool(row[6]),
        url=row[7],
        attachment=row[8],
        attachmentName=row[9],
        contentType=row[10],
        createdAt=row[11],
        updatedAt=row[12],
        viewCount=row[13],
        clickCount=row[14],
    )


async def conversation_messages(ctx: ApiContext, conversation_id: int) -> Conversation:
    found = await ctx.store.fetchone("SELECT 1 FROM conversations WHERE id = ?", (conversation_id,))
    if found is None:
        raise NotFound(f"Conversation {conversation_id} not found")
    rows = await ctx.store.fetchall(_SELECT, (conversation_id,))
    return Conversation(conversationId=conversation_id, messages=[_message(r) for r in rows])
