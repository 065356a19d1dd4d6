"""Hypothesis properties of the pure export decisions (decisions.md §3)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emulator.exporter import engagement as eng
from emulator.exporter import plan as p
from emulator.exporter import properties as rule
from emulator.exporter import shapes
from tests.exporter.scripted import SPEC_COMMON, SPEC_CORE_V1

FAST = settings(max_examples=80, deadline=None)

ids = st.lists(st.integers(1, 10_000).map(str), min_size=1, max_size=12, unique=True)
values = st.one_of(
    st.none(), st.text(max_size=5), st.integers(-5, 5), st.lists(st.text(max_size=3), max_size=2)
)
# What the CRM does with one asked record in its sync answer.
fates = st.sampled_from(
    ["match", "match_props", "error", "omit", "dup_same", "dup_other", "both", "no_crm_id"]
)
prop_names = st.sampled_from(
    [
        "domain",
        "phone",
        "email",
        "industry",
        "mobilePhone",
        "tags",
        "leadScore",
        "accountTier",
        "customField_a",
        "customField_b",
        "zeta",
        "externalId",
    ]
)
properties = st.dictionaries(prop_names, values, max_size=6)


@st.composite
def sync_answers(draw: st.DrawFn) -> tuple[list[str], dict[str, Any], dict[str, str]]:
    asked = draw(ids)
    results: list[Any] = []
    errors: list[Any] = []
    fate_of: dict[str, str] = {}
    for ext in asked:
        fate = fate_of[ext] = draw(fates)
        item: dict[str, Any] = {"externalId": ext, "crmId": f"c{ext}"}
        if fate == "match_props":
            item["properties"] = draw(properties)
        if fate in ("match", "match_props"):
            results.append(item)
        elif fate == "error":
            errors.append({"externalId": ext, "error": "boom"})
        elif fate == "dup_same":
            results += [item, dict(item)]
        elif fate == "dup_other":
            results += [item, {**item, "crmId": f"d{ext}"}]
        elif fate == "both":
            results.append(item)
            errors.append({"externalId": ext, "error": "boom"})
        elif fate == "no_crm_id":
            results.append({"externalId": ext})
    foreign = draw(st.lists(st.integers(20_000, 30_000).map(str), max_size=2))
    results += [{"externalId": f, "crmId": "x"} for f in foreign]
    errors += [
        {"externalId": f, "error": "e"} for f in draw(st.lists(st.just("99999"), max_size=1))
    ]
    results = draw(st.permutations(results))
    body: dict[str, Any] = {"results": results}
    if errors or draw(st.booleans()):
        body["errors"] = errors
    return asked, body, fate_of


@FAST
@given(sync_answers())
def test_every_synced_record_ends_in_exactly_one_outcome(case: Any) -> None:
    asked, body, fate_of = case
    plan = p.plan_sync("contacts", asked, body)
    for ext in asked:
        outcomes = [ext in plan.matched, ext in plan.failed, ext in plan.new]
        assert sum(outcomes) == 1, (ext, fate_of[ext])
        fate = fate_of[ext]
        if fate in ("error", "both", "dup_other", "no_crm_id"):
            assert ext in plan.failed  # never POSTed nor PUT this run
        elif fate == "omit":
            assert ext in plan.new
        else:
            assert plan.matched[ext].crm_id == f"c{ext}"
    foreign = [r for r in body["results"] if r["externalId"] not in asked]
    violations = [f for f in plan.findings if f.severity == "violation"]
    assert len(violations) >= len(foreign)
    if any(f in ("dup_other", "both", "no_crm_id") for f in fate_of.values()):
        assert violations


@FAST
@given(ids, st.one_of(st.none(), st.text(max_size=3), st.just({"result": []}), st.just([])))
def test_wrong_sync_shape_fails_the_whole_batch(asked: list[str], body: Any) -> None:
    plan = p.plan_sync("companies", asked, body)
    assert set(plan.failed) == set(asked) and not plan.matched and not plan.new
    assert plan.findings[0].severity == "violation"


def test_empty_results_make_every_record_new() -> None:
    plan = p.plan_sync("companies", ["1", "2"], {"results": []})
    assert plan.new == ["1", "2"] and not plan.findings


@st.composite
def create_answers(draw: st.DrawFn) -> tuple[list[str], int, dict[str, Any]]:
    asked = draw(ids)
    results: list[Any] = []
    for ext in asked:
        fate = draw(st.sampled_from(["ok", "ok", "missing", "no_crm", "numeric"]))
        if fate == "ok":
            results.append({"externalId": ext, "crmId": f"c{ext}", "extra": 1})
        elif fate == "no_crm":
            results.append({"externalId": ext})
        elif fate == "numeric":
            results.append({"externalId": ext, "crmId": 7})
    results += [{"externalId": "foreign", "crmId": "z"}] * draw(st.integers(0, 1))
    return asked, draw(st.sampled_from([200, 201])), {"results": draw(st.permutations(results))}


@FAST
@given(create_answers())
def test_create_answer_maps_each_record_once(case: Any) -> None:
    asked, status, body = case
    plan = p.plan_create("companies", asked, status, body)
    for ext in asked:
        assert (ext in plan.created) != (ext in plan.failed)
        if ext in plan.created:
            assert plan.created[ext] == f"c{ext}"
    assert (status == 200) == any(
        f.severity == "warning" and "201" in f.message for f in plan.findings
    )
    if plan.failed:
        assert any(f.severity == "violation" for f in plan.findings)


@FAST
@given(ids, st.data())
def test_update_answer_maps_each_record_once(asked_ids: list[str], data: st.DataObject) -> None:
    asked = [(ext, f"c{ext}") for ext in asked_ids]
    results: list[Any] = []
    expected: dict[str, str] = {}
    for ext, crm in asked:
        fate = data.draw(st.sampled_from(["ok", "fail", "missing", "bad"]))
        expected[ext] = fate
        if fate == "ok":
            results.append({"crmId": crm, "success": True})
        elif fate == "fail":
            results.append({"crmId": crm, "success": False, "error": "nope"})
        elif fate == "bad":
            results.append({"crmId": crm})
    results.append({"crmId": "foreign", "success": True})
    plan = p.plan_update("contacts", asked, {"results": results})
    for ext, fate in expected.items():
        assert (ext in plan.updated) != (ext in plan.failed)
        assert (ext in plan.updated) == (fate == "ok")
        if fate == "fail":
            assert plan.failed[ext] == "CRM update error: nope"
    assert any("foreign" in (f.about or "") for f in plan.findings)


columns_of = {
    "companies": st.fixed_dictionaries(
        {
            "domain": st.one_of(st.none(), st.just("a.com")),
            "phoneNumber": st.one_of(st.none(), st.just("123")),
            "industry": st.one_of(st.none(), st.just("Software")),
        }
    ),
    "contacts": st.fixed_dictionaries(
        {
            "professionalEmail": st.one_of(st.none(), st.just("a@b.c")),
            "phones": st.one_of(st.none(), st.just("555")),
            "mobilePhone": st.one_of(st.none(), st.just("777")),
        }
    ),
}
customs = st.dictionaries(
    st.sampled_from(["tags", "leadScore", "accountTier", "customField_a", "zeta", "fixtureOnly"]),
    st.one_of(st.none(), st.integers(0, 3)),
    max_size=4,
)


@FAST
@given(st.sampled_from(["companies", "contacts"]), st.data())
def test_clearing_follows_the_rule_to_the_field(kind: p.Kind, data: st.DataObject) -> None:
    columns = data.draw(columns_of[kind])
    custom = data.draw(customs)
    synced_before = data.draw(st.sets(st.sampled_from(["customField_a", "zeta"])))
    props = data.draw(properties)
    change = rule.apply_properties(kind, columns, custom, synced_before, props)
    after_cols = {**columns, **change.columns}
    core = SPEC_CORE_V1[kind]  # the spec's tables (scripted.py), not the exporter's lists
    real = {k: v for k, v in props.items() if k not in rule.ECHO_KEYS}
    syncable = SPEC_COMMON[kind] | synced_before
    for name in syncable | real.keys():
        value = real.get(name)
        now = after_cols[core[name]] if name in core else change.custom.get(name)
        if value is None:
            assert now is None, name  # absent or null: cleared
        else:
            assert now == (rule._text(value) if name in core else value), name  # present: written
    # Custom fields nobody synced and the CRM did not name are left alone.
    for name, value in custom.items():
        if name not in syncable and name not in real:
            assert change.custom[name] == value
    cleared = {c.name for c in change.cleared}
    expected_cleared = {
        n
        for n in syncable | real.keys()
        if real.get(n) is None
        and (columns.get(core[n]) if n in core else custom.get(n)) is not None
    }
    assert cleared == expected_cleared
    for c in change.cleared:
        assert c.core == (c.name in {"domain", "phone", "email"})  # decisions.md §3
    for name in change.synced:
        assert name in change.custom and name not in SPEC_COMMON[kind]


def test_item_properties_absent_keeps_record() -> None:
    plan = p.plan_sync("companies", ["1"], {"results": [{"externalId": "1", "crmId": "c"}]})
    assert plan.matched["1"].properties is None


def test_whole_record_as_properties_is_a_warning() -> None:
    body = {
        "results": [
            {"externalId": "1", "crmId": "c", "properties": {"externalId": "1", "name": "X"}}
        ]
    }
    plan = p.plan_sync("companies", ["1"], body)
    assert [f.severity for f in plan.findings] == ["warning"]
    change = rule.apply_properties("companies", {}, {}, (), plan.matched["1"].properties or {})
    assert change.custom == {"name": "X"}


def test_subjects_follow_the_spec_formats() -> None:
    base: dict[str, Any] = {
        "id": 1,
        "content": "hi",
        "sequence_index": 2,
        "sequence_count": 3,
        "sender_name": "Ann Lee",
        "sender_company": "Acme",
        "contact_first": "Bo",
        "contact_last": "Ng",
        "contact_company": "Zen",
        "occurred_at": "2026-01-01T00:00:00.000Z",
        "subject": None,
    }
    out = shapes.MessageView(type="NETWORK_MESSAGE", is_contact_sender=False, **base)  # type: ignore[arg-type]
    assert shapes.activity_subject(out) == "[2/3] [FROM Acme] Ann Lee"
    inbound = shapes.MessageView(type="INMAIL", is_contact_sender=True, **base)  # type: ignore[arg-type]
    assert shapes.activity_subject(inbound) == "[Zen] Bo Ng"
    mail = shapes.MessageView(
        **{**base, "subject": "Hello", "type": "EMAIL", "is_contact_sender": False}
    )  # type: ignore[arg-type]
    assert shapes.activity_subject(mail) == "[2/3] Hello"
    reply = shapes.MessageView(
        **{**base, "subject": "Re: Hello", "type": "EMAIL", "is_contact_sender": True}
    )  # type: ignore[arg-type]
    assert shapes.activity_subject(reply) == "[Zen] Bo Ng"
    body = shapes.activity_body(inbound, "k1", None, None)
    assert body["type"] == "NETWORK_INMAIL" and body["direction"] == "INBOUND"
    assert body["metadata"] == {"messageId": "1", "sequenceIndex": 2, "sequenceMessageCount": 3}
    assert "ownerId" not in body and "companyId" not in body


def test_engagement_values_and_mapping() -> None:
    m1 = eng.Membership(
        "Alpha",
        "Ann",
        ("CONNECTION_REQUEST", "NETWORK_MESSAGE"),
        "Ongoing",
        "Connection Accepted",
        2,
        0,
        1,
        "2026-01-01",
    )
    m2 = eng.Membership(
        "Beta", "Bob", ("EMAIL",), "Finished", "Message Sent (1/1) - EMAIL", 1, 0, 0, "2025-01-01"
    )
    values = eng.engagement_values("contacts", [m1, m2], ["Message sent"])
    assert values["campaignEngagementStatus"] == "Message Sent (1/1) - EMAIL"
    assert values["campaignSequenceStatus"] == "Finished"
    assert values["campaignOpens"] == "3" and values["campaignOpenAnalysis"] == "Yes (3)"
    assert values["campaignClickAnalysis"] == "No" and values["campaignReplyAnalysis"] == "Yes (1)"
    assert values["campaigns"] == "Alpha, Beta" and values["senders"] == "Ann, Bob"
    company = eng.engagement_values("companies", [m1], [])
    assert "campaignOpenAnalysis" not in company and "campaignSequenceDetails" not in company
    item = eng.engagement_item("c1", values, {"campaignOpens": "opens__c", "unknown": "x"})
    assert item == {"crmId": "c1", "opens__c": "3"}
    assert eng.engagement_item("c1", values, {}) is None


# Users with distinct ids, some without one.
user_items = st.lists(st.sampled_from(["u1", "u2", "u3"]), unique=True).flatmap(
    lambda ids: st.permutations([{"id": i} for i in ids] + [{"name": "x"}] * 2).map(
        lambda users: users[: len(users) - 1]
    )
)


@FAST
@given(
    user_items,
    st.sampled_from([None, "u1", "nobody"]),
    st.sampled_from(["bare", "users", "data", "other"]),
)
def test_users_answer_turns_owner_selection_on_only_for_an_array(
    users: list[dict[str, str]], owner: str | None, wrap: str
) -> None:
    body: Any = users if wrap == "bare" else {wrap: users}
    plan = p.plan_users(200, body, owner)
    messages = {f.message for f in plan.findings}
    if wrap == "other":
        assert not plan.owner_selection and plan.users is None
        assert messages == {"answer is not a users array"}
        return
    assert plan.owner_selection and plan.users == len(users)
    assert ("user item without an id" in messages) == any("id" not in u for u in users)
    unknown_owner = owner is not None and owner not in {u.get("id") for u in users}
    assert ("ownerId is not among the CRM's users" in messages) == unknown_owner


def test_users_missing_or_failing_turns_owner_selection_off() -> None:
    assert p.plan_users(404, None, "u1") == p.UsersPlan(False)
    failing = p.plan_users(500, None, "u1")
    assert not failing.owner_selection
    assert [f.message for f in failing.findings] == ["answered 500; owner selection off"]
    unreachable = p.plan_users(0, None, None, "refused")
    assert [(f.message, f.about) for f in unreachable.findings] == [
        ("no answer; owner selection off", "refused")
    ]
    assert p.plan_users(200, None, None).findings[0].severity == "violation"  # not JSON


def test_health_body_shape() -> None:
    assert p.check_health({"status": "ok"}) == []
    assert p.check_health(None) == []  # no JSON body: the caller reported that already
    assert [f.message for f in p.check_health({"ok": True})] == ["body is not {status: string}"]


def test_only_post_companies_documents_201() -> None:
    body = {"results": [{"externalId": "1", "crmId": "c1"}]}
    assert p.plan_create("contacts", ["1"], 200, body).findings == []
    assert p.plan_create("contacts", ["1"], 201, body).findings == []
    [warning] = p.plan_create("companies", ["1"], 200, body).findings
    assert warning.severity == "warning" and "201 is documented" in warning.message
    assert p.plan_create("companies", ["1"], 201, body).findings == []


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        # the CRM's last update echoed back: its ids and the platform's own fields
        ({"crmId": "c", "externalId": "1", "name": "X", "website": "x.io"}, ["echo"]),
        # a lone id-like key is not an echo: named, ignored
        ({"crmId": "c", "tags": ["a"]}, ["`crmId`"]),
        ({"id": 7}, ["`id`"]),
        ({"customFields": {}}, ["`customFields`"]),
        # platform fields without an id: synced-back names, no warning
        ({"name": "X", "website": "x.io", "domain": "x.io"}, []),
        ({"accountTier": "Tier 1"}, []),
    ],
)
def test_properties_warnings_name_what_the_crm_did(
    props: dict[str, Any], expected: list[str]
) -> None:
    body = {"results": [{"externalId": "1", "crmId": "c", "properties": props}]}
    found = [f.message for f in p.plan_sync("companies", ["1"], body).findings]
    assert len(found) == len(expected)
    for message, part in zip(found, expected, strict=True):
        assert part in message
    assert not any("whole stored record" in m for m in found)


def test_a_clear_names_its_cause() -> None:
    columns = {"domain": "a.com", "phoneNumber": "1", "industry": "Software"}
    absent = rule.apply_properties("companies", columns, {}, (), {"domain": "a.com"})
    assert {(c.name, c.cause) for c in absent.cleared} == {
        ("phone", "absent"),
        ("industry", "absent"),
    }
    null = rule.apply_properties(
        "companies", columns, {}, (), {"domain": "a.com", "phone": None, "industry": "S"}
    )
    assert {(c.name, c.cause) for c in null.cleared} == {("phone", "null")}
    echo = {"externalId": "1", "crmId": "c", "name": "Co", "website": "a.com", "domain": "a.com"}
    echoed = rule.apply_properties("companies", columns, {}, (), echo)
    assert {(c.name, c.cause) for c in echoed.cleared} == {
        ("phone", "echo"),
        ("industry", "echo"),
    }
