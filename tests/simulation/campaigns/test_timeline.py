"""A member's timeline drawn as chunks reach it (timeline.draw_through) is the whole timeline
drawn at once, whatever moments it is drawn to: the items drawn are always its start, they
hold every item up to the moment asked for and the first one after it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, get_args

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from emulator.fixtures.models import StepType
from emulator.platform.engagement import MESSAGE_STEPS
from emulator.simulation.campaigns import timeline as timeline_module
from emulator.simulation.campaigns.timeline import (
    ACCEPTED,
    CLICKED,
    DAY_MS,
    FINISHED,
    OPENED,
    REPLIED,
    STEP,
    TAIL_MS,
    Item,
    Plan,
    _draw,
    _member_hash,
    draw_through,
    iso,
    shared_start,
    start,
    timeline,
)

ANCHOR = 1_700_000_000_000
STEP_TYPES = list(get_args(StepType))


def whole(plan: Plan, contact_id: int, anchor_ms: int, first_step: int) -> list[Item]:
    """The timeline as the module's docstring states it, every step at once: each step at
    its delay after the previous one; its outcomes (acceptance, open, click, reply) drawn
    from the member's hash within the gap to the next step (TAIL_MS after the last one); a
    network message only to a contact who accepted an earlier connection request; a reply
    ends the timeline, else FINISHED at its last item."""
    steps, rates = plan.steps, plan.rates
    member = _member_hash(plan.seed, contact_id)
    items: list[Item] = []
    order, t = 0, anchor_ms
    has_request = any(s.type == "CONNECTION_REQUEST" for s in steps[:first_step])
    connected = False
    replied: tuple[int, int] | None = None
    for i in range(first_step, len(steps)):
        step = steps[i]
        t += step.delaySeconds * 1000
        gap = steps[i + 1].delaySeconds * 1000 if i + 1 < len(steps) else TAIL_MS
        if step.type == "NETWORK_MESSAGE" and has_request and not connected:
            continue
        items.append(Item(t, order, STEP, i))
        order += 1
        if step.type == "CONNECTION_REQUEST":
            has_request = True
            if _draw(member, i, "accept") < rates.acceptance:
                connected = True
                items.append(Item(t + int(_draw(member, i, "accept.at") * gap), order, ACCEPTED, i))
                order += 1
            continue
        if step.type not in MESSAGE_STEPS:
            continue
        if step.type == "EMAIL" and _draw(member, i, "open") < rates.open:
            opened = t + int(_draw(member, i, "open.at") * gap)
            items.append(Item(opened, order, OPENED, i))
            order += 1
            if _draw(member, i, "click") < rates.click:
                clicked = opened + int(_draw(member, i, "click.at") * (t + gap - opened))
                items.append(Item(clicked, order, CLICKED, i))
                order += 1
        if _draw(member, i, "reply") < rates.reply:
            at = t + int(_draw(member, i, "reply.at") * gap)
            items.append(Item(at, order, REPLIED, i))
            replied = (at, order)
            break
    items.sort()
    if replied is not None:
        return [item for item in items if (item.ms, item.order) <= replied]
    items.append(Item(items[-1].ms if items else anchor_ms, order, FINISHED, len(steps)))
    return items


def plan_of(steps: list[dict[str, Any]], rates: dict[str, float], seed: int) -> Plan:
    return Plan.from_row(
        1,
        "Plan",
        "ACTIVE",
        1,
        seed,
        msgspec.json.encode(steps).decode(),
        msgspec.json.encode(rates).decode(),
    )


delays = st.one_of(
    st.just(0), st.integers(0, 120), st.integers(0, 10 * 86400), st.sampled_from([86400, 3 * 86400])
)
plans = st.builds(
    plan_of,
    st.lists(
        st.fixed_dictionaries({"type": st.sampled_from(STEP_TYPES), "delaySeconds": delays}),
        max_size=8,
    ),
    st.fixed_dictionaries(
        {k: st.sampled_from([0.0, 0.3, 0.6, 1.0]) for k in ("acceptance", "reply", "open", "click")}
    ),
    st.integers(0, 2**31),
)


@settings(max_examples=300, deadline=None)
@given(
    plan=plans,
    contact=st.integers(1, 10**6),
    first_step=st.integers(0, 9),
    moments=st.lists(st.integers(-DAY_MS, 40 * DAY_MS), max_size=8),
)
def test_drawing_as_far_as_needed_gives_the_whole_timeline(
    plan: Plan, contact: int, first_step: int, moments: list[int]
) -> None:
    expected = whole(plan, contact, ANCHOR, first_step)
    assert timeline(plan, contact, ANCHOR, first_step) == expected
    drawn = start(plan, ANCHOR, first_step)
    until = ANCHOR
    for moment in sorted(moments):  # chunks reach later and later moments
        until = ANCHOR + moment
        items = list(draw_through(plan, contact, drawn, until))
        assert items == expected[: len(items)]  # the start of the timeline
        assert [i for i in expected if i.ms <= until] == [i for i in items if i.ms <= until]
        assert drawn.done or items[-1].ms > until  # and the first item after `until`
        assert drawn.done == (len(items) == len(expected))
        assert drawn.ats == tuple(stored(i.ms) for i in items)  # drawn with their items
    assert list(draw_through(plan, contact, drawn, until + 10**12)) == expected
    assert drawn.done


@settings(max_examples=300, deadline=None)
@given(
    plan=plans,
    contacts=st.lists(st.integers(1, 10**6), min_size=1, max_size=4, unique=True),
    first_step=st.integers(0, 9),
    moments=st.lists(st.integers(-DAY_MS, 40 * DAY_MS), max_size=6),
)
def test_members_drawn_on_from_one_shared_start_each_get_their_whole_timeline(
    plan: Plan, contacts: list[int], first_step: int, moments: list[int]
) -> None:
    shared = shared_start(plan, ANCHOR, first_step)
    before = msgspec.structs.asdict(shared)
    # what every member's timeline starts with: its steps until the first one with outcomes
    # to draw (a request or a message), which the shared start stops at; or the whole
    # timeline when no step has any
    assert all(item.kind in (STEP, FINISHED) for item in shared.items)
    if shared.done:
        assert shared.items[-1].kind == FINISHED
    else:
        assert shared.items and plan.steps[shared.items[-1].step].type in MESSAGE_STEPS
    assert shared.ats == tuple(stored(item.ms) for item in shared.items)
    expected = {c: whole(plan, c, ANCHOR, first_step) for c in contacts}
    drawn = {c: shared.copy() for c in contacts}
    for c in contacts:
        assert list(shared.items) == expected[c][: len(shared.items)]
    for moment in sorted(moments):  # the members drawn on in turn, chunk after chunk
        until = ANCHOR + moment
        for c in contacts:
            items = list(draw_through(plan, c, drawn[c], until))
            assert items == expected[c][: len(items)]
            assert [i for i in expected[c] if i.ms <= until] == [i for i in items if i.ms <= until]
            assert drawn[c].done or items[-1].ms > until
            assert drawn[c].ats == tuple(stored(i.ms) for i in items)
    for c in contacts:
        assert list(draw_through(plan, c, drawn[c], ANCHOR + 10**12)) == expected[c]
    assert msgspec.structs.asdict(shared) == before  # the copies never change it


def stored(ms: int) -> str:
    """The stored form of a moment, as the spec writes timestamps: UTC, milliseconds, Z."""
    return (
        datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"
    )


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 4_102_444_800_000), min_size=1, max_size=20))
def test_iso_is_the_stored_form_whether_kept_or_made(moments: list[int]) -> None:
    for ms in moments * 2:  # the second time from what `iso` keeps
        assert iso(ms) == stored(ms)


def test_iso_starts_again_when_it_keeps_too_many(monkeypatch: Any) -> None:
    monkeypatch.setattr(timeline_module, "ISOS_KEPT", 3)
    monkeypatch.setattr(timeline_module, "_isos", {})
    moments = [ANCHOR + k * 1001 for k in range(10)]
    assert [iso(ms) for ms in moments] == [stored(ms) for ms in moments]
    assert len(timeline_module._isos) <= 3
    assert [iso(ms) for ms in moments] == [stored(ms) for ms in moments]
