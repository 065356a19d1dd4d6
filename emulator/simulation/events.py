"""The simulation's event types: one struct per type, the `data` an event row stores.

The struct is the `data` JSON of the events table and of webhook payloads, so field names and
order are the wire's; the type name lives in the row's own column (`event_type`).
"""

from __future__ import annotations

from typing import ClassVar, assert_never

import msgspec

# A JSON object without the type tag: the events table keeps the type in its own column.
_encode = msgspec.json.Encoder().encode


class _Sent(msgspec.Struct, omit_defaults=True):
    """A message went out (subject: emails and InMails only)."""

    step: int | None
    channel: str
    sequenceIndex: int
    messageId: int
    customMessage: str | None
    sentAt: str
    subject: str | None = None


class ConnectionRequestSent(_Sent):
    TYPE: ClassVar[str] = "CONNECTION_REQUEST_SENT"


class NetworkMessageSent(_Sent):
    TYPE: ClassVar[str] = "NETWORK_MESSAGE_SENT"


class InmailSent(_Sent):
    TYPE: ClassVar[str] = "INMAIL_SENT"


class EmailSent(_Sent):
    TYPE: ClassVar[str] = "EMAIL_SENT"


class ConnectionRequestAccepted(msgspec.Struct):
    step: int | None
    channel: str
    messageId: int
    acceptedAt: str


class MessageReplied(msgspec.Struct, omit_defaults=True):
    step: int | None
    channel: str
    sequenceIndex: int
    messageId: int
    content: str | None
    repliedAt: str
    inReplyTo: int | None
    subject: str | None = None


class LinkClicked(msgspec.Struct):
    step: int | None
    channel: str
    messageId: int | None
    clickedAt: str
    url: str


class EmailOpened(msgspec.Struct):
    step: int | None
    channel: str
    messageId: int | None
    openedAt: str


class ProfileVisited(msgspec.Struct):
    step: int | None
    channel: str
    visitedAt: str
    profileUrl: str | None


class PostLiked(msgspec.Struct):
    step: int | None
    channel: str
    likedAt: str
    postUrl: str


class TaskCreated(msgspec.Struct):
    step: int
    taskId: int
    subject: str
    taskType: str | None
    dueDate: str


class SequenceFinished(msgspec.Struct):
    finishedAt: str


Sent = ConnectionRequestSent | NetworkMessageSent | InmailSent | EmailSent
Event = (
    Sent
    | ConnectionRequestAccepted
    | MessageReplied
    | LinkClicked
    | EmailOpened
    | ProfileVisited
    | PostLiked
    | TaskCreated
    | SequenceFinished
)
# The event of a message going out, by the step's message type.
SENT: dict[str, type[Sent]] = {
    "CONNECTION_REQUEST": ConnectionRequestSent,
    "NETWORK_MESSAGE": NetworkMessageSent,
    "INMAIL": InmailSent,
    "EMAIL": EmailSent,
}


def event_type(event: Event) -> str:
    """The events table's `type` of an event."""
    match event:
        case ConnectionRequestSent() | NetworkMessageSent() | InmailSent() | EmailSent():
            return event.TYPE
        case ConnectionRequestAccepted():
            return "CONNECTION_REQUEST_ACCEPTED"
        case MessageReplied():
            return "MESSAGE_REPLIED"
        case LinkClicked():
            return "LINK_CLICKED"
        case EmailOpened():
            return "EMAIL_OPENED"
        case ProfileVisited():
            return "PROFILE_VISITED"
        case PostLiked():
            return "POST_LIKED"
        case TaskCreated():
            return "TASK_CREATED"
        case SequenceFinished():
            return "SEQUENCE_FINISHED"
        case _:
            assert_never(event)


def encode_data(event: Event) -> str:
    """The events table's `data` of an event."""
    return _encode(event).decode()
