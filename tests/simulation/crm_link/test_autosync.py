"""CRM auto-sync (issue 6 item 5): new events reach the reference CRM through the exporter's
code, once each, only for what changed; a failing CRM never breaks an advance and loses nothing."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette

from tests.simulation.crm_link.autosync_harness import (
    SYNCED,
    UNSYNCED,
    autosync_of,
    crm_all,
    emulator_of,
    export_in_process,
    members,
    message_event,
    set_autosync,
    set_faults,
    task_event,
)

pytestmark = pytest.mark.anyio
AT = "2026-03-02T09:00:00.000Z"
TARGET = datetime(2026, 3, 2, 9, tzinfo=UTC)


async def ready(app: Starlette, client: httpx.AsyncClient) -> list[int]:
    """Export once and turn auto-sync on; answers members of the synced campaign in the CRM."""
    await export_in_process(app)
    await set_autosync(client)
    return await emulator_of(app).db.read(lambda c: members(c, SYNCED, in_crm=True))


async def write(app: Starlette, fn: Any) -> Any:
    return await emulator_of(app).db.write(fn)


async def journal(client: httpx.AsyncClient, export_id: str) -> list[dict[str, Any]]:
    body = (
        await client.get("/_emulator/journal", params={"exportId": export_id, "pageSize": 500})
    ).json()
    return body["data"]  # type: ignore[no-any-return]


async def activities_by_message(client: httpx.AsyncClient) -> Counter[str]:
    return Counter(a["metadata"]["messageId"] for a in await crm_all(client, "activities"))


async def test_off_by_default_and_nothing_to_push(
    app: Starlette, client: httpx.AsyncClient
) -> None:
    state = (await client.get("/_emulator/autosync")).json()
    assert state["enabled"] is False and state["pushes"] == 0 and state["last"] is None
    contacts = await ready(app, client)
    await set_autosync(client, on=False)
    await write(app, lambda c: message_event(c, contacts[0], SYNCED, AT))
    before = len(await crm_all(client, "activities"))
    await autosync_of(app)(TARGET)  # off: the listener does nothing
    assert len(await crm_all(client, "activities")) == before
    await set_autosync(client)
    await autosync_of(app)(TARGET)  # on: the event kept waiting is pushed now
    assert len(await crm_all(client, "activities")) == before + 1
    version = emulator_of(app).db.version
    await autosync_of(app)(TARGET)  # nothing new: no push at all, not even a write
    assert emulator_of(app).db.version == version
    state = (await client.get("/_emulator/autosync")).json()
    assert state["enabled"] is True and state["pushes"] == 1 and state["pending"] == 0


async def test_new_messages_become_one_activity_each(
    app: Starlette, client: httpx.AsyncClient
) -> None:
    contacts = await ready(app, client)
    before = await activities_by_message(client)
    ids = await write(
        app,
        lambda c: [
            message_event(c, contacts[0], SYNCED, AT),
            message_event(c, contacts[1], SYNCED, AT, kind="EMAIL"),
            message_event(
                c,
                contacts[1],
                SYNCED,
                AT,
                inbound=True,
                engagement="Message Replied (2/5) - NETWORK",
            ),
        ],
    )
    unsynced = (await emulator_of(app).db.read(lambda c: members(c, UNSYNCED, in_crm=True)))[0]
    await write(app, lambda c: message_event(c, unsynced, UNSYNCED, AT))  # sync off: no activity
    await autosync_of(app)(TARGET)
    after = await activities_by_message(client)
    new = after - before
    assert sorted(new) == sorted(str(i) for i in ids) and set(new.values()) == {1}
    by_id = {a["metadata"]["messageId"]: a for a in await crm_all(client, "activities")}
    assert (by_id[str(ids[0])]["type"], by_id[str(ids[0])]["direction"]) == ("NETWORK", "OUTBOUND")
    assert by_id[str(ids[1])]["type"] == "EMAIL"
    assert (by_id[str(ids[2])]["type"], by_id[str(ids[2])]["direction"]) == ("NETWORK", "INBOUND")
    assert by_id[str(ids[0])]["occurredAt"] == AT
    logged = await emulator_of(app).db.fetchall(
        f"SELECT crmActivityId FROM messages WHERE id IN ({','.join('?' * len(ids))})", ids
    )
    assert all(r[0] for r in logged)
    # The push is journaled under its own exportId, and the state says what it did.
    state = (await client.get("/_emulator/autosync")).json()
    last = state["last"]
    assert last["id"] == "autosync-1" and last["status"] == "ok"
    assert last["counts"]["activities"] == 3 and last["counts"]["failed"] == 0
    entries = await journal(client, "autosync-1")
    assert Counter(e["path"] for e in entries if e["method"] == "POST")["/activities"] == 3
    assert "crm-demo-key" not in json.dumps(entries)
    await autosync_of(app)(TARGET)
    assert await activities_by_message(client) == after  # never twice


async def test_engagement_only_for_changed_records(
    app: Starlette, client: httpx.AsyncClient
) -> None:
    contacts = await ready(app, client)
    target = contacts[2]
    status = "Message Replied (2/5) - NETWORK"
    await write(
        app, lambda c: message_event(c, target, SYNCED, AT, inbound=True, engagement=status)
    )
    await autosync_of(app)(TARGET)
    crm_id, company_crm = (
        await emulator_of(app).db.fetchone(
            "SELECT c.contactCRMId, co.companyCRMId FROM contacts c"
            " LEFT JOIN companies co ON co.id = c.companyId WHERE c.id = ?",
            (target,),
        )
    ) or (None, None)
    contact = (await client.get(f"/_emulator/crm/contacts/{crm_id}")).json()
    fields = contact["fields"]
    assert fields["platform_engagement_status"] == status
    assert fields["platform_sequence_status"] == "Ongoing"
    assert fields["platform_reply_analysis"].startswith("Yes (")
    assert "Message received" in fields["platform_activities"]
    puts = [e for e in await journal(client, "autosync-1") if e["method"] == "PUT"]
    sent = {e["path"]: json.loads(e["requestBody"]) for e in puts}
    assert [i["crmId"] for i in sent["/contacts"]["contacts"]] == [crm_id]
    if company_crm is not None:
        assert [i["crmId"] for i in sent["/companies"]["companies"]] == [company_crm]
        company = (await client.get(f"/_emulator/crm/companies/{company_crm}")).json()
        assert company["fields"]["platform_engagement_status"] == status
        assert "platform_reply_analysis" not in sent["/companies"]["companies"][0]


async def test_tasks_created_then_completed(app: Starlette, client: httpx.AsyncClient) -> None:
    contacts = await ready(app, client)
    before = len(await crm_all(client, "tasks"))
    task = await write(app, lambda c: task_event(c, contacts[3], SYNCED, AT, step=5))
    await autosync_of(app)(TARGET)
    tasks = await crm_all(client, "tasks")
    assert len(tasks) == before + 1 and tasks[-1]["subject"] == "Call them"
    assert tasks[-1]["completed"] is False
    crm_task = tasks[-1]["id"]
    await write(
        app,
        lambda c: c.execute(
            "UPDATE platform_tasks SET completed = 1, completedAt = ? WHERE id = ?", (AT, task)
        ),
    )
    await autosync_of(app)(TARGET)  # no new event: the completion alone makes a push
    done = (await client.get(f"/_emulator/crm/tasks/{crm_task}")).json()
    assert done["completed"] is True and done["completedAt"]
    state = (await client.get("/_emulator/autosync")).json()
    assert state["last"]["counts"]["tasksCompleted"] >= 1
    assert len(await crm_all(client, "tasks")) == before + 1


async def task_in_the_crm(app: Starlette, client: httpx.AsyncClient) -> tuple[list[int], int]:
    """Export, auto-sync on, and one new platform task pushed; answers the members and the task."""
    contacts = await ready(app, client)
    task = await write(app, lambda c: task_event(c, contacts[3], SYNCED, AT, step=5))
    await autosync_of(app)(TARGET)
    return contacts, task


async def test_completions_that_keep_failing_show_as_pending_with_the_last_error(
    app: Starlette, client: httpx.AsyncClient
) -> None:
    _, task = await task_in_the_crm(app, client)
    await write(
        app,
        lambda c: c.execute(
            "UPDATE platform_tasks SET completed = 1, completedAt = ? WHERE id = ?", (AT, task)
        ),
    )
    await set_faults(client, [{"endpoint": "PATCH /tasks/:taskId", "status": 500}])
    for _ in range(2):  # each push tries again, and fails again
        await autosync_of(app)(TARGET)
        state = (await client.get("/_emulator/autosync")).json()
        assert state["completionsPending"] == 1
        assert "PATCH /tasks/" in state["completionError"] and "500" in state["completionError"]
        assert state["last"]["counts"]["failed"] == 1
    await set_faults(client, [])
    await autosync_of(app)(TARGET)
    state = (await client.get("/_emulator/autosync")).json()
    assert state["completionsPending"] == 0 and state["completionError"] is None


async def test_a_task_completed_on_the_crm_side_is_completed_on_the_platform(
    app: Starlette, client: httpx.AsyncClient
) -> None:
    contacts, task = await task_in_the_crm(app, client)
    crm_id = (
        await emulator_of(app).db.fetchone(
            "SELECT crmTaskId FROM platform_tasks WHERE id = ?", (task,)
        )
    )[0]  # type: ignore[index]
    done = await client.patch(f"/_emulator/crm/tasks/{crm_id}", json={"completed": True})
    assert done.status_code == 200 and done.json()["completedAt"]
    assert (
        await client.patch("/_emulator/crm/tasks/nope", json={"completed": True})
    ).status_code == 404
    await write(app, lambda c: message_event(c, contacts[0], SYNCED, AT))  # something to push
    await autosync_of(app)(TARGET)
    row = await emulator_of(app).db.fetchone(
        "SELECT completed, completedAt, crmCompleted FROM platform_tasks WHERE id = ?", (task,)
    )
    assert row == (1, done.json()["completedAt"], 1)
    state = (await client.get("/_emulator/autosync")).json()
    assert state["last"]["report"]["taskReadBack"]["completedOnCrm"] >= 1


async def test_task_added_without_an_event_is_sent(
    app: Starlette, client: httpx.AsyncClient
) -> None:
    contacts = await ready(app, client)
    # a member whose history has not reached the task step yet (those past it have theirs)
    tasked = {
        r[0]
        for r in await emulator_of(app).db.fetchall(
            "SELECT contactId FROM platform_tasks WHERE campaignId = ?", (SYNCED,)
        )
    }
    target = next(c for c in contacts if c not in tasked)
    before = len(await crm_all(client, "tasks"))
    added = await client.post("/_emulator/tasks", json={"contactId": target, "campaignId": SYNCED})
    assert added.status_code == 201, added.text
    await autosync_of(app)(TARGET)
    tasks = await crm_all(client, "tasks")
    assert len(tasks) == before + 1
    listed = (await client.get("/_emulator/tasks", params={"contactId": target})).json()["data"]
    assert [t["crmTaskId"] for t in listed if t["id"] == added.json()["id"]] == [tasks[-1]["id"]]


async def test_records_not_in_the_crm_wait(app: Starlette, client: httpx.AsyncClient) -> None:
    contacts = await ready(app, client)
    outsider = contacts[4]
    crm_id = (
        await emulator_of(app).db.fetchone(
            "SELECT contactCRMId FROM contacts WHERE id = ?", (outsider,)
        )
    )[0]  # type: ignore[index]
    await write(
        app,
        lambda c: c.execute("UPDATE contacts SET contactCRMId = NULL WHERE id = ?", (outsider,)),
    )
    message = await write(app, lambda c: message_event(c, outsider, SYNCED, AT))
    before = len(await crm_all(client, "activities"))
    await autosync_of(app)(TARGET)
    state = (await client.get("/_emulator/autosync")).json()
    assert state["waiting"] >= 1 and len(await crm_all(client, "activities")) == before
    assert state["last"]["waiting"] == state["waiting"]  # the push counted them as the state does
    # Once the contact is in the CRM, the next push sends what waited.
    await write(
        app,
        lambda c: c.execute(
            "UPDATE contacts SET contactCRMId = ? WHERE id = ?", (crm_id, outsider)
        ),
    )
    await client.post("/_emulator/autosync/push")
    assert (await activities_by_message(client))[str(message)] == 1


async def test_failing_crm_keeps_everything_for_the_next_push(
    app: Starlette, client: httpx.AsyncClient
) -> None:
    contacts = await ready(app, client)
    ids = await write(
        app,
        lambda c: [
            message_event(c, k, SYNCED, AT, engagement="Message Sent (2/5) - NETWORK")
            for k in contacts[:3]
        ],
    )
    task = await write(app, lambda c: task_event(c, contacts[0], SYNCED, AT, step=5))
    await set_faults(client, [{"endpoint": "*", "status": 500}])
    await autosync_of(app)(TARGET)  # must not raise
    state = (await client.get("/_emulator/autosync")).json()
    assert state["last"]["status"] == "failed" and state["last"]["retrying"] >= 3
    assert state["last"]["counts"]["failed"] >= 4
    await set_faults(client, [{"endpoint": "*", "malformedBody": True}])
    await autosync_of(app)(TARGET)
    await set_faults(client, [{"endpoint": "*", "dropConnection": True}])
    await autosync_of(app)(TARGET)
    assert (await client.get("/_emulator/autosync")).json()["last"]["status"] == "aborted"
    await set_faults(client, [])
    await autosync_of(app)(TARGET)
    state = (await client.get("/_emulator/autosync")).json()
    assert state["last"]["status"] == "ok" and state["pending"] == 0, state["last"]
    logged = await activities_by_message(client)
    assert all(logged[str(i)] == 1 for i in ids)
    crm_task = await emulator_of(app).db.fetchone(
        "SELECT crmTaskId FROM platform_tasks WHERE id = ?", (task,)
    )
    assert crm_task is not None and crm_task[0]


async def test_control_routes(client: httpx.AsyncClient) -> None:
    answer = await client.post("/_emulator/autosync/push")
    assert answer.status_code == 200  # fixtures carry a connection
    # The default fixtures hold one task completed on the platform and open on the CRM: the
    # push completes it, and nothing else.
    pushed = answer.json()
    assert pushed["pushes"] == 1 and pushed["last"]["counts"]["tasksCompleted"] == 1
    assert pushed["last"]["counts"]["tasksCreated"] == pushed["last"]["counts"]["activities"] == 0
    on = await client.put("/_emulator/autosync", json={"enabled": True})
    assert on.status_code == 200 and on.json()["enabled"] is True
    conn = (await client.get("/_emulator/connection")).json()
    assert conn["autoSync"] is True and conn["engagementFields"]["contacts"]  # the rest kept
    for bad in ({}, {"enabled": "yes"}, [], None):
        refused = await client.put("/_emulator/autosync", json=bad)
        assert refused.status_code == 400 and refused.json()["status"] == "error"


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    plan=st.lists(
        st.tuples(
            st.lists(st.integers(0, 7), max_size=4), st.sampled_from([None, 500, 503, "drop"])
        ),
        min_size=1,
        max_size=5,
    )
)
async def test_each_message_one_activity_whatever_the_pushes(
    app: Starlette, client: httpx.AsyncClient, plan: list[tuple[list[int], Any]]
) -> None:
    """For any sequence of advances (new messages, then a push that may meet a failing CRM),
    followed by a healthy push, each message yields exactly one activity, never two.
    (One app for every example: the state only grows, and the property must hold on it.)"""
    if not hasattr(app.state, "contacts"):
        app.state.contacts = await ready(app, client)
    contacts = app.state.contacts
    sent: list[int] = []
    for picks, fault in plan:
        sent += await write(
            app, lambda c, picks=picks: [message_event(c, contacts[i], SYNCED, AT) for i in picks]
        )
        faults = (
            []
            if fault is None
            else [
                {"endpoint": "POST /activities", "dropConnection": True}
                if fault == "drop"
                else {
                    "endpoint": "POST /activities",
                    "status": fault,
                    "rate": 0.5,
                    "seed": len(sent),
                }
            ]
        )
        await set_faults(client, faults)
        await autosync_of(app)(TARGET)
    await set_faults(client, [])
    await autosync_of(app)(TARGET)
    logged = await activities_by_message(client)
    assert {str(i): logged[str(i)] for i in sent} == {str(i): 1 for i in sent}
    assert max(logged.values(), default=1) == 1
    assert (await client.get("/_emulator/autosync")).json()["pending"] == 0


def engagement_now(conn: Any, ids: list[int], mapping: dict[str, str]) -> dict[str, dict[str, str]]:
    """The platform's current engagement of contacts, under the CRM field names (crmId -> fields)."""
    from emulator.exporter import plan as p
    from emulator.exporter import records as rec

    rows = rec.read_engagement(conn, "contacts", 0, len(ids) + 1, ids)
    return {
        crm: {
            mapping[k]: v
            for k, v in p.engagement_values("contacts", m, log).items()
            if k in mapping
        }
        for _, crm, m, log in rows
    }


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(cuts=st.lists(st.integers(1, 3 * 86400 - 1), max_size=4, unique=True))
async def test_any_split_of_the_clock_pushes_the_same(
    app: Starlette, client: httpx.AsyncClient, cuts: list[int]
) -> None:
    """Three simulated days advanced in any number of steps: each message of a synced campaign
    is one activity, and every contact with events carries its current engagement in the CRM."""
    if not hasattr(app.state, "snapshot"):
        await ready(app, client)
        app.state.snapshot = (await client.post("/_emulator/snapshots", json={})).json()["id"]
        app.state.activities = len(await crm_all(client, "activities"))
    else:
        restored = await client.post(f"/_emulator/snapshots/{app.state.snapshot}/restore")
        assert restored.status_code == 200, restored.text
    first = (await client.get("/_emulator/events", params={"limit": 1})).json()["data"]
    previous = 0
    for cut in [*sorted(cuts), 3 * 86400]:
        answer = await client.post("/_emulator/clock/advance", json={"seconds": cut - previous})
        assert answer.status_code == 200, answer.text
        previous = cut
    events: list[dict[str, Any]] = []
    after = first[0]["id"] - 1 if first else 0
    while True:
        page = (
            await client.get("/_emulator/events", params={"afterId": after, "limit": 1000})
        ).json()
        events += page["data"]
        if page["nextAfterId"] is None:
            break
        after = page["nextAfterId"]
    made = {
        "CONNECTION_REQUEST_SENT",
        "CONNECTION_REQUEST_ACCEPTED",
        "NETWORK_MESSAGE_SENT",
        "EMAIL_SENT",
        "INMAIL_SENT",
        "MESSAGE_REPLIED",
    }
    synced = await emulator_of(app).db.fetchall("SELECT id FROM campaigns WHERE messageSync = 1")
    expected = {
        str(e["messageId"])
        for e in events
        if e["type"] in made and e["campaignId"] in {r[0] for r in synced}
    }
    activities = (await crm_all(client, "activities"))[app.state.activities :]
    logged = Counter(a["metadata"]["messageId"] for a in activities)
    assert set(logged) == expected and set(logged.values()) <= {1}
    # Engagement: what the CRM holds is what the platform shows now.
    touched = sorted({e["contactId"] for e in events})
    conn = (await client.get("/_emulator/connection")).json()
    mapping = conn["engagementFields"]["contacts"]
    want = await emulator_of(app).db.read(lambda c: engagement_now(c, touched, mapping))
    held = {c["crmId"]: c["fields"] for c in await crm_all(client, "contacts")}
    for crm_id, fields in want.items():
        assert {k: held[crm_id].get(k) for k in fields} == fields, crm_id
