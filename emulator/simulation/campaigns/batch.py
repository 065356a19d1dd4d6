"""A `Batch` lives for one write transaction: it hands out message, conversation and task ids
itself (so an event can name its message before anything is written), buffers every row and
writes them with a few executemany calls in `flush`. Event ids follow insertion order, which
is time order because callers emit in time order."""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterable
from operator import attrgetter, itemgetter
from typing import Any

import msgspec

from emulator.platform import campaign_tables, engagement, sequence_text
from emulator.platform import contacts as platform_contacts
from emulator.platform import tasks as platform_tasks
from emulator.platform.engagement import SEQUENCE_ORDER, engagement_rank
from emulator.simulation.campaigns import events as ev
from emulator.simulation.campaigns.timeline import DAY_MS, Plan, iso
from emulator.store.many_rows import Statements, run_statements
from emulator.wire import encode


class Member(msgspec.Struct, array_like=True, gc=False):
    """A member as the engine reads it (its campaign_members row, where its timeline starts:
    simulation_members, None for a member the simulation does not schedule, and what its
    messages name) and as a batch changes it. array_like: decoded straight from the JSON
    array SQLite builds of each row, one object a member and no __init__ in Python; not
    tracked by the cyclic GC (it holds no containers)."""

    campaign_id: int
    contact_id: int
    step_index: int
    sequence_status: str
    engagement: str
    opens: int
    clicks: int
    replies: int
    next_action_at: str | None  # as read: the time of its next item
    anchor_at: str | None
    first_step: int | None
    first_name: str | None
    company: str | None  # the contact's company's name
    profile_url: str | None
    rowid: int  # of its campaign_members row, read in this transaction
    next_at: str | None = None  # as written: stored form of its next item's time, if any

    def engage(self, status: str) -> None:
        current = self.engagement
        if status != current and engagement_rank(status) > engagement_rank(current):
            self.engagement = status

    def progress(self, status: str) -> None:
        if SEQUENCE_ORDER.get(status, -1) > SEQUENCE_ORDER.get(self.sequence_status, -1):
            self.sequence_status = status

    def row(self) -> tuple[Any, ...]:
        return (
            self.step_index,
            self.sequence_status,
            self.engagement,
            self.opens,
            self.clicks,
            self.replies,
            self.next_at,
            self.rowid,
        )


