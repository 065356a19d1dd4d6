"""A campaign member's future as a pure function: the determinism of the whole simulation.

Every outcome (acceptance, reply, open, click) and its delay is drawn from a hash of
(campaign seed, contact id, step index, outcome kind), never from a shared random stream, so
the items of a member do not depend on which other members exist or on how a time span is
split into advances. Outcomes of a step happen before the next step runs (within the gap to
it, or within TAIL_MS after the last step), so engagement moves forward by construction.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec

from emulator.fixtures.models import OutcomeRates, SequenceStep
from emulator.platform.engagement import MESSAGE_STEPS

DAY_MS = 86_400_000
TAIL_MS = 3 * DAY_MS  # how long the last step's outcomes may take; then the sequence finishes

# Item kinds, in the order they are created for one step (ties at one time keep this order).
STEP, ACCEPTED, OPENED, CLICKED, REPLIED, FINISHED = range(6)


class Item(msgspec.Struct, order=True, frozen=True, gc=False):
    """One moment of a member's timeline; items sort by (time, creation order). Not tracked
    by the cyclic GC (ints only): the simulation keeps every member's timeline, and each
    collection would walk them all (a NamedTuple is tracked; a plain tuple of ints is not)."""

    ms: int  # since the epoch
    order: int  # of creation within the member: ties at one time keep it
    kind: int  # STEP, ACCEPTED, OPENED, CLICKED, REPLIED or FINISHED
    step: int  # the step's index (FINISHED: the number of steps)


def draw(seed: int, contact_id: int, step: int, kind: str) -> float:
    """A number in [0, 1) fixed by its four inputs."""
    return _draw(_member_hash(seed, contact_id), step, kind)


def _member_hash(seed: int, contact_id: int) -> Any:
    """The hash of "seed|contact|", made once per member: each draw copies it and adds its
    "step|kind" (the same digest as hashing the whole text, ~0.3 us less a draw)."""
    return _blake2b(f"{seed}|{contact_id}|".encode(), digest_size=8)


def _draw(member: Any, step: int, kind: str) -> float:
    """`draw` with the member's hash made by the caller."""
    suffix = _suffixes.get((step, kind))
    if suffix is None:
        suffix = f"{step}|{kind}".encode()
        if len(_suffixes) < 10_000:
            _suffixes[(step, kind)] = suffix
    h = member.copy()
    h.update(suffix)
    return int.from_bytes(h.digest(), "big") / 18_446_744_073_709_551_616


_blake2b = hashlib.blake2b
_suffixes: dict[tuple[int, str], bytes] = {}  # (step, kind) -> b"step|kind", capped


# Stored sequences and rates come from validated fixtures: decode them as the fixture models.
_steps = msgspec.json.Decoder(list[SequenceStep])
_rates = msgspec.json.Decoder(OutcomeRates)


@dataclass(frozen=True)
class Plan:
    """What the simulation needs from one campaign row."""

    id: int
    name: str
    status: str
    identity_id: int
    seed: int
    steps: tuple[SequenceStep, ...]
    rates: OutcomeRates
    # 1-based number of each message step among the message steps (0 for the others)
    numbers: tuple[int, ...]
    message_count: int
    fingerprint: int  # hash of what the timelines depend on: cheap to compare per member
    # whether a connection request comes before each step (the last entry: after them all)
    requested: tuple[bool, ...]

    @classmethod
    def from_row(
        cls, cid: int, name: str, status: str, identity: int, seed: int, sequence: str, rates: str
    ) -> Plan:
        steps = tuple(_steps.decode(sequence or "[]"))
        numbers, n = [], 0
        requested, before = [], False
        for s in steps:
            requested.append(before)
            before = before or s.type == "CONNECTION_REQUEST"
            if s.type in MESSAGE_STEPS:
                n += 1
                numbers.append(n)
            else:
                numbers.append(0)
        return cls(
            id=cid,
            name=name,
            status=status,
            identity_id=identity,
            seed=seed,
            steps=steps,
            rates=_rates.decode(rates or "{}"),
            numbers=tuple(numbers),
            message_count=n,
            fingerprint=hash((sequence, rates, seed)),
            requested=(*requested, before),
        )


