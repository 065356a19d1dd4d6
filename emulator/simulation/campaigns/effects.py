"""What one event changes, for simulated and injected events alike (runs on the db thread),
written into a `Batch` (batch.py). Each event's `data` is one struct of
events.py."""

from __future__ import annotations

from typing import Literal

from emulator.platform.engagement import CHANNELS
from emulator.simulation.campaigns import events as ev
from emulator.simulation.campaigns.batch import Batch, Member
from emulator.simulation.campaigns.timeline import DAY_MS, Plan, iso

REPLY_TEXTS = (
    "Thanks for reaching out, happy to chat next week.",
    "Not a priority for us right now, maybe next quarter.",
    "Interesting. Can you send more details?",
    "Please talk to my colleague who owns this topic.",
    "Sure, send me a few time slots.",
)


# ---------------------------------------------------------------------------------------------
# The effects of each kind of event


def send(
    batch: Batch,
    plan: Plan,
    member: Member,
    at: str,
    mtype: str,
    step: int | None,
    number: int,
    content: str | None,
    subject: str | None,
) -> None:
    """A connection request, network message, InMail or email goes out."""
    conv = batch.conversation(member, plan)
    mid = batch.message(conv, at, mtype, False, content, subject, number)
    channel = CHANNELS[mtype]
    member.progress("Ongoing")
    if mtype == "CONNECTION_REQUEST":
        member.engage("Connection Request Sent")
    else:
        total = max(plan.message_count, number)
        member.engage(f"Message Sent ({number}/{total}) - {channel}")
    batch.event(
        member,
        at,
        mid,
        ev.SENT[mtype](
            step=step,
            channel=channel,
            sequenceIndex=number,
            messageId=mid,
            customMessage=content,
            sentAt=at,
            subject=subject,
        ),
    )


def accept(batch: Batch, plan: Plan, member: Member, at: str, step: int | None) -> None:
    conv = batch.conversation(member, plan)
    mid = batch.message(conv, at, "CONNECTION_REQUEST", True, None, None, None)
    member.engage("Connection Accepted")
    batch.event(
        member,
        at,
        mid,
        ev.ConnectionRequestAccepted(
            step=step,
            channel="NETWORK",
            messageId=mid,
            acceptedAt=at,
        ),
    )


def reply(
    batch: Batch,
    plan: Plan,
    member: Member,
    at: str,
    step: int | None,
    mtype: str,
    number: int,
    content: str | None,
    subject: str | None,
) -> None:
    """The contact answers message `number` (its channel `mtype`): the sequence stops."""
    conv = batch.conversation(member, plan)
    answered = batch.sent_message(conv, number)
    if content is None:
        content = REPLY_TEXTS[(member.contact_id + (step or 0)) % len(REPLY_TEXTS)]
    if subject is None and mtype in ("EMAIL", "INMAIL"):
        subject = "Re: your note"
    mid = batch.message(conv, at, mtype, True, content, subject, None)
    channel = CHANNELS[mtype]
    member.replies += 1
    member.engage(f"Message Replied ({number}/{max(plan.message_count, number)}) - {channel}")
    member.progress("Replied")
    member.next_at = None
    batch.event(
        member,
        at,
        mid,
        ev.MessageReplied(
            step=step,
            channel=channel,
            sequenceIndex=number,
            messageId=mid,
            content=content,
            repliedAt=at,
            inReplyTo=answered,
            subject=subject,
        ),
    )


def open_or_click(
    batch: Batch, plan: Plan, member: Member, at: str, step: int | None, number: int, click: bool
) -> None:
    conv = batch.conversation(member, plan)
    mid = batch.sent_message(conv, number)
    if mid is not None:
        batch.count(mid, at, 0 if click else 1, 1 if click else 0)
    if click:
        member.clicks += 1
        batch.event(
            member,
            at,
            mid,
            ev.LinkClicked(
                step=step,
                channel="EMAIL",
                messageId=mid,
                clickedAt=at,
                url=f"https://links.outreach-demo.com/c/{plan.id}/{member.contact_id}/{number}",
            ),
        )
    else:
        member.opens += 1
        batch.event(
            member,
            at,
            mid,
            ev.EmailOpened(
                step=step,
                channel="EMAIL",
                messageId=mid,
                openedAt=at,
            ),
        )


def touch(
    batch: Batch,
    plan: Plan,
    member: Member,
    at: str,
    step: int | None,
    etype: Literal["PROFILE_VISITED", "POST_LIKED"],
) -> None:
    """A profile visit or a post like: an event, no message."""
    member.progress("Ongoing")
    data: ev.ProfileVisited | ev.PostLiked
    if etype == "PROFILE_VISITED":
        data = ev.ProfileVisited(
            step=step, channel="NETWORK", visitedAt=at, profileUrl=member.profile_url
        )
    else:
        data = ev.PostLiked(
            step=step,
            channel="NETWORK",
            likedAt=at,
            postUrl=f"https://www.network.com/feed/update/{plan.id}-{member.contact_id}",
        )
    batch.event(member, at, None, data)


def create_task(batch: Batch, plan: Plan, member: Member, ms: int, at: str, step: int) -> None:
    member.progress("Ongoing")
    tid, subject, ttype = batch.task(member, plan, step, ms)
    batch.event(
        member,
        at,
        None,
        ev.TaskCreated(
            step=step,
            taskId=tid,
            subject=subject,
            taskType=ttype,
            dueDate=iso(ms + DAY_MS),
        ),
    )


def finish(batch: Batch, plan: Plan, member: Member, at: str) -> None:
    member.step_index = len(plan.steps)
    member.progress("Finished")
    member.next_at = None
    batch.event(member, at, None, ev.SequenceFinished(finishedAt=at))