class Batch:
    """Buffered effects of the events of one transaction."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.next_message = _next_id(conn, "messages")
        self.next_conversation = _next_id(conn, "conversations")
        self.next_task = _next_id(conn, "platform_tasks")
        # (contact, campaign) -> its conversation id (the lowest), for the keys looked up
        self.conversations: dict[tuple[int, int], int] = {}
        self.looked_up: set[tuple[int, int]] = set()  # keys `conversations_to_read` counted
        self.sent: dict[tuple[int, int, int], int] = {}  # (conversation, n, 0) -> message id
        self.events: list[tuple[Any, ...]] = []
        self.messages: list[tuple[Any, ...]] = []
        self.new_conversations: list[tuple[int, int, int, int]] = []
        self.tasks: list[tuple[Any, ...]] = []
        self.counts: dict[int, list[Any]] = {}  # message id -> [views, clicks, updatedAt]
        # every member whose row the batch writes: its caller puts each one in
        self.members: dict[tuple[int, int], Member] = {}
        self.touched: set[int] = set()
        # What the reads below would answer, read for many keys at once before any write of
        # the batch (`prefetch`): (conversation, sequenceIndex) -> its highest outbound
        # message id, for these conversations; (contact, campaign, step) -> task id.
        self.outbound: dict[tuple[int, int | None], int] = {}
        self.outbound_of: set[int] = set()
        self.task_ids: dict[tuple[int, int, int], int | None] = {}

    def conversations_to_read(
        self, keys: Iterable[tuple[int, int]], known: dict[tuple[int, int], int] | None = None
    ) -> list[tuple[int, int]]:
        """The conversations of these (contact, campaign) keys (the lowest id of each), as
        `conversation` would read them one by one, in three parts, so that the read may run
        on another thread: the keys to read (those in `known`, ids read or made by earlier
        transactions, taken from there), counted as looked up; then
        `read_conversations` of them; then `take_conversations` of its rows, before any
        `conversation` call."""
        wanted = []
        conversations = self.conversations
        for key in set(keys) - self.looked_up:
            cid = None if known is None else known.get(key)
            if cid is None:
                wanted.append(key)
            else:
                conversations[key] = cid
                self.looked_up.add(key)
        wanted.sort()
        self.looked_up.update(wanted)
        return wanted

    def take_conversations(self, rows: str) -> None:
        """The (contact, campaign, conversation id) rows `read_conversations` answered."""
        for contact, campaign, cid in _CONVERSATION_ROWS.decode(rows):
            self.conversations[(contact, campaign)] = cid

    def conversation(self, member: Member, plan: Plan) -> int:
        key = (member.contact_id, member.campaign_id)
        cid = self.conversations.get(key)
        if cid is not None:
            return cid
        if key not in self.looked_up:  # else it has none yet
            cid = self.conn.execute(
                "SELECT MIN(id) FROM conversations WHERE contactId = ? AND campaignId = ?", key
            ).fetchone()[0]
        if cid is None:
            cid = self.next_conversation
            self.next_conversation += 1
            self.new_conversations.append(
                (cid, member.contact_id, member.campaign_id, plan.identity_id)
            )
        self.conversations[key] = cid
        return cid

    def prefetch(self, conversations: Iterable[int], tasks: Iterable[tuple[int, int, int]]) -> None:
        """Read in two queries what `sent_message` (of these conversations) and `task` (of
        these keys) would each read from the database, before the batch writes anything."""
        self.outbound_of.update(conversations)
        if self.outbound_of:
            for conversation, number, mid in self.conn.execute(
                "SELECT conversationId, sequenceIndex, MAX(id) FROM messages"
                " WHERE conversationId IN (SELECT value FROM json_each(?)) AND isContactSender = 0"
                " GROUP BY conversationId, sequenceIndex",
                (encode(sorted(self.outbound_of)).decode(),),
            ):
                self.outbound[(conversation, number)] = mid
        keys = sorted(set(tasks))
        if keys:
            self.task_ids.update(dict.fromkeys(keys))
            for contact, campaign, step, tid in self.conn.execute(  # as platform_tasks.find
                "SELECT t.contactId, t.campaignId, t.stepIndex, MIN(t.id) FROM json_each(?) k"
                " JOIN platform_tasks t ON t.contactId = k.value ->> 0"
                " AND t.campaignId = k.value ->> 1 AND t.stepIndex = k.value ->> 2"
                " GROUP BY 1, 2, 3",
                (encode(keys).decode(),),
            ):
                self.task_ids[(contact, campaign, step)] = tid

    def sent_message(self, conversation: int, number: int) -> int | None:
        """The outbound message numbered `number` in a conversation (0: the latest one)."""
        found = self.sent.get((conversation, number, 0))
        if found is not None:
            return found
        if conversation in self.outbound_of:
            if number:
                return self.outbound.get((conversation, number))
            ids = [mid for (conv, _), mid in self.outbound.items() if conv == conversation]
            return max(ids) if ids else None
        if number:
            row = self.conn.execute(
                "SELECT MAX(id) FROM messages WHERE conversationId = ? AND sequenceIndex = ?"
                " AND isContactSender = 0",
                (conversation, number),
            ).fetchone()
        else:
            row = self.conn.execute(
                "SELECT MAX(id) FROM messages WHERE conversationId = ? AND isContactSender = 0",
                (conversation,),
            ).fetchone()
        return row[0] if row else None

    def message(
        self,
        conversation: int,
        at: str,
        mtype: str,
        inbound: bool,
        content: str | None,
        subject: str | None,
        number: int | None,
    ) -> int:
        mid = self.next_message
        self.next_message += 1
        self.messages.append(
            (
                mid,
                conversation,
                content,
                subject,
                mtype,
                int(inbound),
                int(not inbound),
                number,
                at,
                at,
            )
        )
        if not inbound and number:
            self.sent[(conversation, number, 0)] = mid
        return mid

    def count(self, message_id: int, at: str, views: int, clicks: int) -> None:
        entry = self.counts.setdefault(message_id, [0, 0, ""])
        entry[0] += views
        entry[1] += clicks
        entry[2] = at

    def event(self, member: Member, at: str, message_id: int | None, data: ev.Event) -> None:
        # the event's type and data (ev.event_type, ev.encode_data), inlined: one call an event
        self.events.append(
            (
                ev.TYPES[type(data)],
                member.contact_id,
                member.campaign_id,
                message_id,
                at,
                ev.encode(data).decode(),
            )
        )
        self.touched.add(member.campaign_id)

    def by_type(self) -> Counter[str]:
        """How many events of each type, in the order each type first occurred."""
        return Counter(map(itemgetter(0), self.events))

    def task(self, member: Member, plan: Plan, step: int, ms: int) -> tuple[int, str, str | None]:
        """The platform task of a TASK step, keyed like platform.tasks.ensure_for_members."""
        spec = plan.steps[step]
        subject = sequence_text.task_subject(
            spec.taskSubject, spec.taskType, plan.name, member.first_name, member.company
        )
        key = (member.contact_id, member.campaign_id, step)
        found = self.task_ids[key] if key in self.task_ids else platform_tasks.find(self.conn, *key)
        if found is not None:
            return found, subject, spec.taskType
        tid = self.next_task
        self.next_task += 1
        self.tasks.append(
            (
                tid,
                member.contact_id,
                member.campaign_id,
                step,
                subject,
                spec.taskType,
                iso(ms + DAY_MS),
            )
        )
        return tid, subject, spec.taskType

    def member_rows(self) -> list[tuple[Any, ...]]:
        """Every member's row as `write_members` takes it, in rowid order: the table's own
        (and ints sort in less than half the time of the members' key tuples)."""
        return [member.row() for member in sorted(self.members.values(), key=_rowid)]

    def moved(self) -> dict[int, int]:
        """Campaign id -> how many more of its members written have a next item than as
        read (engagement.write_members keeps the campaigns' counts with it)."""
        moved: dict[int, int] = {}
        for member in self.members.values():
            change = (member.next_at is not None) - (member.next_action_at is not None)
            if change:
                moved[member.campaign_id] = moved.get(member.campaign_id, 0) + change
        return moved

    def statements(self) -> Statements:
        """The inserts of its conversations, messages and events and the view counts, made
        without the connection: the engine makes them while the contacts' touches run."""
        return campaign_tables.simulated_statements(
            self.new_conversations,
            self.messages,
            [(v, c, at, mid) for mid, (v, c, at) in self.counts.items()],
            self.events,
        )

    def flush(
        self,
        contacts: bool = True,
        members: list[tuple[Any, ...]] | None = None,
        statements: Statements | None = None,
    ) -> None:
        """Write every buffered row (`contacts`: the contacts' touches too; `members` and
        `statements`: the members' rows and the other rows' statements when the caller made
        them already, as `member_rows` and `statements` do)."""
        conn = self.conn
        platform_tasks.insert_sequence_tasks(conn, self.tasks)
        run_statements(conn, self.statements() if statements is None else statements)
        engagement.write_members(
            conn, self.member_rows() if members is None else members, self.moved()
        )
        if contacts:
            last = {e[1]: e[4] for e in self.events}  # a contact's last event: its updatedAt
            platform_contacts.touch(conn, [(last[cid], cid) for cid in sorted(last)])


def read_conversations(conn: sqlite3.Connection, keys: list[tuple[int, int]]) -> str:
    """(contact, campaign, lowest conversation id) of these (contact, campaign) keys that
    have a conversation, in one query, as one JSON array (`take_conversations` decodes it):
    one row, so that a thread running it takes the GIL back once, not once per row."""
    if not keys:
        return "[]"
    return str(
        conn.execute(
            "SELECT json_group_array(json_array(contactId, campaignId, id)) FROM"
            " (SELECT c.contactId, c.campaignId, MIN(c.id) AS id FROM json_each(?) k"
            " JOIN conversations c ON c.contactId = k.value ->> 0"
            " AND c.campaignId = k.value ->> 1 GROUP BY 1, 2)",
            (encode(keys).decode(),),
        ).fetchone()[0]
    )


def read_names(conn: sqlite3.Connection, contacts: list[int]) -> str:
    """(contact id, first name, company name, profile URL) of these contacts, as one JSON
    array (`take_names` gives them to the members): what a member's messages, tasks and
    visits name. Read in id order (the table's own): the engine reads them apart from the
    due query for a full chunk, on the worker while the timelines are drawn."""
    return str(
        conn.execute(
            "SELECT json_group_array(json_array(c.id, c.firstName, co.name,"
            " c.networkProfileUrl)) FROM contacts c LEFT JOIN companies co"
            " ON co.id = c.companyId WHERE c.id IN (SELECT value FROM json_each(?))",
            (encode(contacts).decode(),),
        ).fetchone()[0]
    )


def take_names(members: Iterable[Member], rows: str) -> None:
    """Each member's first name, company and profile URL from `read_names`' rows (None for
    a contact that is gone, as the due query's LEFT JOIN gives)."""
    names = {row[0]: row for row in _NAME_ROWS.decode(rows)}
    gone = (0, None, None, None)
    for member in members:
        _, member.first_name, member.company, member.profile_url = names.get(
            member.contact_id, gone
        )


_rowid = attrgetter("rowid")
_NAME_ROWS = msgspec.json.Decoder(list[tuple[int, str | None, str | None, str | None]])
_CONVERSATION_ROWS = msgspec.json.Decoder(list[tuple[int, int, int]])


def _next_id(conn: sqlite3.Connection, table: str) -> int:
    row = conn.execute(f"SELECT MAX(id) FROM {table}").fetchone()
    return (row[0] or 0) + 1
