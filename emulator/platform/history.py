"""The campaign state a fixture conversation shows: a member with a history starts from what its
messages say (sent, accepted, replied, opened, clicked), never from "Not Started" / "Added to
Campaign" beside a list of messages sent. Pure: the same rules as the simulation's effects.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from emulator.fixtures.models import Message
from emulator.platform.engagement import CHANNELS, MESSAGE_STEPS, SEQUENCE_ORDER, engagement_rank


class MemberState(NamedTuple):
    step_index: int  # the next step to run
    sequence_status: str
    engagement_status: str
    opens: int
    clicks: int
    replies: int


def member_state(
    step_types: Sequence[str], messages: Sequence[Message], campaign_completed: bool = False
) -> MemberState:
    """The member row a history of `messages` in a campaign of `step_types` leads to (in a
    COMPLETED campaign, a history without a reply has finished)."""
    return MemberStates(step_types, campaign_completed).of(messages)


class MemberStates:
    """`member_state` of many histories in one campaign: its steps read once (a cold start
    reads a quarter of a million histories at 1,000,000 contacts)."""

    def __init__(self, step_types: Sequence[str], campaign_completed: bool = False) -> None:
        self._message_steps = [i for i, kind in enumerate(step_types) if kind in MESSAGE_STEPS]
        self._steps = len(step_types)
        self._completed = campaign_completed

    def of(self, messages: Sequence[Message]) -> MemberState:
        message_steps = self._message_steps
        total = len(message_steps)
        engagement = "Added to Campaign"
        rank = engagement_rank(engagement)
        sequence = 0  # SEQUENCE_ORDER of the sequence status: it only moves forward
        step_index = opens = clicks = replies = last_number = 0
        if len(messages) > 1:
            messages = sorted(messages, key=_created)
        for message in messages:
            kind = message.type
            if not message.isContactSender:
                number = message.sequenceIndex or last_number + 1
                if number > last_number:
                    last_number = number
                opens += message.viewCount
                clicks += message.clickCount
                if sequence < _ONGOING:
                    sequence = _ONGOING
                if number <= total and message_steps[number - 1] >= step_index:
                    step_index = message_steps[number - 1] + 1
                if kind == "CONNECTION_REQUEST":
                    status = "Connection Request Sent"
                else:
                    channel = CHANNELS.get(kind, kind)
                    status = f"Message Sent ({number}/{max(total, number)}) - {channel}"
            elif kind == "CONNECTION_REQUEST":
                status = "Connection Accepted"
            else:
                replies += 1
                number = max(last_number, 1)
                channel = CHANNELS.get(kind, kind)
                status = f"Message Replied ({number}/{max(total, number)}) - {channel}"
                if sequence < _REPLIED:
                    sequence = _REPLIED
            status_rank = engagement_rank(status)
            if status_rank > rank:
                engagement, rank = status, status_rank
        if sequence == _ONGOING and (self._completed or step_index >= self._steps):
            sequence = _FINISHED
        return MemberState(step_index, _SEQUENCE[sequence], engagement, opens, clicks, replies)


def _created(message: Message) -> tuple[str, int]:
    return message.createdAt, message.id


_SEQUENCE = sorted(SEQUENCE_ORDER, key=SEQUENCE_ORDER.__getitem__)
_ONGOING, _FINISHED, _REPLIED = (SEQUENCE_ORDER[s] for s in ("Ongoing", "Finished", "Replied"))
