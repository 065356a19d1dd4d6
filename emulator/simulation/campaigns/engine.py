"""The campaign simulation: members of ACTIVE campaigns walk their sequences as the clock moves.

`advance_to(target)` processes every item due at or before `target` in global time order
(ties: campaign id, contact id, the member's own order) in chunks, each one store.write that
moves the clock to the moment it reached, then awaits the listeners. A chunk holds at most
CHUNK_MS of virtual time and about CHUNK_ITEMS items (other requests wait for a write: a day
of 290,000 events at 1,000,000 contacts is some 30 chunks, each well under a second); it may
end inside a millisecond, between two members, as the items are processed in key order.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import itertools
import logging
import sqlite3
from bisect import bisect_left, bisect_right
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, NamedTuple

import msgspec

from emulator.operations import Busy
from emulator.platform import campaign_tables, engagement
from emulator.platform.contacts import touch_text, touches_text
from emulator.platform.sequence_text import render
from emulator.simulation.campaigns import effects as fx
from emulator.simulation.campaigns import events as ev
from emulator.simulation.campaigns.batch import (
    Batch,
    Member,
    read_conversations,
    read_names,
    take_names,
)
from emulator.simulation.campaigns.injection import Injected, InjectedOut, inject
from emulator.simulation.campaigns.scheduling import (
    SimulationError,
    complete_finished,
    first_due,
    load_plans,
    schedule,
)
from emulator.simulation.campaigns.timeline import (
    ACCEPTED,
    CLICKED,
    DAY_MS,
    FINISHED,
    OPENED,
    REPLIED,
    STEP,
    Drawn,
    Item,
    Plan,
    draw_through,
    from_ms,
    iso,
    parse_ms,
    shared_start,
    to_ms,
)
from emulator.simulation.campaigns.touches import Job, Worker
from emulator.simulation.progress import Progress, report
from emulator.state import Emulator
from emulator.store.db import write_meta
from emulator.wire import Wire, encode, parse_iso

log = logging.getLogger(__name__)

MAX_AHEAD_MS = 3650 * DAY_MS  # an injected event's `time`: beyond that a typo is likelier
CHUNK_MS = 7 * DAY_MS  # one write per simulated week at most: other requests get a turn
CHUNK_ITEMS = 10_000  # and about this many items (never fewer, unless time runs out first)
CONVERSATIONS_KEPT = 300_000  # conversation ids kept between chunks (~40 MB)
# Member timelines kept between chunks (~0.6-0.9 KB each): then the first drawn go. A
# timeline is pure: one dropped is drawn again from its start when its member is next due.
# 10,000 and 100,000 contacts keep all of theirs (~2,800 and ~28,000 members due).
TIMELINES_KEPT = 100_000
# A chunk of AHEAD_MIN members or more, but fewer than its limit, touches the contacts of its
# first AHEAD_SHARE % of members while it draws the others' timelines (`_chunk`): about as
# long as each other (~6 us a contact's touch, ~5 us a member's draw). Not a chunk of
# `chunk_items` members (100,000 contacts and more): in an A/B there, on a shared machine,
# the two threads slowed each other (-6%).
AHEAD_MIN = 200
AHEAD_SHARE = 40
Listener = Callable[[datetime], Awaitable[None]]
# What the due query reads of each member's contact (its first name, its company's name, its
# profile URL), and its joins: read there for a chunk of fewer members than its limit (where the
# worker touches contacts early), else later on the worker (NULLs here, `read_names`). At
# 1,000,000 contacts each contact and company is a random page: ~4 us a member of the query.
_NAMES = (
    "c.firstName, co.name, c.networkProfileUrl",
    " LEFT JOIN contacts c ON c.id = m.contactId LEFT JOIN companies co ON co.id = c.companyId",
)
_NO_NAMES = ("NULL, NULL, NULL", "")
# The due query's rows, decoded from one JSON array of arrays.
_DUE_ROWS = msgspec.json.Decoder(list[Member])


class Due(msgspec.Struct, order=True, gc=False):
    """An item due in a chunk; they sort by (ms, campaign, contact, order), which is unique:
    `item` and `member` are never compared. A Struct without GC tracking: made and sorted
    ~15% faster than a NamedTuple, one per event."""

    ms: int
    campaign: int
    contact: int
    order: int
    item: Item
    at: str  # its time as stored
    member: Member


class Chunked(NamedTuple):
    """What a chunk did: the moment it reached, whether it stopped short of its end (then
    at that moment, between two members), and the conversation ids it read or made."""

    reached: int
    short: bool
    conversations: dict[tuple[int, int], int]


class Timeline(msgspec.Struct, gc=False):
    """A member's items drawn so far (`drawn`, timeline.py: drawn as chunks reach them, with
    their stored times), with what they were made from. Kept for up to TIMELINES_KEPT
    members: not tracked by the cyclic GC (it holds no cycle), which would otherwise walk
    them all."""

    fingerprint: int  # the plan's
    anchor: str
    first_step: int
    drawn: Drawn


def _key(d: Due) -> tuple[int, int, int]:
    return d.ms, d.campaign, d.contact


class AdvanceResult(Wire):
    """What one advance did: the clock before and after, the events it added."""

    previous: str
    now: str
    events: int = 0
    eventsByType: dict[str, int] = msgspec.field(default_factory=dict)
    completedCampaigns: list[int] = msgspec.field(default_factory=list)


class Simulation:
    """Owns advancing the clock; `listeners` run after each advance (webhooks, auto-sync...)."""

    def __init__(self, emulator: Emulator) -> None:
        self.emulator = emulator
        self.listeners: list[Listener] = []
        self.chunk_items = CHUNK_ITEMS
        self._lock = asyncio.Lock()
        self._generation = 0
        # (campaign, contact) -> its timeline: timelines are pure
        self._timelines: dict[tuple[int, int], Timeline] = {}
        # (contact, campaign) -> its conversation id, as chunks read or made them: a fact that
        # stays true (the lowest id of the pair; a new one only comes where there is none, and
        # conversations are never deleted but by a reset or restore, which forget these)
        self._conversations: dict[tuple[int, int], int] = {}
        self._worker = Worker()  # a chunk's SQLite work beside its Python (touches.py)
        self._full = False  # whether the last chunk read `chunk_items` members
        emulator.on_reset.append(self._forget)

    def _forget(self) -> None:
        self._generation += 1
        self._timelines.clear()
        self._conversations.clear()

    # -----------------------------------------------------------------------------------------
    async def advance_to(
        self, target: datetime, wait: float | None = None, progress: Progress | None = None
    ) -> AdvanceResult:
        """Run every campaign item due at or before `target`, move the clock there, then await
        each listener with `target` (a listener's error is logged, never raised). `progress` is
        told after each chunk (simulation/progress.py) and may stop the advance there.

        The whole advance, listeners included, holds the emulator's operation guard: a reset,
        restore or export waits for it or is refused (Busy), and never sees half of it."""
        async with self._lock, self.emulator.operations.exclusive("clock advance", wait=wait):
            clock = self.emulator.clock
            previous = clock.now()
            target = max(target, previous)
            result = AdvanceResult(
                previous=iso(to_ms(previous)),
                now=iso(to_ms(target)),
                eventsByType={},
                completedCampaigns=[],
            )
            generation = self._generation
            target_ms = to_ms(target)
            while self._generation == generation:
                end_ms, short, conversations = await self.emulator.db.write(
                    functools.partial(
                        self._paused_gc_chunk,
                        start_ms=to_ms(clock.now()),
                        target_ms=target_ms,
                        result=result,
                    )
                )
                if self._generation != generation:
                    break  # reset or restored meanwhile: that state's clock stands
                self._remember(conversations)  # committed: they exist
                clock.move_to(from_ms(end_ms))
                if progress is not None and not report(
                    progress, result.previous, iso(target_ms), iso(end_ms), result.events
                ):
                    target, result.now = from_ms(end_ms), iso(end_ms)  # stopped by the caller
                    break
                if end_ms >= target_ms and not short:
                    break
            if self._generation == generation:
                await self._notify(target)
            return result

    async def run_realtime(self, every: float = 0.5) -> None:
        """`--clock realtime`: run the simulation up to the moving clock every `every` wall s."""
        while True:
            await asyncio.sleep(every)
            try:
                await self.advance_to(self.emulator.clock.now(), wait=0)
            except Busy:  # a reset, restore or export holds the state: the next tick catches up
                continue
            except Exception:  # keep ticking: one bad tick must not stop time
                log.exception("realtime simulation tick failed")

    async def _notify(self, target: datetime) -> None:
        for listener in list(self.listeners):
            try:
                await listener(target)
            except Exception:  # a listener records its own errors; this only keeps advancing
                log.exception("simulation listener %r failed", listener)

    def _paused_gc_chunk(
        self, conn: sqlite3.Connection, start_ms: int, target_ms: int, result: AdvanceResult
    ) -> Chunked:
        """The next chunk from `start_ms` (the clock) towards `target_ms`: it skips the span
        where nothing is due (read in the same write: one round trip to the store's thread a
        chunk, not two), then runs `_chunk` without cyclic garbage collection: its rows, items
        and members hold no cycles, and the collections their allocations set off walk every
        object the process keeps (~100 of ~1,400 ms over the bench's 30 advances)."""
        first = first_due(conn)
        if first is None:
            start_ms = target_ms  # nothing scheduled: one write moves the clock
        elif first > start_ms:
            start_ms = min(first, target_ms)  # nothing due before: skip the empty span
        end_ms = min(target_ms, start_ms + CHUNK_MS)
        enabled = gc.isenabled()
        gc.disable()
        try:
            return self._chunk(conn, end_ms, result)
        finally:
            if enabled:
                gc.enable()

    def _chunk(self, conn: sqlite3.Connection, end_ms: int, result: AdvanceResult) -> Chunked:
        """Process the items due at or before `end_ms` in key order, about `chunk_items` of
        them at most; runs inside one write transaction. Answers the moment reached and
        whether the chunk stopped short of `end_ms`: then the moment is the time of the last
        item processed, and the items left at that millisecond (of members after the last one
        processed) are the next chunk's. The conversation ids it answers are kept by the
        caller once its transaction committed; the timelines it drew are kept at once (they
        are pure, so a chunk that then fails leaves none that is wrong), up to TIMELINES_KEPT."""
        plans = load_plans(conn, "WHERE status = 'ACTIVE'")
        batch = Batch(conn)
        limit = self.chunk_items
        # The first `limit` members in (nextActionAt, campaign, contact) order, read along the
        # index of that order: the rest of the members due come after the last one read, and
        # so do all their items. Stopped campaigns keep their members' places: left out here
        # (`+` keeps SQLite on the index rather than on the members of the active campaigns).
        # One JSON array of the rows, decoded by msgspec: sqlite3 makes each of the 15 columns
        # a Python object at ~0.2 us a value, ~20% more than SQLite's json_array plus msgspec.
        # The inner query names its columns: `*` copied every column of each member through
        # the subquery (~10% of the query).
        # A full chunk's members get their names on the worker (`read_names`) while their
        # timelines are drawn; whether this one is full is known after the query, so the
        # last chunk's answer is the guess (a wrong one costs the names' read here).
        names_later = self._full
        names_sql = _NO_NAMES if names_later else _NAMES
        rows = _DUE_ROWS.decode(
            conn.execute(
                "SELECT json_group_array(json_array(m.campaignId, m.contactId, m.stepIndex,"
                " m.sequenceStatus, m.engagementStatus, m.opens, m.clicks, m.replies,"
                f" m.nextActionAt, s.anchorAt, s.firstStep, {names_sql[0]}, m.rid))"
                " FROM (SELECT rowid AS rid, campaignId, contactId, stepIndex, sequenceStatus,"
                " engagementStatus, opens, clicks, replies, nextActionAt FROM campaign_members"
                " WHERE nextActionAt IS NOT NULL AND nextActionAt <= ?"
                " AND +campaignId IN (SELECT value FROM json_each(?))"
                " ORDER BY nextActionAt, campaignId, contactId LIMIT ?) m"
                " LEFT JOIN simulation_members s ON s.campaignId = m.campaignId"
                f" AND s.contactId = m.contactId{names_sql[1]}",
                (iso(end_ms), encode(sorted(plans)).decode(), limit),
            ).fetchone()[0]
        )
        due: list[Due] = []
        starts: dict[tuple[int, str, int], Drawn] = {}  # (campaign, anchor, first step)
        worker = self._worker
        # SQLite work on the worker's thread (touches.py) while this one draws timelines:
        # first the conversations of every member read (those of the items processed are
        # among them), then the contacts of the first members read whose items the chunk
        # surely processes, each touched once with its last time (`ahead_of`); the later
        # touch takes the others. A job's error is raised by its wait; none outlives the
        # transaction.
        self._full = full = len(rows) >= limit
        contacts = [m.contact_id for m in rows] if names_later else []
        # a wrong guess: the names read here, before the worker's reads
        names_text = read_names(conn, contacts) if names_later and not full else None
        wanted = batch.conversations_to_read(
            [(m.contact_id, m.campaign_id) for m in rows], self._conversations
        )
        jobs: list[Job[Any]] = []
        ahead_times: dict[int, str] = {}
        try:
            read = (
                worker.submit(functools.partial(read_conversations, conn, wanted))
                if wanted
                else None
            )
            if read is not None:
                jobs.append(read)
            names = None
            if names_later and full:  # the worker has nothing else to do beside the drawing
                names = worker.submit(functools.partial(read_names, conn, contacts))
                jobs.append(names)
            split = len(rows) * AHEAD_SHARE // 100 if AHEAD_MIN <= len(rows) < limit else 0
            self._draw_due(rows[:split], plans, end_ms, due, batch.members, starts)
            if split:
                ahead_times = ahead_of(due, rows[split:], limit)
                if ahead_times:
                    text = touches_text({c: ahead_times[c] for c in sorted(ahead_times)})
                    jobs.append(worker.submit(functools.partial(touch_text, conn, text)))
            self._draw_due(rows[split:], plans, end_ms, due, batch.members, starts)
            due.sort()  # (time, campaign, contact, order) is unique: the rest is never compared
            for job in jobs:
                job.wait()
        except BaseException:
            for job in jobs:
                job.join()
            raise
        if names is not None:
            names_text = names.wait()
        if names_text is not None:
            take_names(batch.members.values(), names_text)
        reached: int | None = None
        if len(rows) >= limit or len(due) > limit:
            due, reached = self._cut(due, rows, limit, batch)
        short = reached is not None
        if reached is None:
            reached = end_ms
        if read is not None:  # none to read: every key's conversation is known
            batch.take_conversations(read.wait())
        prefetch(batch, plans, due)
        # each item makes one event at its time: a contact's last one is its updatedAt
        # (those touched ahead, with their last time, are done)
        last = {d.contact: d.at for d in due}
        times = {c: last[c] for c in sorted(last) if ahead_times.get(c) != last[c]}
        touches = (
            worker.submit(functools.partial(touch_text, conn, touches_text(times)))
            if times
            else None
        )
        try:
            for d in due:
                member = d.member
                apply_item(batch, plans[member.campaign_id], member, d.item, d.ms, d.at)
            # Python work left that needs no connection, while the touches may still run:
            # every row and statement the flush writes
            members = batch.member_rows()
            statements = batch.statements()
            counts = batch.by_type()
        except BaseException:
            if touches is not None:
                touches.join()  # nothing outlives the transaction; this error is the one raised
            raise
        if touches is not None:
            touches.wait()
        batch.flush(contacts=False, members=members, statements=statements)
        result.completedCampaigns.extend(complete_finished(conn, batch.touched))
        write_meta(conn, "clock", iso(reached))
        self._bound_timelines()
        result.events += len(batch.events)
        for etype, n in counts.items():
            result.eventsByType[etype] = result.eventsByType.get(etype, 0) + n
        return Chunked(reached, short, batch.conversations)

    def _draw_due(
        self,
        rows: list[Member],
        plans: dict[int, Plan],
        end_ms: int,
        due: list[Due],
        due_members: dict[tuple[int, int], Member],
        starts: dict[tuple[int, str, int], Drawn],
    ) -> None:
        """Add the items of these members due at or before `end_ms` to `due` (unsorted) and
        the members to `due_members`; each member's `next_at` is set where an item after
        `end_ms` is drawn (it stays None until then). `starts`: the chunk's shared starts of
        timelines by (campaign, anchor, first step), `shared_start`."""
        timelines = self._timelines  # (campaign, contact) -> its timeline: timelines are pure
        for member in rows:
            anchor, first_step = member.anchor_at, member.first_step
            if anchor is None or first_step is None:  # not simulated: it stays where it is
                continue
            plan = plans[member.campaign_id]
            key = campaign, contact = member.campaign_id, member.contact_id
            cached = timelines.get(key)
            if (
                cached is None
                or cached.anchor != anchor
                or cached.first_step != first_step
                or cached.fingerprint != plan.fingerprint
            ):
                # members scheduled together share their anchor, and the items of their
                # timelines' start that need no draw (timeline.shared_start)
                shared = starts.get((campaign, anchor, first_step))
                if shared is None:
                    shared = starts[(campaign, anchor, first_step)] = shared_start(
                        plan, parse_ms(anchor), first_step
                    )
                cached = timelines[key] = Timeline(
                    plan.fingerprint, anchor, first_step, shared.copy()
                )
            drawn = cached.drawn
            items = drawn.items
            if not drawn.done and (not items or items[-1].ms <= end_ms):
                items = draw_through(plan, contact, drawn, end_ms)  # up to the first after
            ats = drawn.ats
            for i in range(bisect_left(ats, member.next_action_at or ""), len(items)):
                item = items[i]
                if item.ms > end_ms:
                    member.next_at = ats[i]
                    break
                due.append(Due(item.ms, campaign, contact, item.order, item, ats[i], member))
            due_members[key] = member

    def _bound_timelines(self) -> None:
        """Keep at most TIMELINES_KEPT timelines, dropping the first drawn (the dict keeps
        the order of insertion; one dropped and drawn again goes last), a tenth of the cap
        more at once: the dict's freed slots at its start are then not walked every chunk."""
        timelines = self._timelines
        excess = len(timelines) - TIMELINES_KEPT
        if excess > 0:
            for key in list(itertools.islice(timelines, excess + TIMELINES_KEPT // 10)):
                del timelines[key]

    def _remember(self, conversations: dict[tuple[int, int], int]) -> None:
        """Keep a chunk's conversation ids once its transaction committed (a chunk that fails,
        even in its COMMIT, keeps none: the ids of conversations rolled back would be given
        again), up to CONVERSATIONS_KEPT of them (then start again: a chunk reads those it
        lacks)."""
        if len(self._conversations) + len(conversations) > CONVERSATIONS_KEPT:
            self._conversations.clear()
        self._conversations.update(conversations)

    @staticmethod
    def _cut(
        due: list[Due], rows: list[Member], limit: int, batch: Batch
    ) -> tuple[list[Due], int | None]:
        """The items of `due` this chunk may process, and the moment they reach (None: the
        chunk's end). When the query stopped at `limit` members, the members not read come
        after the last one read (r) in (nextActionAt, campaign, contact) order, and so do their
        items: the chunk ends at r's key. It ends earlier when more than `limit` items are
        left, between two members (a member's items at one millisecond stay together: its
        nextActionAt names them all)."""
        cut, reached = len(due), None
        if len(rows) >= limit:
            last = max(rows, key=lambda r: (r.next_action_at or "", r.campaign_id, r.contact_id))
            bound = (parse_ms(last.next_action_at or ""), last.campaign_id, last.contact_id)
            cut, reached = bisect_right(due, bound, key=_key), bound[0]
        if cut > limit:
            whole = cut
            cut = limit
            while cut < whole and _key(due[cut]) == _key(due[cut - 1]):
                cut += 1
            if cut < whole:
                reached = due[cut - 1].ms
        if cut == len(due):
            return due, reached
        kept = due[:cut]
        resumed: set[int] = set()
        for d in due[cut:]:  # each member left resumes at its first item not processed
            member = d.member
            if id(member) not in resumed:
                resumed.add(id(member))
                member.next_at = d.at
        processed = {(d.campaign, d.contact) for d in kept}
        members = batch.members
        for key in [k for k in members if k not in processed]:
            if id(members[key]) in resumed:  # nothing of it in this chunk: its row stands
                del members[key]
        return kept, reached

    # -----------------------------------------------------------------------------------------
    async def start_campaign(self, campaign_id: int) -> tuple[str, int]:
        """DRAFT or PENDING -> ACTIVE: schedule fresh members (from now) or resume a stopped
        campaign (its pending steps shift by the pause); items due now run at once."""
        async with self._lock:
            now_ms = to_ms(self.emulator.clock.now())
            status, scheduled = await self.emulator.db.write(
                lambda conn: self._start(conn, campaign_id, now_ms)
            )
        if status == "ACTIVE":
            await self.advance_to(from_ms(now_ms))
            row = await self.emulator.db.fetchone(
                "SELECT status FROM campaigns WHERE id = ?", (campaign_id,)
            )
            status = row[0] if row else status
        return status, scheduled

    def _start(self, conn: sqlite3.Connection, campaign_id: int, now_ms: int) -> tuple[str, int]:
        plan = load_plans(conn, "WHERE id = ?", (campaign_id,)).get(campaign_id)
        if plan is None:
            raise SimulationError(404, f"Campaign {campaign_id} not found")
        if plan.status not in ("DRAFT", "PENDING"):
            raise SimulationError(
                409,
                f"Campaign {campaign_id} is {plan.status}: only a DRAFT or"
                " PENDING campaign can start",
            )
        paused = conn.execute(
            "SELECT pausedAt FROM simulation_campaigns WHERE campaignId = ?", (campaign_id,)
        ).fetchone()
        if paused is not None and paused[0] is not None:
            shift = now_ms - parse_ms(paused[0])
            rows = conn.execute(
                "SELECT s.contactId, s.anchorAt, m.nextActionAt FROM simulation_members s"
                " JOIN campaign_members m ON m.campaignId = s.campaignId AND m.contactId = s.contactId"
                " WHERE s.campaignId = ?",
                (campaign_id,),
            ).fetchall()
            campaign_tables.move_anchors(
                conn, [(iso(parse_ms(a) + shift), campaign_id, c) for c, a, _ in rows]
            )
            engagement.move_members(
                conn,
                [(iso(parse_ms(n) + shift), campaign_id, c) for c, _, n in rows if n is not None],
            )
        campaign_tables.pause_campaign(conn, campaign_id, None)
        scheduled = schedule(conn, plan, now_ms)
        campaign_tables.set_campaign_status(conn, campaign_id, "ACTIVE")
        complete_finished(conn, {campaign_id})
        return "ACTIVE", scheduled

    async def stop_campaign(self, campaign_id: int) -> str:
        """ACTIVE -> PENDING: members keep their place; start resumes them."""
        async with self._lock:
            now = self.emulator.clock.now_iso()

            def stop(conn: sqlite3.Connection) -> str:
                row = conn.execute(
                    "SELECT status FROM campaigns WHERE id = ?", (campaign_id,)
                ).fetchone()
                if row is None:
                    raise SimulationError(404, f"Campaign {campaign_id} not found")
                if row[0] != "ACTIVE":
                    raise SimulationError(
                        409, f"Campaign {campaign_id} is {row[0]}: only an ACTIVE campaign can stop"
                    )
                campaign_tables.set_campaign_status(conn, campaign_id, "PENDING")
                campaign_tables.pause_campaign(conn, campaign_id, now)
                return "PENDING"

            return await self.emulator.db.write(stop)

    # -----------------------------------------------------------------------------------------
    async def inject(self, event: Injected) -> InjectedOut:
        """One explicit event with the effects of a simulated one; `time` (default now) may be
        later than now (the clock advances to it first), never earlier."""
        now = self.emulator.clock.now()
        at = now
        if event.time is not None:
            try:
                at = parse_iso(event.time)
            except ValueError:
                raise SimulationError(400, "time: not an ISO 8601 timestamp", "time") from None
            if to_ms(at) < to_ms(now):
                raise SimulationError(400, f"time is before the clock ({iso(to_ms(now))})", "time")
            if to_ms(at) - to_ms(now) > MAX_AHEAD_MS:
                raise SimulationError(400, "time is more than ten years ahead of the clock", "time")
            await self.advance_to(at)
        async with self._lock:
            ms = to_ms(self.emulator.clock.now())
            out = await self.emulator.db.write(lambda conn: inject(conn, event, ms))
        await self._notify(from_ms(ms))
        return out


def ahead_of(due: list[Due], others: list[Member], limit: int) -> dict[int, str]:
    """The final time of each contact whose items in `due` (drawn for some members, in any
    order) the chunk all processes whatever the items of the `others` members read: those
    before the first key (time, campaign, contact) of the others, when they are fewer than
    `limit`. Every item of the others comes at or after that key, so the chunk's item limit
    (`_cut`) cuts after them all, and so does the members' limit (the last member read is
    one of the others). A contact with an item at or after that key, or among the others
    (whose items are not drawn yet), is left out: its last time is not known yet, and the
    chunk's later touch would touch it again (a quarter of the contacts touched ahead on the
    bench's third day, whose members have 1.7 items each). Empty when no item is surely
    processed."""
    if not others:
        return {}
    first = min((m.next_action_at or "", m.campaign_id, m.contact_id) for m in others)
    if not first[0]:  # not a due member (the due query reads none): nothing is sure
        return {}
    bound = (parse_ms(first[0]), first[1], first[2])
    last: dict[int, str] = {}
    unsure = {m.contact_id for m in others}
    sure = 0
    for d in due:
        if (d.ms, d.campaign, d.contact) < bound:
            sure += 1
            at = last.get(d.contact)
            if at is None or d.at > at:  # stored times compare as text in time order
                last[d.contact] = d.at
        else:
            unsure.add(d.contact)
    if sure >= limit:
        return {}
    return {contact: at for contact, at in last.items() if contact not in unsure}


def prefetch(batch: Batch, plans: dict[int, Plan], due: list[Due]) -> None:
    """Read up front what applying `due` reads (the messages opens, clicks and replies point
    at, the tasks of TASK steps): in two queries instead of one an item, and none while the
    contacts' touches hold the connection (touches.py)."""
    conversations = batch.conversations
    task_steps = {
        cid: {i for i, spec in enumerate(plan.steps) if spec.type == "TASK"}
        for cid, plan in plans.items()
    }
    answered = set()
    tasks = []
    for d in due:
        kind, step = d.item.kind, d.item.step
        if kind == STEP:
            if step in task_steps[d.campaign]:
                tasks.append((d.contact, d.campaign, step))
        elif kind in (OPENED, CLICKED, REPLIED):
            conversation = conversations.get((d.contact, d.campaign))
            if conversation is not None:
                answered.add(conversation)
    batch.prefetch(answered, tasks)


def apply_item(batch: Batch, plan: Plan, member: Member, item: Item, ms: int, at: str) -> None:
    """The effects of one timeline item (`at`: its time as stored)."""
    kind, step = item.kind, item.step
    if kind == FINISHED:
        fx.finish(batch, plan, member, at)
        return
    spec = plan.steps[step]
    number = plan.numbers[step]
    if kind == STEP:
        if step >= member.step_index:
            member.step_index = step + 1
        stype = spec.type
        if stype in ev.SENT:
            name, company = member.first_name, member.company
            fx.send(
                batch,
                plan,
                member,
                at,
                stype,
                step,
                number,
                render(spec.content, name, company),
                render(spec.subject, name, company),
            )
        elif spec.type == "PROFILE_VISIT":
            fx.touch(batch, plan, member, at, step, "PROFILE_VISITED")
        elif spec.type == "POST_LIKE":
            fx.touch(batch, plan, member, at, step, "POST_LIKED")
        elif spec.type == "TASK":
            fx.create_task(batch, plan, member, ms, at, step)
    elif kind == ACCEPTED:
        fx.accept(batch, plan, member, at, step)
    elif kind in (OPENED, CLICKED):
        fx.open_or_click(batch, plan, member, at, step, number, kind == CLICKED)
    elif kind == REPLIED:
        fx.reply(batch, plan, member, at, step, spec.type, number, None, None)
