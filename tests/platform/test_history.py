"""The member state a fixture conversation shows (expected values from the rules: steps run,
the engagement's order Added < Request Sent < Accepted < Sent < Replied, message numbers out
of the campaign's message steps)."""

from __future__ import annotations

from typing import Any

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from emulator.fixtures import models as m
from emulator.platform.engagement import ENGAGEMENT_ORDER
from emulator.platform.history import MemberState, MemberStates, member_state
from emulator.platform.seed import _history_rows

TS = "2026-03-0{}T09:00:00.000Z"
# steps 0-4: a visit (no message), a request, a task, an e-mail, a network message
STEPS = ["PROFILE_VISIT", "CONNECTION_REQUEST", "TASK", "EMAIL", "NETWORK_MESSAGE"]


def msg(id: int, day: int, type: str = "EMAIL", **more: object) -> m.Message:
    at = TS.format(day)
    return m.Message(id=id, type=type, createdAt=at, updatedAt=at, **more)  # type: ignore[arg-type]


def test_no_message_is_a_member_not_started() -> None:
    assert member_state(STEPS, []) == MemberState(0, "Not Started", "Added to Campaign", 0, 0, 0)


def test_messages_sent_in_time_order_set_the_next_step_and_the_counts() -> None:
    # given out of order: the request (day 1) comes first, the e-mail (day 2) second
    messages = [
        msg(2, 2, "EMAIL", sequenceIndex=2, viewCount=3, clickCount=1),
        msg(1, 1, "CONNECTION_REQUEST", sequenceIndex=1),
    ]
    assert member_state(STEPS, messages) == MemberState(
        4, "Ongoing", "Message Sent (2/3) - EMAIL", 3, 1, 0
    )


def test_an_accepted_request_then_a_reply() -> None:
    messages = [
        msg(1, 1, "CONNECTION_REQUEST", sequenceIndex=1),
        msg(2, 2, "CONNECTION_REQUEST", isContactSender=True),
        msg(3, 3, "NETWORK_MESSAGE", isContactSender=True),
    ]
    assert member_state(STEPS, messages) == MemberState(
        2, "Replied", "Message Replied (1/3) - NETWORK", 0, 0, 1
    )
    assert member_state(STEPS, messages[:2]) == MemberState(
        2, "Ongoing", "Connection Accepted", 0, 0, 0
    )


def test_a_history_finishes_at_the_last_step_or_in_a_completed_campaign() -> None:
    every = [msg(1, 1, "CONNECTION_REQUEST"), msg(2, 2), msg(3, 3, "NETWORK_MESSAGE")]
    assert member_state(STEPS, every) == MemberState(
        5, "Finished", "Message Sent (3/3) - NETWORK", 0, 0, 0
    )
    assert member_state(STEPS, every[:1], campaign_completed=True).sequence_status == "Finished"
    assert member_state(STEPS, every[:1]).sequence_status == "Ongoing"


def test_one_campaigns_states_are_each_historys_own() -> None:
    states = MemberStates(STEPS)
    first = [msg(1, 1, "CONNECTION_REQUEST"), msg(2, 2, "EMAIL", isContactSender=True)]
    second = [msg(3, 1, "CONNECTION_REQUEST")]
    assert states.of(first) == member_state(STEPS, first)
    assert states.of(second) == member_state(STEPS, second)  # nothing left from the first
    assert states.of(second).engagement_status == "Connection Request Sent"


def test_a_members_conversations_in_one_campaign_make_one_history() -> None:
    campaign = m.Campaign(
        id=7,
        name="c",
        status="ACTIVE",
        createdBy=1,
        senderIdentityId=1,
        createdAt=TS.format(1),
        sequence=[m.SequenceStep(type=t) for t in STEPS],  # type: ignore[arg-type]
    )
    first = m.Conversation(id=1, contactId=5, campaignId=7, identityId=1, messages=[msg(1, 1)])
    second = m.Conversation(
        id=2, contactId=5, campaignId=7, identityId=1, messages=[msg(2, 2, isContactSender=True)]
    )
    other = m.Conversation(id=3, contactId=6, campaignId=9, identityId=1, messages=[msg(3, 1)])
    fx = m.FixtureSet(campaigns=[campaign], conversations=[first, second, other])
    rows = _history_rows(fx)
    assert rows == [
        (2, "Replied", "Message Replied (1/3) - EMAIL", 0, 0, 1, 7, 5),
        (0, "Finished", "Message Sent (1/1) - EMAIL", 0, 0, 0, 9, 6),  # a campaign not known
    ]
    assert [len(c.messages) for c in fx.conversations] == [1, 1, 1]  # the records unchanged


# Histories of any 64-bit message numbers and small counts, negative ones too (the loader's
# struct takes a message or names the field it refuses), created on any of a few days (ties
# broken by id).
_MESSAGE_TYPES = ["CONNECTION_REQUEST", "NETWORK_MESSAGE", "INMAIL", "EMAIL"]
_histories = st.lists(
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(_MESSAGE_TYPES),
            "isContactSender": st.booleans(),
            "sequenceIndex": st.none()
            | st.integers(min_value=-8, max_value=8)
            | st.integers(min_value=-(2**63), max_value=2**63 - 1),
            "viewCount": st.integers(min_value=-2, max_value=50),
            "clickCount": st.integers(min_value=-2, max_value=50),
            "createdAt": st.integers(min_value=1, max_value=9).map(TS.format),
        }
    ),
    max_size=8,
)
_steps = st.lists(st.sampled_from([*_MESSAGE_TYPES, "TASK", "PROFILE_VISIT"]), max_size=6)
_REFUSED = {"sequenceIndex": 1, "viewCount": 0, "clickCount": 0}  # field -> its lowest value


@given(steps=_steps, history=_histories, completed=st.booleans())
def test_any_history_the_loader_accepts_gives_a_member_state(
    steps: list[str], history: list[dict[str, Any]], completed: bool
) -> None:
    """A message the loader's struct takes joins the history; one it refuses is refused for
    a number below the field's lowest (a message number from 1, counts from 0). Whatever the
    numbers taken (beyond the campaign's message steps too), the history makes a state: the
    counts are the messages' own, the next step one of the campaign's or past its end, the
    statuses of the documented sets."""
    messages = []
    for i, fields in enumerate(history, start=1):
        try:
            messages.append(
                msgspec.convert({**fields, "id": i, "updatedAt": fields["createdAt"]}, m.Message)
            )
        except msgspec.ValidationError as error:
            field = str(error).rsplit(".", 1)[-1].rstrip("`")  # "... - at `$.viewCount`"
            assert field in _REFUSED and fields[field] < _REFUSED[field]
    state = MemberStates(steps, completed).of(messages)
    outbound = [x for x in messages if not x.isContactSender]
    assert state.opens == sum(x.viewCount for x in outbound)
    assert state.clicks == sum(x.clickCount for x in outbound)
    assert state.replies == sum(
        1 for x in messages if x.isContactSender and x.type != "CONNECTION_REQUEST"
    )
    assert 0 <= state.step_index <= len(steps)
    assert state.sequence_status in {"Not Started", "Ongoing", "Finished", "Replied"}
    assert state.engagement_status.startswith(ENGAGEMENT_ORDER)
    if not outbound:
        assert state.step_index == 0
