"""The event type names are declared once (emulator/event_types.py): every event struct names
one of them, each name has exactly one struct, and the narrower lists are parts of it."""

from __future__ import annotations

from typing import get_args

from emulator.event_types import EVENT_TYPES, WEBHOOK_EVENTS, InjectableEvent
from emulator.simulation.campaigns import events as ev


def test_each_event_type_has_exactly_one_struct() -> None:
    names = [cls.TYPE for cls in get_args(ev.Event)]
    assert sorted(names) == sorted(EVENT_TYPES)
    assert len(set(names)) == len(names)


def test_the_stored_type_is_the_structs_own() -> None:
    event = ev.SequenceFinished(finishedAt="2026-01-01T00:00:00.000Z")
    assert ev.event_type(event) == "SEQUENCE_FINISHED"
    assert ev.encode_data(event) == '{"finishedAt":"2026-01-01T00:00:00.000Z"}'


def test_webhook_and_injectable_events_are_event_types() -> None:
    assert WEBHOOK_EVENTS < set(get_args(InjectableEvent)) < set(EVENT_TYPES)
    assert {cls.TYPE for cls in ev.SENT.values()} <= WEBHOOK_EVENTS