class Drawn(msgspec.Struct, gc=False):
    """A member's timeline drawn as far as it was needed, and where drawing resumes.

    The items of step i (its STEP item, then its outcomes) all come before step i+1's: an
    outcome falls within the gap to the next step (delays are never negative), so the
    items drawn step by step are in time order, and those drawn so far are the start of the
    whole timeline. Drawing stops at the first item after the moment asked for: an advance
    of a day draws the steps of that day, not the weeks of sequence after it (the draws of a
    whole timeline cost about as much as applying its items). Not tracked by the cyclic GC
    (ints, bools and a tuple of untracked items)."""

    anchor_ms: int
    step: int  # the next step to run; while `pending`, the step whose outcomes are next
    t: int  # the time of the last step run (the anchor before the first)
    items: tuple[Item, ...] = ()
    # the stored times of `items` (`iso`), made as they are drawn: a chunk bisects them for
    # a member's nextActionAt and stores them (comparing text is cheaper than parsing it)
    ats: tuple[str, ...] = ()
    order: int = 0  # of the next item
    has_request: bool = False  # a connection request ran (before `step`)
    connected: bool = False  # and it was accepted
    pending: bool = False  # `step`'s STEP item is drawn, its outcomes are not yet
    done: bool = False  # every item is drawn (a reply, or FINISHED)

    def copy(self) -> Drawn:
        """A shallow copy: its tuples are shared, as nothing changes them in place (a third
        of the time of msgspec.structs.replace)."""
        return self.__copy__()  # type: ignore[attr-defined,no-any-return]


def start(plan: Plan, anchor_ms: int, first_step: int) -> Drawn:
    """A member's timeline from `first_step` on, nothing drawn yet."""
    has_request = plan.requested[min(first_step, len(plan.steps))]  # first_step >= 0
    return Drawn(anchor_ms, first_step, anchor_ms, has_request=has_request)


def shared_start(plan: Plan, anchor_ms: int, first_step: int) -> Drawn:
    """`start` with the items that need no draw drawn already: the steps up to the first
    whose outcomes are drawn from the member's hash (or the whole timeline, if none has
    any). Those are the same for every member of the campaign with this anchor and first
    step (the members scheduled together): a chunk draws them once and gives each member a
    copy (`Drawn.copy`) rather than drawing them again per member. It may hold items after
    the moment a chunk asks for (a visit, then a request two days later): drawing is pure,
    so items drawn early are the ones a later draw would make, and such a member needs no
    draw_through in that chunk (a third of the start's burst at 10,000 contacts)."""
    drawn = start(plan, anchor_ms, first_step)
    draw_through(plan, 0, drawn, _FOREVER, plain=True)
    return drawn


def draw_through(
    plan: Plan, contact_id: int, drawn: Drawn, until_ms: int, plain: bool = False
) -> tuple[Item, ...]:
    """Draw more of `drawn` until it holds an item after `until_ms` or the whole timeline;
    answers its items. Every item at or before `until_ms` is then among them. `plain`:
    stop before the first outcomes to draw (`contact_id` is not read: `shared_start`)."""
    items = drawn.items
    if drawn.done or (items and items[-1].ms > until_ms):
        return items
    steps, rates = plan.steps, plan.rates
    count = len(steps)
    i, t, order = drawn.step, drawn.t, drawn.order
    has_request, connected, pending = drawn.has_request, drawn.connected, drawn.pending
    last = items[-1].ms if items else None
    prefix = None
    more: list[Item] = []
    done = False
    while last is None or last <= until_ms:
        if not pending:  # run the next step that runs, or finish
            while i < count:
                t += steps[i].delaySeconds * 1000
                if steps[i].type == "NETWORK_MESSAGE" and has_request and not connected:
                    i += 1  # one cannot message a contact who did not accept the request
                    continue
                break
            if i >= count:
                end = last if last is not None else drawn.anchor_ms
                more.append(Item(end, order, FINISHED, count))
                done = True
                break
            more.append(Item(t, order, STEP, i))
            order += 1
            last = t
            kind = steps[i].type
            if kind == "CONNECTION_REQUEST":
                has_request = pending = True
            elif kind in MESSAGE_STEPS:
                pending = True
            else:
                i += 1  # no outcome to draw
            continue
        # the outcomes of step i, within the gap to the next step
        if plain:
            break
        step = steps[i]
        gap = steps[i + 1].delaySeconds * 1000 if i + 1 < count else TAIL_MS
        if prefix is None:
            prefix = _member_hash(plan.seed, contact_id)
        outcomes: list[Item] = []
        if step.type == "CONNECTION_REQUEST":
            if _draw(prefix, i, "accept") < rates.acceptance:
                connected = True
                outcomes.append(
                    Item(t + int(_draw(prefix, i, "accept.at") * gap), order, ACCEPTED, i)
                )
                order += 1
        else:
            if step.type == "EMAIL" and _draw(prefix, i, "open") < rates.open:
                opened = t + int(_draw(prefix, i, "open.at") * gap)
                outcomes.append(Item(opened, order, OPENED, i))
                order += 1
                if _draw(prefix, i, "click") < rates.click:
                    clicked = opened + int(_draw(prefix, i, "click.at") * (t + gap - opened))
                    outcomes.append(Item(clicked, order, CLICKED, i))
                    order += 1
            if _draw(prefix, i, "reply") < rates.reply:
                replied = Item(t + int(_draw(prefix, i, "reply.at") * gap), order, REPLIED, i)
                outcomes.append(replied)
                outcomes.sort()
                more.extend(o for o in outcomes if o <= replied)  # a reply ends the timeline
                done = True
                break
        more.extend(outcomes)  # in time order: an acceptance, or an open then its click
        if outcomes:
            last = outcomes[-1].ms
        i += 1
        pending = False
    drawn.step, drawn.t, drawn.order = i, t, order
    drawn.has_request, drawn.connected, drawn.pending, drawn.done = (
        has_request,
        connected,
        pending,
        done,
    )
    items = drawn.items = items + tuple(more)
    drawn.ats += tuple([iso(item.ms) for item in more])
    return items


