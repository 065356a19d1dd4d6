"""Exporter test helpers: a small platform in a store, and a fake CRM that keeps what it is sent."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from emulator.exporter.report import Report
from emulator.exporter.run import Exporter
from emulator.fixtures import models as m
from emulator.outbound import RetryPolicy
from emulator.platform.seed import seed
from emulator.settings import Settings
from emulator.state import Emulator

TS = "2026-01-01T00:00:00.000Z"
FAST = RetryPolicy(retries=3, base=0.001, cap=0.01, retry_after_cap=0.05)
CRM_URL = "http://crm.test/crm"


def small_fixtures(companies: int = 3, contacts: int = 6, url: str = CRM_URL) -> m.FixtureSet:
    """A campaign with message sync, a TASK step, conversations, and a connection to `url`."""
    steps = [
        m.SequenceStep(type="CONNECTION_REQUEST"),
        m.SequenceStep(type="TASK", taskSubject="Call them"),
        m.SequenceStep(type="NETWORK_MESSAGE"),
        m.SequenceStep(type="EMAIL", subject="Hi"),
    ]
    msg_ids = itertools.count(1)
    return m.FixtureSet(
        users=[m.User(id=1, name="Owner")],
        identities=[m.Identity(id=1, name="Ann Lee", companyName="Acme", createdAt=TS)],
        campaigns=[
            m.Campaign(
                id=1,
                name="Alpha",
                status="ACTIVE",
                createdBy=1,
                senderIdentityId=1,
                messageSync=True,
                createdAt=TS,
                sequence=steps,
            ),
            m.Campaign(
                id=2,
                name="Quiet",
                status="ACTIVE",
                createdBy=1,
                senderIdentityId=1,
                messageSync=False,
                createdAt=TS,
                sequence=steps,
            ),
        ],
        companies=[
            m.Company(
                id=i,
                name=f"Co {i}",
                domain=f"co{i}.com",
                phoneNumber="+1 555 0100",
                industry="Software",
                createdAt=TS,
                updatedAt=TS,
            )
            for i in range(1, companies + 1)
        ],
        contacts=[
            m.Contact(
                id=i,
                firstName=f"F{i}",
                lastName=f"L{i}",
                professionalEmail=f"p{i}@x.com",
                phones="+1 555 0199",
                companyId=(i % companies) + 1 if i % 4 else None,
                campaignIds=[1] if i % 2 else [2],
                createdAt=TS,
                updatedAt=TS,
            )
            for i in range(1, contacts + 1)
        ],
        conversations=[
            m.Conversation(
                id=i,
                contactId=i,
                campaignId=1 if i % 2 else 2,
                identityId=1,
                messages=[
                    m.Message(
                        id=next(msg_ids),
                        type="CONNECTION_REQUEST",
                        sequenceIndex=1,
                        content="hello",
                        createdAt=TS,
                        updatedAt=TS,
                    ),
                    m.Message(
                        id=next(msg_ids),
                        type="NETWORK_MESSAGE",
                        isContactSender=True,
                        content="hi back",
                        createdAt=TS,
                        updatedAt=TS,
                    ),
                    m.Message(
                        id=next(msg_ids),
                        type="EMAIL",
                        subject="Hi",
                        sequenceIndex=3,
                        createdAt=TS,
                        updatedAt=TS,
                    ),
                ],
            )
            for i in range(1, contacts + 1)
        ],
        connection=m.CrmConnection(
            crmUrl=url,
            apiKey="secret-key",
            engagementFields=m.EngagementFields(
                contacts={"campaignOpens": "opens__c", "campaignEngagementStatus": "status__c"},
                companies={"campaigns": "campaigns__c"},
            ),
        ),
    )


async def open_platform(fixtures: m.FixtureSet | None = None) -> Emulator:
    emulator = Emulator(Settings(), seeders=[seed], fixtures=fixtures or small_fixtures())
    await emulator.start()
    return emulator


Fault = Callable[[httpx.Request], "httpx.Response | None"]


@dataclass
class FakeCrm:
    """A CRM that keeps what it was sent (matches by externalId); faults answer first."""

    faults: list[Fault] = field(default_factory=list)
    sync_answer: Callable[[str, list[dict[str, Any]]], dict[str, Any]] | None = None
    ids: dict[str, dict[str, str]] = field(
        default_factory=lambda: {"companies": {}, "contacts": {}}
    )
    records: dict[str, dict[str, Any]] = field(default_factory=dict)
    activities: list[dict[str, Any]] = field(default_factory=list)
    tasks: dict[str, dict[str, Any]] = field(default_factory=dict)
    sent: list[tuple[str, str, Any]] = field(default_factory=list)
    counter: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    def bodies(self, method: str, path: str) -> list[Any]:
        return [b for mt, p, b in self.sent if mt == method and p == path]

    def handle(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path.removeprefix("/crm")
        body = json.loads(request.content) if request.content else None
        self.sent.append((request.method, path, body))
        for fault in self.faults:
            answer = fault(request)
            if answer is not None:
                return answer
        if request.headers.get("X-API-Key") != "secret-key":
            return httpx.Response(401, json={"error": "unauthorized", "message": "bad key"})
        method_path = (request.method, path)
        if method_path == ("GET", "/health"):
            return httpx.Response(200, json={"status": "ok"})
        if method_path == ("GET", "/users"):
            return httpx.Response(200, json=[{"id": "u1", "name": "Una"}])
        for kind in ("companies", "contacts"):
            known = self.ids[kind]
            if method_path == ("POST", f"/{kind}/sync"):
                items = body[kind]
                if self.sync_answer is not None:
                    return httpx.Response(200, json=self.sync_answer(kind, items))
                return httpx.Response(
                    200,
                    json={
                        "results": [
                            {"externalId": i["externalId"], "crmId": known[i["externalId"]]}
                            for i in items
                            if i["externalId"] in known
                        ]
                    },
                )
            if method_path == ("POST", f"/{kind}"):
                results = []
                for item in body[kind]:
                    crm_id = known.setdefault(item["externalId"], f"{kind[:2]}{next(self.counter)}")
                    self.records[crm_id] = item
                    results.append({"externalId": item["externalId"], "crmId": crm_id})
                return httpx.Response(201, json={"results": results})
            if method_path == ("PUT", f"/{kind}"):
                results = []
                for item in body[kind]:
                    self.records.setdefault(item["crmId"], {}).update(item)
                    results.append({"crmId": item["crmId"], "success": True})
                return httpx.Response(200, json={"results": results})
        if method_path == ("POST", "/associations"):
            return httpx.Response(200, json={"success": True, "created": len(body["associations"])})
        if method_path == ("POST", "/activities"):
            self.activities.append(body)
            return httpx.Response(201, json={"id": f"a{next(self.counter)}", **body})
        if method_path == ("POST", "/tasks"):
            task_id = f"t{next(self.counter)}"
            self.tasks[task_id] = {"id": task_id, **body, "completed": False, "completedAt": None}
            return httpx.Response(201, json=self.tasks[task_id])
        if method_path == ("POST", "/tasks/batch"):
            return httpx.Response(200, json=[self.tasks[t] for t in body["ids"] if t in self.tasks])
        if request.method == "GET" and path.startswith("/tasks/"):
            task = self.tasks.get(path.removeprefix("/tasks/"))
            if task is None:
                return httpx.Response(404, json={"error": "not_found", "message": "no task"})
            return httpx.Response(200, json=task)
        if method_path == ("PATCH", "/tasks/batch"):
            done = []
            for task_id in body["ids"]:
                if task_id in self.tasks:
                    self.tasks[task_id].update(completed=True, completedAt=TS)
                    done.append(self.tasks[task_id])
            return httpx.Response(200, json=done)
        if request.method == "PATCH" and path.startswith("/tasks/"):
            task = self.tasks.get(path.removeprefix("/tasks/"))
            if task is None:
                return httpx.Response(404, json={"error": "not_found", "message": "no task"})
            task.update(completed=True, completedAt=TS)
            return httpx.Response(200, json=task)
        return httpx.Response(404, json={"error": "not_found", "message": path})


async def run_export(emulator: Emulator, crm: FakeCrm | None = None, **options: Any) -> Report:
    from emulator.platform import connection as platform_connection

    connection = options.pop("connection", None) or await emulator.db.read(platform_connection.read)
    if crm is not None:
        options.setdefault("transport", crm.transport())
    options.setdefault("policy", FAST)
    return await Exporter(emulator.db, connection, now=emulator.clock.now_iso, **options).run()


def outcomes(report: Report, kind: str) -> int:
    s = report.phases[kind]
    return s.created + s.updated + s.unchanged + s.failed
