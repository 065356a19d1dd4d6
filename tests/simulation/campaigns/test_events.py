"""simulation/events.py: one struct per event type, stored as the `data` JSON the wire shows."""

from __future__ import annotations

from typing import get_args

import msgspec

from emulator.fixtures.models import WebhookEvent
from emulator.simulation.campaigns import events as ev
from emulator.simulation.campaigns.batch import Batch, Member
from emulator.store.db import open_sync


def test_every_event_type_has_one_struct_and_one_name() -> None:
    structs = get_args(ev.Event)
    names = [ev.event_type(cls(**dict.fromkeys(cls.__struct_fields__))) for cls in structs]
    assert len(set(names)) == len(structs) == 12
    assert set(get_args(WebhookEvent)) <= set(names)


def test_a_sent_message_without_subject_stores_no_subject_key() -> None:
    sent = ev.SENT["NETWORK_MESSAGE"](
        step=0, channel="NETWORK", sequenceIndex=1, messageId=7, customMessage=None, sentAt="t"
    )
    assert ev.event_type(sent) == "NETWORK_MESSAGE_SENT"
    assert ev.encode_data(sent) == (
        '{"step":0,"channel":"NETWORK","sequenceIndex":1,"messageId":7,"customMessage":null,"sentAt":"t"}'
    )
    email = ev.SENT["EMAIL"](
        step=None,
        channel="EMAIL",
        sequenceIndex=2,
        messageId=8,
        customMessage="hi",
        sentAt="t",
        subject="s",
    )
    assert msgspec.json.decode(ev.encode_data(email))["subject"] == "s"
    assert msgspec.json.decode(ev.encode_data(email))["step"] is None


def test_a_task_event_names_its_task() -> None:
    task = ev.TaskCreated(step=2, taskId=5, subject="Call: Q3", taskType="CALL", dueDate="d")
    assert ev.event_type(task) == "TASK_CREATED"
    assert msgspec.json.decode(ev.encode_data(task)) == {
        "step": 2,
        "taskId": 5,
        "subject": "Call: Q3",
        "taskType": "CALL",
        "dueDate": "d",
    }


def test_a_batch_stores_each_event_as_its_type_and_data_and_counts_types_in_order() -> None:
    conn = open_sync(None)
    try:
        batch = Batch(conn)
        member = Member(
            3, 11, 0, "Not Started", "Not Started", 0, 0, 0, None, None, None, None, None, None, 1
        )
        finished = ev.SequenceFinished(finishedAt="2026-01-02T00:00:00.000Z")
        opened = ev.EmailOpened(step=1, channel="EMAIL", messageId=None, openedAt="t")
        for data, mid in ((opened, 9), (finished, None), (opened, 9)):
            batch.event(member, "t", mid, data)
        assert batch.events == [
            ("EMAIL_OPENED", 11, 3, 9, "t", ev.encode_data(opened)),
            ("SEQUENCE_FINISHED", 11, 3, None, "t", ev.encode_data(finished)),
            ("EMAIL_OPENED", 11, 3, 9, "t", ev.encode_data(opened)),
        ]
        assert list(batch.by_type().items()) == [("EMAIL_OPENED", 2), ("SEQUENCE_FINISHED", 1)]
        assert batch.touched == {3}
    finally:
        conn.close()
