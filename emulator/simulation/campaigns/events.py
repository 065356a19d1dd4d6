"""The simulation's event types: one struct per type, the `data` an event row stores.

The struct is the `data` JSON of the events table and of webhook payloads, so field names and
order are the wire's; the type name lives in the row's own column (`event_type`).
"""

from __future__ import annotations

from typing import ClassVar

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


# The events table's `type` by struct class: a dict lookup per event (a `match` over the
# classes tried each pattern in turn).
_TYPES: dict[type, str] = {
    ConnectionRequestSent: ConnectionRequestSent.TYPE,
    NetworkMessageSent: NetworkMessageSent.TYPE,
    InmailSent: InmailSent.TYPE,
    EmailSent: EmailSent.TYPE,
    ConnectionRequestAccepted: "CONNECTION_REQUEST_ACCEPTED",
    MessageReplied: "MESSAGE_REPLIED",
    LinkClicked: "LINK_CLICKED",
    EmailOpened: "EMAIL_OPENED",
    ProfileVisited: "PROFILE_VISITED",
    PostLiked: "POST_LIKED",
    TaskCreated: "TASK_CREATED",
    SequenceFinished: "SEQUENCE_FINISHED",
}


def event_type(event: Event) -> str:
    """The events table's `type` of an event."""
    return _TYPES[type(event)]


def encode_data(event: Event) -> str:
    """The events table's `data` of an event."""
    return _encode(event).decode()


def stored(event: Event) -> tuple[str, str]:
    """The events table's `type` and `data` of an event, in one call (one an event)."""
    return _TYPES[type(event)], _encode(event).decode()
