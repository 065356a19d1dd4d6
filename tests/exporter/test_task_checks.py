"""Unit tests and Hypothesis properties of the activity and task answer checks."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from emulator.exporter import task_checks as tc

FAST = settings(max_examples=80, deadline=None)

crm_ids = st.lists(st.integers(1, 500).map(lambda n: f"t{n}"), min_size=2, max_size=10, unique=True)


def test_created_id_is_a_string_or_a_tolerated_number() -> None:
    assert tc.plan_created("POST /tasks", {"id": "t1"}) == tc.CreatedPlan("t1")
    number = tc.plan_created("POST /activities", {"id": 7})
    assert number.crm_id == "7" and number.failed is None
    assert [f.severity for f in number.findings] == ["warning"]
    for body in ({}, {"id": ""}, {"id": True}, [], None):
        missing = tc.plan_created("POST /tasks", body)
        assert missing.crm_id is None and missing.failed == "POST /tasks answer carries no id"
        assert [f.severity for f in missing.findings] == ["violation"]


@FAST
@given(crm_ids, st.data())
def test_batch_completion_fails_exactly_the_tasks_not_answered_completed(
    asked: list[str], data: st.DataObject
) -> None:
    answered = data.draw(st.lists(st.sampled_from([*asked, "foreign"]), unique=True))
    completed = {a: data.draw(st.booleans()) for a in answered}
    tasks = [{"id": a, "completed": c} for a, c in completed.items()]
    body: Any = data.draw(st.sampled_from([tasks, {"tasks": tasks}]))
    plan = tc.plan_completion("PATCH /tasks/batch", asked, body)
    assert set(plan.failed) == {a for a in asked if not completed.get(a)}
    assert all(why == f"CRM did not complete task {a}" for a, why in plan.failed.items())
    assert [f.severity for f in plan.findings] == ([] if isinstance(body, list) else ["warning"])


def test_batch_completion_not_an_array_fails_every_task() -> None:
    plan = tc.plan_completion("PATCH /tasks/batch", ["t1", "t2"], {"ok": True})
    assert plan.failed == dict.fromkeys(["t1", "t2"], "PATCH /tasks/batch answer is not an array")
    assert [f.severity for f in plan.findings] == ["violation"]


def test_single_completion_counts_done_and_flags_a_wrong_echo() -> None:
    assert (
        tc.plan_completion(tc.COMPLETE_ONE, ["t1"], {"id": "t1", "completed": True})
        == tc.CompletionPlan()
    )
    wrong = tc.plan_completion(tc.COMPLETE_ONE, ["t1"], {"id": "t1"})
    assert wrong.failed == {}
    assert [f.message for f in wrong.findings] == ["answer is not the task with completed true"]


def test_read_back_answers() -> None:
    assert tc.answered_tasks(tc.READ_ONE, 404, None) == tc.TaskAnswer([])
    assert tc.task_gone(tc.READ_ONE, 404) and not tc.task_gone("POST /tasks/batch", 404)
    assert tc.answered_tasks(tc.READ_ONE, 200, {"id": "t1"}).tasks == [{"id": "t1"}]
    wrapped = tc.answered_tasks("POST /tasks/batch", 200, {"results": [{"id": "t1"}]})
    assert wrapped.tasks == [{"id": "t1"}] and [f.severity for f in wrapped.findings] == ["warning"]
    broken = tc.answered_tasks("POST /tasks/batch", 200, "nope")
    assert (
        broken.tasks is None
        and broken.failed == "POST /tasks/batch answer is not an array of tasks"
    )


@FAST
@given(crm_ids, st.data())
def test_read_back_sorts_every_asked_task_once(asked: list[str], data: st.DataObject) -> None:
    shown = data.draw(st.lists(st.sampled_from(asked), unique=True))
    state = {a: data.draw(st.booleans()) for a in shown}
    tasks = [
        {"id": a, "completed": c, "completedAt": "2026-01-01T00:00:00Z"} for a, c in state.items()
    ]
    plan = tc.plan_read_back(asked, tasks, "POST /tasks/batch")
    assert set(plan.completed) == {a for a, c in state.items() if c}
    assert plan.open == {a for a, c in state.items() if not c}
    assert plan.unknown == [a for a in asked if a not in state]
    assert plan.findings == []
