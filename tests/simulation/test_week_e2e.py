"""Issue 6's Done-when, as a newcomer would see it: a real `emulator serve` process, an export,
auto-sync on, the clock advanced a week; campaigns, conversations, engagement fields, webhook
logs, actions runs and the reference CRM's records must all have changed, and agree."""

from __future__ import annotations

import json
import time
from collections import Counter, defaultdict
from datetime import timedelta
from typing import Any

import httpx

from emulator.fixtures.loader import DEFAULT_FIXTURES
from emulator.wire import now_iso, parse_iso
from tests.processes import emulator_process
from tests.servers import recording_server

WEEK = 7 * 86400
WEBHOOK_EVENTS = [
    "CONNECTION_REQUEST_SENT",
    "CONNECTION_REQUEST_ACCEPTED",
    "NETWORK_MESSAGE_SENT",
    "EMAIL_SENT",
    "INMAIL_SENT",
    "MESSAGE_REPLIED",
    "POST_LIKED",
    "PROFILE_VISITED",
]

# What the newcomer's webhook listens to (fewer deliveries: a faster test).
SUBSCRIBED = ["CONNECTION_REQUEST_ACCEPTED", "MESSAGE_REPLIED", "NETWORK_MESSAGE_SENT"]
# Events that make a conversation message (opens and clicks name the message they were on).
MESSAGE_EVENTS = frozenset(WEBHOOK_EVENTS) - {"POST_LIKED", "PROFILE_VISITED"}


def fixture(name: str) -> list[dict[str, Any]]:
    return json.loads((DEFAULT_FIXTURES / f"{name}.json").read_text())  # type: ignore[no-any-return]


def every(client: httpx.Client, path: str, **params: Any) -> list[dict[str, Any]]:
    """Every item of a /_emulator or /v1 listing with `meta.total` (pages of 100)."""
    out: list[dict[str, Any]] = []
    for page in range(1, 10_000):
        body = client.get(path, params={**params, "page": page, "pageSize": 100}).json()
        out += body["data"]
        if len(out) >= body["meta"]["total"] or not body["data"]:
            return out
    raise AssertionError("too many pages")


