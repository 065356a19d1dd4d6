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
    message_steps = [i for i, kind in enumerate(step_types) if kind in MESSAGE_STEPS]
    total = len(message_steps)
    engagement, sequence = "Added to Campaign", "Not Started"
    step_index = opens = clicks = replies = last_number = 0

    def engage(status: str) -> None:
        nonlocal engagement
        if engagement_rank(status) > engagement_rank(engagement):
            engagement = status

    def progress(status: str) -> None:
        nonlocal sequence
        if SEQUENCE_ORDER[status] > SEQUENCE_ORDER[sequence]:
            sequence = status

    for message in sorted(messages, key=lambda m: (m.createdAt, m.id)):
        channel = CHANNELS.get(message.type, message.type)
        if not message.isContactSender:
            number = message.sequenceIndex or last_number + 1
            last_number = max(last_number, number)
            opens += message.viewCount
            clicks += message.clickCount
            progress("Ongoing")
            if number <= total:
                step_index = max(step_index, message_steps[number - 1] + 1)
            if message.type == "CONNECTION_REQUEST":
                engage("Connection Request Sent")
            else:
                engage(f"Message Sent ({number}/{max(total, number)}) - {channel}")
        elif message.type == "CONNECTION_REQUEST":
            engage("Connection Accepted")
        else:
            replies += 1
            number = max(last_number, 1)
            engage(f"Message Replied ({number}/{max(total, number)}) - {channel}")
            progress("Replied")
    if sequence == "Ongoing" and (campaign_completed or step_index >= len(step_types)):
        progress("Finished")
    return MemberState(step_index, sequence, engagement, opens, clicks, replies)
