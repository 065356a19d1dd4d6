"""The simulation's event types: one struct per type, the `data` an event row stores.

The struct is the `data` JSON of the events table and of webhook payloads, so field names and
order are the wire's; the type name lives in the row's own column (`event_type`): each
struct's TYPE, one of the names emulator/event_types.py declares.
"""

from __future__ import annotations

from typing import ClassVar, get_args

import msgspec

from emulator.event_types import EventType

# A JSON object without the type tag: the events table keeps the type in its own column.
encode = msgspec.json.Encoder().encode


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
    TYPE: ClassVar[EventType] = "CONNECTION_REQUEST_SENT"


class NetworkMessageSent(_Sent):
    TYPE: ClassVar[EventType] = "NETWORK_MESSAGE_SENT"


class InmailSent(_Sent):
    TYPE: ClassVar[EventType] = "INMAIL_SENT"


class EmailSent(_Sent):
    TYPE: ClassVar[EventType] = "EMAIL_SENT"


class ConnectionRequestAccepted(msgspec.Struct):
    TYPE: ClassVar[EventType] = "CONNECTION_REQUEST_ACCEPTED"

    step: int | None
    channel: str
    messageId: int
    acceptedAt: str


class MessageReplied(msgspec.Struct, omit_defaults=True):
    TYPE: ClassVar[EventType] = "MESSAGE_REPLIED"

    step: int | None
    channel: str
    sequenceIndex: int
    messageId: int
    content: str | None
    repliedAt: str
    inReplyTo: int | None
    subject: str | None = None


class LinkClicked(msgspec.Struct):
    TYPE: ClassVar[EventType] = "LINK_CLICKED"

    step: int | None
    channel: str
    messageId: int | None
    clickedAt: str
    url: str


class EmailOpened(msgspec.Struct):
    TYPE: ClassVar[EventType] = "EMAIL_OPENED"

    step: int | None
    channel: str
    messageId: int | None
    openedAt: str


class ProfileVisited(msgspec.Struct):
    TYPE: ClassVar[EventType] = "PROFILE_VISITED"

    step: int | None
    channel: str
    visitedAt: str
    profileUrl: str | None


class PostLiked(msgspec.Struct):
    TYPE: ClassVar[EventType] = "POST_LIKED"

    step: int | None
    channel: str
    likedAt: str
    postUrl: str


class TaskCreated(msgspec.Struct):
    TYPE: ClassVar[EventType] = "TASK_CREATED"

    step: int
    taskId: int
    subject: str
    taskType: str | None
    dueDate: str


class SequenceFinished(msgspec.Struct):
    TYPE: ClassVar[EventType] = "SEQUENCE_FINISHED"

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


# The events table's `type` by struct class (Batch.event reads it and `encode` inline,
# one call fewer an event): a dict lookup per event (a `match` over the
# classes tried each pattern in turn).
TYPES: dict[type, str] = {cls: cls.TYPE for cls in get_args(Event)}


def event_type(event: Event) -> str:
    """The events table's `type` of an event."""
    return TYPES[type(event)]


def encode_data(event: Event) -> str:
    """The events table's `data` of an event."""
    return encode(event).decode()