def timeline(plan: Plan, contact_id: int, anchor_ms: int, first_step: int) -> list[Item]:
    """Every item of one member from `first_step` on, in time order; a reply ends it."""
    drawn = start(plan, anchor_ms, first_step)
    return list(draw_through(plan, contact_id, drawn, _FOREVER))


_FOREVER = 2**62  # ms: past every timeline's end

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_days: dict[int, str] = {}


def to_ms(moment: datetime) -> int:
    return (moment - _EPOCH) // timedelta(milliseconds=1)


def from_ms(ms: int) -> datetime:
    return _EPOCH + timedelta(milliseconds=ms)


# The pieces of a timestamp after its date, by position (2,500 short strings): joining them
# is ~3x faster than formatting hours, minutes, seconds and milliseconds on every call.
_MINUTES = tuple(f"{h:02d}:{m:02d}:" for h in range(24) for m in range(60))
_SECONDS = tuple(f"{s:02d}." for s in range(60))
_MILLIS = tuple(f"{m:03d}Z" for m in range(1000))


ISOS_KEPT = 20_000  # stored forms `iso` keeps (~3 MB); then it starts again
_isos: dict[int, str] = {}


def iso(ms: int) -> str:
    """The stored timestamp form of `ms`, like wire.now_iso but without a datetime per call.
    Kept by `ms`: the members of a campaign scheduled together share their steps' times (a
    one-day advance at 10,000 contacts formats ~2,000 item times, ~330 of them distinct)."""
    text = _isos.get(ms)
    if text is not None:
        return text
    day, rest = divmod(ms, DAY_MS)
    prefix = _days.get(day)
    if prefix is None:
        prefix = _days[day] = (_EPOCH + timedelta(days=day)).strftime("%Y-%m-%dT")
    minute, rest = divmod(rest, 60_000)
    second, milli = divmod(rest, 1000)
    text = prefix + _MINUTES[minute] + _SECONDS[second] + _MILLIS[milli]
    if len(_isos) >= ISOS_KEPT:
        _isos.clear()
    _isos[ms] = text
    return text


_day_ms: dict[str, int] = {}


def parse_ms(text: str) -> int:
    """Milliseconds of a stored timestamp ("YYYY-MM-DDTHH:MM:SS.mmmZ"), by hand: it is hot."""
    day = _day_ms.get(text[:10])
    if day is None:
        day = _day_ms[text[:10]] = to_ms(datetime.fromisoformat(text[:10] + "T00:00:00+00:00"))
    return (
        day
        + int(text[11:13]) * 3_600_000
        + int(text[14:16]) * 60_000
        + int(text[17:19]) * 1000
        + int(text[20:23])
    )
