"""The simulation's event type names, declared once: the `type` of an events row, the events
a webhook subscription may name (fixtures, /v1/webhooks), those POST /_emulator/events may
inject. Every other spelling is checked against these by mypy (each event struct's TYPE in
simulation/campaigns/events.py, the injection's match) and by tests/test_event_types.py."""

from __future__ import annotations

from typing import Literal, get_args

WebhookEvent = Literal[
    "CONNECTION_REQUEST_SENT",
    "CONNECTION_REQUEST_ACCEPTED",
    "NETWORK_MESSAGE_SENT",
    "EMAIL_SENT",
    "INMAIL_SENT",
    "MESSAGE_REPLIED",
    "POST_LIKED",
    "PROFILE_VISITED",
]
InjectableEvent = Literal[WebhookEvent, "EMAIL_OPENED", "LINK_CLICKED"]
EventType = Literal[InjectableEvent, "TASK_CREATED", "SEQUENCE_FINISHED"]

WEBHOOK_EVENTS: frozenset[str] = frozenset(get_args(WebhookEvent))
EVENT_TYPES: tuple[str, ...] = get_args(EventType)
