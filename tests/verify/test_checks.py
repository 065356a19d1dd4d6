"""The pure verdicts: edge answers a real CRM gives, and the create rule as a property."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from emulator.verify import checks as v
from emulator.verify import record_checks as rc


def answer(body: Any, status: int = 200) -> v.Answer:
    return v.Answer(status, json.dumps(body).encode())


def test_no_answer_and_non_json_bodies_fail_with_what_was_seen() -> None:
    gone = v.health(v.Answer(0, error="ConnectError: refused"))
    assert gone.outcome == "fail" and "no answer (ConnectError: refused)" in gone.message
    html = v.health(v.Answer(200, b"<html>ok</html>"))
    assert html.outcome == "fail" and "not JSON" in html.message
    assert v.health(answer({"status": 1})).outcome == "fail"
    assert v.health(answer({"status": "ok"}, 204)).outcome == "pass"


def test_users_answers() -> None:
    assert v.users(answer([{"id": "u1"}])).outcome == "pass"
    assert v.users(answer({"data": [{"id": "u1", "name": "A"}]})).outcome == "pass"
    assert v.users(v.Answer(501)).outcome == "pass"
    assert v.users(answer({"total": 2})).outcome == "fail"
    assert v.users(answer([{"name": "no id"}])).outcome == "fail"
    assert v.users(answer({"error": "x"}, 403)).outcome == "fail"


def test_auth_answers() -> None:
    assert v.auth("POST /tasks", v.Answer(401), None).outcome == "pass"
    assert v.auth("POST /tasks", v.Answer(403), None).outcome == "fail"
    assert v.auth("POST /tasks", v.Answer(200), None).outcome == "fail"
    assert v.auth("GET /health", v.Answer(200), None).outcome == "warn"
    assert v.auth("GET /health", v.Answer(500), None).outcome == "fail"
    assert v.auth("GET /users", v.Answer(404), 404).outcome == "pass"
    assert v.auth("GET /users", v.Answer(404), None).outcome == "fail"


def test_keeps_fields_verdicts() -> None:
    after = answer(
        {"results": [{"externalId": "e", "crmId": "c", "properties": {"a": 1, "k2": "x"}}]}
    )
    bare = answer({"results": [{"externalId": "e", "crmId": "c"}]})
    assert rc.keeps_fields("companies", None, bare, "e", "k1", "k2").outcome == "skip"
    assert rc.keeps_fields("companies", {"a": 1}, bare, "e", "k1", "k2").outcome == "fail"
    lost = rc.keeps_fields("companies", {"a": 1, "b": 2}, after, "e", "k1", "k2")
    assert lost.outcome == "fail" and "b" in lost.message and "k1" in lost.message
    assert (
        rc.keeps_fields(
            "companies",
            {"a": 1, "b": None},
            answer({"results": [{"externalId": "e", "crmId": "c", "properties": {"a": 2}}]}),
            "e",
            "k1",
            "k2",
        ).outcome
        == "pass"
    )
    gone = answer({"results": []})
    assert rc.keeps_fields("companies", {"a": 1}, gone, "e", "k1", "k2").outcome == "fail"


def test_sync_errors_shape() -> None:
    good = answer({"results": [], "errors": [{"externalId": "e1", "error": "timeout"}]})
    assert rc.sync_errors("contacts", [(good, ["e1"])]).outcome == "pass"
    bad = answer({"results": [], "errors": ["e1 failed"]})
    assert rc.sync_errors("contacts", [(bad, ["e1"])]).outcome == "fail"
    unasked = answer({"results": [], "errors": [{"externalId": "zz", "error": "x"}]})
    assert rc.sync_errors("contacts", [(unasked, ["e1"])]).outcome == "fail"
    both = answer(
        {
            "results": [{"externalId": "e1", "crmId": "c"}],
            "errors": [{"externalId": "e1", "error": "x"}],
        }
    )
    assert rc.sync_errors("contacts", [(both, ["e1"])]).outcome == "fail"


def test_unknown_task_id_answers() -> None:
    assert v.task_unknown(v.Answer(404)).outcome == "pass"
    assert v.task_unknown(v.Answer(400)).outcome == "warn"
    assert v.task_unknown(answer({"id": "x"})).outcome == "fail"


SENT = ["e1", "e2", "e3"]
result = st.fixed_dictionaries(
    {
        "externalId": st.sampled_from([*SENT, "other"]),
        "crmId": st.one_of(st.sampled_from(["c1", "c2", "c3"]), st.integers(), st.just("")),
    }
)


@given(results=st.lists(result, max_size=5), status=st.sampled_from([200, 201]))
def test_create_passes_exactly_when_each_item_has_its_own_string_crm_id(
    results: list[dict[str, Any]], status: int
) -> None:
    learned = v.Learned()
    verdict = rc.create("contacts", answer({"results": results}, status), SENT, learned)
    ids = [r["crmId"] for r in results]
    kept = (
        sorted(r["externalId"] for r in results) == SENT
        and all(isinstance(i, str) and i for i in ids)
        and len(set(ids)) == len(ids)
    )
    assert (verdict.outcome == "pass") == kept, (results, verdict)
    if kept:
        assert learned.ids == {r["externalId"]: r["crmId"] for r in results}


def test_invalid_bodies_need_400() -> None:
    assert v.invalid_body([("no `ids`", v.Answer(400))]).outcome == "pass"
    warned = v.invalid_body([("no `ids`", v.Answer(400)), ("`ids` a string", v.Answer(422))])
    assert warned.outcome == "warn" and "`ids` a string answered 422" in warned.message
    for status in (200, 201, 204, 500, 503, 0):
        failed = v.invalid_body([("no `ids`", v.Answer(status)), ("x", v.Answer(422))])
        assert failed.outcome == "fail" and "no `ids`" in failed.message


def test_unknown_task_patch_and_unknown_activity_type() -> None:
    assert v.patch_unknown(v.Answer(404)).outcome == "pass"
    assert v.patch_unknown(v.Answer(400)).outcome == "fail"
    assert v.patch_unknown(answer({"id": "x"})).outcome == "fail"
    assert v.unknown_activity_type(v.Answer(400), "X").outcome == "pass"
    assert v.unknown_activity_type(answer({"id": "a"}, 201), "X").outcome == "warn"
    assert v.unknown_activity_type(v.Answer(422), "X").outcome == "warn"
    assert v.unknown_activity_type(v.Answer(500), "X").outcome == "fail"


def test_completing_twice_keeps_the_first_completed_at() -> None:
    def done(at: str | None, completed: bool = True) -> v.Answer:
        return answer({"id": "t1", "completed": completed, "completedAt": at})

    first = done("2026-01-05T10:00:00.000Z")
    assert v.completed_again(first, first, "t1").outcome == "pass"
    moved = v.completed_again(first, done("2026-01-05T10:00:01.000Z"), "t1")
    assert moved.outcome == "warn" and "10:00:01" in moved.message
    assert v.completed_again(done(None, False), first, "t1").outcome == "skip"
    assert v.completed_again(v.Answer(500), first, "t1").outcome == "fail"