def events_after(ctl: httpx.Client, after: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    while True:
        page = ctl.get("/events", params={"afterId": after, "limit": 1000}).json()
        out += page["data"]
        if page["nextAfterId"] is None:
            return out
        after = page["nextAfterId"]


def all_conversations(v1: httpx.Client) -> dict[int, list[dict[str, Any]]]:
    """Every conversation's messages (ids are dense: read them in order until a 404)."""
    out: dict[int, list[dict[str, Any]]] = {}
    for cid in range(1, 100_000):
        answer = v1.get(f"/conversation/{cid}/messages")
        if answer.status_code == 404:
            return out
        out[cid] = answer.json()["data"]["messages"]
    raise AssertionError("too many conversations")


def wait_export(ctl: httpx.Client) -> dict[str, Any]:
    started = ctl.post("/exports")
    assert started.status_code == 202, started.text
    for _ in range(600):
        report = ctl.get(f"/exports/{started.json()['id']}").json()
        if report["status"] != "running":
            return report  # type: ignore[no-any-return]
        time.sleep(0.05)
    raise AssertionError("export did not finish")


def test_a_week_in_the_life() -> None:

    sync_campaigns = {c["id"] for c in fixture("campaigns") if c.get("messageSync")}
    with (
        recording_server() as receiver,
        emulator_process() as base,
        httpx.Client(base_url=f"{base}/_emulator", timeout=60) as ctl,
        httpx.Client(base_url=f"{base}/v1", headers={"x-api-key": "demo-all"}, timeout=30) as v1,
    ):
        start = ctl.get("/clock").json()["now"]

        # A newcomer's setup: a webhook to their receiver, a DRAFT campaign started, one export.
        hook = v1.post(
            "/webhooks", json={"name": "mine", "url": receiver.url, "events": SUBSCRIBED}
        )
        assert hook.status_code == 201, hook.text
        hook_id = hook.json()["data"]["id"]
        drafts = [c["id"] for c in v1.get("/campaigns").json()["data"] if c["status"] == "DRAFT"]
        assert ctl.post(f"/campaigns/{drafts[0]}/start").json()["status"] == "ACTIVE"
        report = wait_export(ctl)
        assert report["status"] == "ok", report.get("message")
        crm_activities = len(every(ctl, "/crm/activities"))
        conversations = all_conversations(v1)
        # A sequence task the platform owes the CRM (as a TASK step makes one), for the first
        # member whose history has not reached its task step yet.
        for member in (c for c in fixture("contacts") if c["campaignIds"]):
            added = ctl.post(
                "/tasks", json={"contactId": member["id"], "campaignId": member["campaignIds"][0]}
            )
            if added.status_code == 201:
                break
        assert added.status_code == 201, added.text
        task = added.json()
        conn = ctl.get("/connection").json()
        assert (
            ctl.put(
                "/connection", json={**conn, "apiKey": "crm-demo-key", "autoSync": True}
            ).status_code
            == 200
        )
        started = v1.post(
            "/actions",
            json={
                "actions": [{"type": "VERIFY_LEAD_EMAIL"}],
                "contactIds": [1, 2, 3],
                "webhookUrl": f"{receiver.url}/runs",
            },
        )
        assert started.status_code in (200, 201, 202), started.text
        run_path = f"/actions/{started.json()['data']['actionsId']}/status"
        run_before = v1.get(run_path).json()["data"]
        history = events_after(ctl, 0)  # the fixtures' own past, if any
        last_id = history[-1]["id"] if history else 0

        # A week passes.
        advanced = ctl.post("/clock/advance", json={"seconds": WEEK})
        assert advanced.status_code == 200, advanced.text
        assert advanced.json()["now"] == now_iso(parse_iso(start) + timedelta(seconds=WEEK))
        assert ctl.get("/clock").json()["now"] == advanced.json()["now"]
        events = events_after(ctl, last_id)
        assert len(events) == advanced.json()["events"] > 0
        # (the minute advanced below for the task adds events of its own: keep the week's)
        assert all(start <= e["occurredAt"] <= advanced.json()["now"] for e in events)

        # Campaigns: the started one ran too.
        assert drafts[0] in {e["campaignId"] for e in events}
        statuses = {c["id"]: c["status"] for c in v1.get("/campaigns").json()["data"]}
        assert statuses[drafts[0]] in ("ACTIVE", "COMPLETED")

        # Conversations: one new message per message event, each with its event's time.
        message_events = {e["messageId"]: e for e in events if e["type"] in MESSAGE_EVENTS}
        after = all_conversations(v1)
        new_messages = {
            m["id"]: m
            for cid, msgs in after.items()
            for m in msgs
            if m["id"] not in {x["id"] for x in conversations.get(cid, [])}
        }
        assert set(new_messages) == set(message_events) != set()
        assert all(
            new_messages[i]["createdAt"] == e["occurredAt"] for i, e in message_events.items()
        )
        assert len(after) > len(conversations)  # the week opened conversations

        # The reference CRM: one activity per new message of a synced campaign, never two.
        synced = {str(i) for i, e in message_events.items() if e["campaignId"] in sync_campaigns}
        activities = every(ctl, "/crm/activities")
        new = Counter(a["metadata"]["messageId"] for a in activities[crm_activities:])
        assert set(new) == synced and set(new.values()) == {1}

        # ... the task was created there; completed on the platform, it completes there too ...
        def platform_task() -> dict[str, Any]:
            tasks = ctl.get("/tasks", params={"contactId": task["contactId"]}).json()["data"]
            return next(t for t in tasks if t["id"] == task["id"])

        crm_task_id = platform_task()["crmTaskId"]
        assert ctl.get(f"/crm/tasks/{crm_task_id}").json()["completed"] is False
        assert ctl.post("/tasks/complete", json={"ids": [task["id"]]}).status_code == 200
        assert ctl.post("/clock/advance", json={"seconds": 60}).status_code == 200
        assert platform_task()["crmCompleted"] is True
        assert ctl.get(f"/crm/tasks/{crm_task_id}").json()["completed"] is True
        # ... and engagement fields under the configured names agree with the events.
        by_contact: dict[int, set[str]] = defaultdict(set)
        for e in events:
            by_contact[e["contactId"]].add(e["type"])
        replied = [c for c, types in by_contact.items() if "MESSAGE_REPLIED" in types]
        for contact_id in list(by_contact)[:20] + replied:
            crm = ctl.get("/crm/contacts", params={"externalId": str(contact_id)}).json()["data"][0]
            fields = crm["fields"]
            assert fields["platform_sequence_status"] in ("Ongoing", "Finished", "Replied"), fields
            if contact_id in replied:
                assert fields["platform_engagement_status"].startswith("Message Replied"), fields
                assert fields["platform_reply_analysis"].startswith("Yes")
        autosync = ctl.get("/autosync").json()
        assert (
            autosync["enabled"] and autosync["last"]["status"] == "ok" and autosync["pending"] == 0
        )
        week_push = ctl.get(
            "/journal", params={"exportId": "autosync-1", "path": "/activities", "pageSize": 500}
        )
        assert week_push.json()["total"] == len(synced)  # journaled, one exchange each (no retries)

        # Webhook logs: every webhook event since the subscription (the campaign start's, the
        # week's and the minute's) reached the newcomer's receiver once, logged as a success.
        webhook_events = [e for e in events_after(ctl, 0) if e["type"] in SUBSCRIBED]
        logs = every(v1, f"/webhooks/{hook_id}/logs")
        hooks = [r for r in receiver.requests if not r.path.startswith("/runs")]
        assert len(hooks) == len(webhook_events)
        assert Counter(log["eventType"] for log in logs) == Counter(
            e["type"] for e in webhook_events
        )
        assert all(log["statusCode"] == 200 for log in logs)

        # Actions runs: the run started before the week has ended, one delivery per contact.
        run = v1.get(run_path).json()["data"]
        assert run_before["overallStatus"] in ("QUEUED", "PENDING")
        assert run["overallStatus"] in ("COMPLETED", "PARTIAL", "FAILED")
        assert sum(run["statusCounts"].values()) == run["totalActions"] == 3
        assert len([r for r in receiver.requests if r.path.startswith("/runs")]) == 3
