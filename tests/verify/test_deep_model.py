"""The invariants of `verify --deep` over hand-written answers (expected values from the spec)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from emulator.verify.checks import Answer
from emulator.verify.deep_model import Model, Violation


def answer(body: Any, status: int = 200) -> Answer:
    return Answer(status, json.dumps(body).encode())


def broken(rule: str, judge: Any, *args: Any) -> str:
    with pytest.raises(Violation) as caught:
        judge(*args)
    assert caught.value.rule == rule, caught.value
    return caught.value.message


def created(model: Model, *pairs: tuple[str, str]) -> None:
    sent = [{"externalId": ext, "domain": f"{ext}.invalid"} for ext, _ in pairs]
    results = [{"externalId": ext, "crmId": crm} for ext, crm in pairs]
    model.created("companies", sent, answer({"results": results}, 201))


def test_crm_ids_are_distinct_strings_across_batches() -> None:
    model = Model()
    created(model, ("e1", "c1"), ("e2", "c2"))
    assert "already given to e1" in broken("distinct-crm-ids", created, model, ("e3", "c1"))
    broken("distinct-crm-ids", created, Model(), ("e1", "c1"), ("e2", "c1"))
    sent = [{"externalId": "e9"}]
    number = answer({"results": [{"externalId": "e9", "crmId": 9}]})
    broken("distinct-crm-ids", Model().created, "companies", sent, number)
    broken("distinct-crm-ids", Model().created, "companies", sent, answer({"results": []}))
    broken("answers", Model().created, "companies", sent, answer({"error": "x"}, 500))


def test_update_needs_one_result_per_item_and_only_unknown_ids_failing() -> None:
    model = Model()
    created(model, ("e1", "c1"))
    sent = [{"crmId": "nope", "f": "1"}, {"crmId": "c1", "f": "1"}]
    good = [
        {"crmId": "nope", "success": False, "error": "not found"},
        {"crmId": "c1", "success": True},
    ]
    model.updated("companies", sent, answer({"results": good}), {"nope"})
    assert model.records["companies"][0].written == {"f": "1"}
    all_failed = [good[0], {"crmId": "c1", "success": False, "error": "batch"}]
    broken(
        "update-results",
        model.updated,
        "companies",
        sent,
        answer({"results": all_failed}),
        {"nope"},
    )
    silent = [{"crmId": "nope", "success": False}, good[1]]  # no `error`
    broken(
        "update-results", model.updated, "companies", sent, answer({"results": silent}), {"nope"}
    )
    broken(
        "update-results", model.updated, "companies", sent, answer({"results": good[1:]}), {"nope"}
    )


def sync(model: Model, props: dict[str, Any] | None) -> None:
    result: dict[str, Any] = {"externalId": "e1", "crmId": "c1"}
    if props is not None:
        result["properties"] = props
    model.synced("companies", model.records["companies"], [], answer({"results": [result]}))


def test_sync_matches_created_records_and_omits_others() -> None:
    model = Model()
    created(model, ("e1", "c1"))
    sync(model, None)
    broken(
        "sync-matches",
        model.synced,
        "companies",
        model.records["companies"],
        [],
        answer({"results": []}),
    )
    failed = {"results": [], "errors": [{"externalId": "e1", "error": "timeout"}]}
    model.synced("companies", model.records["companies"], [], answer(failed))  # rule 1
    other = answer({"results": [{"externalId": "e1", "crmId": "c2"}]})
    broken("sync-matches", model.synced, "companies", model.records["companies"], [], other)
    ghost = answer(
        {"results": [{"externalId": "e1", "crmId": "c1"}, {"externalId": "x", "crmId": "c9"}]}
    )
    broken("sync-matches", model.synced, "companies", model.records["companies"], ["x"], ghost)


def test_fields_shown_once_stay_and_written_fields_show_when_the_crm_echoes_them() -> None:
    model = Model()
    created(model, ("e1", "c1"))
    sync(model, {"name": "A", "domain": "e1.invalid", "phone": None})
    broken("fields-kept", sync, model, {"name": "A"})  # domain was shown, now gone
    model = Model()
    created(model, ("e1", "c1"))
    update = [{"crmId": "c1", "deepA": "1", "deepB": "2"}]
    model.updated(
        "companies", update, answer({"results": [{"crmId": "c1", "success": True}]}), set()
    )
    sync(model, {"name": "A"})  # a CRM that shows no PUT field: nothing to hold it to
    sync(model, {"name": "A", "deepA": "1", "deepB": "2"})
    assert "deepB" in broken("fields-kept", sync, model, {"name": "A", "deepA": "1"})
    assert "last written" in broken(
        "fields-kept", sync, model, {"name": "A", "deepA": "1", "deepB": "old"}
    )


def tasks(model: Model, *ids: str) -> None:
    for task_id in ids:
        model.task_created(answer({"id": task_id, "completed": False, "completedAt": None}, 201), 1)


def test_a_task_reads_the_same_through_every_endpoint() -> None:
    model = Model()
    tasks(model, "t1", "t2")
    at = "2026-01-05T10:00:00.000Z"
    done = {"id": "t1", "completed": True, "completedAt": at}
    model.task_patched(answer(done), "t1", 2)
    model.task_got(answer(done), "t1")
    stale = [{"id": "t1", "completed": False, "completedAt": None}]
    assert "completed at step 2" in broken("task-state", model.tasks_got, answer(stale), ["t1"])
    moved = [{**done, "completedAt": "2026-01-05T10:00:09.000Z"}]
    broken("task-state", model.tasks_got, answer(moved), ["t1"])
    open_t2 = {"id": "t2", "completed": False, "completedAt": None}
    model.tasks_got(answer([done, open_t2]), ["t1", "t2", "unknown"])
    broken("task-state", model.tasks_got, answer([done]), ["t1", "t2"])  # t2 left out
    broken("task-state", model.task_created, answer({"id": "t3", "completed": True}), 1)


def test_unknown_task_ids() -> None:
    model = Model()
    tasks(model, "t1")
    model.task_got(Answer(404), "nope")
    model.task_got(Answer(400), "nope")
    broken("unknown-tasks", model.task_got, Answer(500), "nope")
    model.task_patched(Answer(404), "nope", 1)
    broken("unknown-tasks", model.task_patched, Answer(400), "nope", 1)
    ghost = [{"id": "nope", "completed": True, "completedAt": "2026-01-05T10:00:00Z"}]
    broken("unknown-tasks", model.tasks_patched, answer(ghost), ["nope"], 1)
    model.tasks_patched(answer([]), ["nope"], 1)
