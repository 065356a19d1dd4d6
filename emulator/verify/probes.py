"""The request bodies of the probes, every record marked as a verify probe (pure, no I/O).

Each record gets `externalId` `verify-<run id>-<n>`, a name saying "verify probe ... (delete
me)", and match keys under the reserved `.invalid` domain, so a CRM team can find and delete
them and they never match a real record.
"""

from __future__ import annotations

import itertools
import secrets
from typing import Any

MARKER = "verify probe"
DOMAIN = "verify.invalid"  # RFC 2606: never a real domain


def new_run_id() -> str:
    return secrets.token_hex(4)


class Probes:
    """Marked bodies for one run: numbered records, tasks and activities."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self._n = itertools.count(1)

    def external_id(self) -> str:
        return f"verify-{self.run_id}-{next(self._n)}"

    def absent_id(self, what: str) -> str:
        """An id no CRM issued (for unknown crmIds and task ids)."""
        return f"verify-{self.run_id}-no-such-{what}"

    def label(self, ext: str) -> str:
        return f"{MARKER} {ext} (delete me)"

    def company(self) -> dict[str, Any]:
        ext = self.external_id()
        return {
            "externalId": ext,
            "name": self.label(ext),
            "domain": f"{ext}.{DOMAIN}",
            "website": f"https://{ext}.{DOMAIN}",
            "industry": "Software",
            "numberOfEmployees": 42,
            "companyNetworkUrl": f"https://network.{DOMAIN}/company/{ext}",
            "description": "Created by `emulator verify`; safe to delete.",
        }

    def contact(self) -> dict[str, Any]:
        ext = self.external_id()
        return {
            "externalId": ext,
            "email": f"{ext}@{DOMAIN}",
            "firstName": "Verify",
            "lastName": f"Probe {ext} (delete me)",
            "fullName": f"Verify Probe {ext} (delete me)",
            "title": MARKER,
            "networkUrl": f"https://network.{DOMAIN}/in/{ext}",
            "company": f"{MARKER} {self.run_id}",
        }

    def record(self, kind: str) -> dict[str, Any]:
        return self.company() if kind == "companies" else self.contact()

    def records(self, kind: str, n: int) -> list[dict[str, Any]]:
        return [self.record(kind) for _ in range(n)]

    def engagement(self) -> dict[str, Any]:
        """Engagement values under user-configured names, plus names no CRM has heard of."""
        return {
            "verifyEngagementStatus": "Message Sent (1/3) - EMAIL",
            "verifySequenceStatus": "Ongoing",
            "campaignOpens": "2",
            "campaignReplyAnalysis": "No",
            f"verifyUnknownField_{self.run_id}": "any field name must be stored",
        }

    def activity(
        self, type_: str, direction: str, contact: str | None, company: str | None
    ) -> dict[str, Any]:
        subject = (
            f"[1/3] [FROM Verify Probe Ltd] Verify Probe {self.run_id}"
            if direction == "OUTBOUND"
            else f"[{MARKER} {self.run_id}] Verify Probe {self.run_id}"
        )
        body: dict[str, Any] = {
            "type": type_,
            "direction": direction,
            "subject": subject,
            "body": f"<p>{self.label(self.external_id())}</p>",
            "occurredAt": "2026-01-05T10:00:00.000Z",
            "metadata": {
                "messageId": f"verify-{self.run_id}",
                "sequenceIndex": 1,
                "sequenceMessageCount": 3,
            },
        }
        if contact:
            body["contactId"] = contact
        if company:
            body["companyId"] = company
        return body

    def task(self, contact: str | None, company: str | None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "subject": f"{self.label(self.external_id())}: follow up",
            "description": "Created by `emulator verify`; safe to delete.",
            "type": "call",
            "dueDate": "2026-01-06T09:00:00.000Z",
        }
        if contact:
            body["contactId"] = contact
        if company:
            body["companyId"] = company
        return body

    def auth_body(self, endpoint: str) -> Any:
        """A plausible body for each endpoint, sent with a missing or wrong key."""
        match endpoint:
            case "POST /contacts" | "POST /contacts/sync":
                return {"contacts": [self.contact()]}
            case "POST /companies" | "POST /companies/sync":
                return {"companies": [self.company()]}
            case "PUT /contacts" | "PUT /companies":
                return {
                    endpoint.split("/")[1]: [
                        {"crmId": self.absent_id("record"), "verifyField": "x"}
                    ]
                }
            case "POST /associations":
                return {
                    "associations": [
                        {
                            "contactCRMId": self.absent_id("contact"),
                            "companyCRMId": self.absent_id("company"),
                        }
                    ]
                }
            case "POST /activities":
                return self.activity("EMAIL", "OUTBOUND", None, None)
            case "POST /tasks":
                return self.task(None, None)
            case "PATCH /tasks/:taskId":
                return {"completed": True}
            case "POST /tasks/batch":
                return {"ids": [self.absent_id("task")]}
            case "PATCH /tasks/batch":
                return {"ids": [self.absent_id("task")], "completed": True}
            case _:
                return None

    def path(self, endpoint: str) -> tuple[str, str]:
        """(method, path) to call for a spec endpoint (a task id no CRM issued for :taskId)."""
        method, path = endpoint.split(" ")
        return method, path.replace(":taskId", self.absent_id("task"))

    def invalid_bodies(
        self, endpoint: str, problem: str, task_ids: list[str]
    ) -> list[tuple[str, Any]]:
        """(what is wrong, body) of bodies the spec calls invalid: "missing-field" or "wrong-type".

        `task_ids` are tasks the CRM created (so a 404 cannot stand in for the 400).
        """
        method, path = endpoint.split(" ")
        kind = path.strip("/").split("/")[0]
        tasks = task_ids or [self.absent_id("task")]
        missing = problem == "missing-field"
        if kind in ("companies", "contacts"):
            key = "crmId" if method == "PUT" else "externalId"
            item = (
                {"crmId": self.absent_id("record"), "verifyField": "x"}
                if method == "PUT"
                else self.record(kind)
            )
            if missing:
                return [
                    (f"no `{kind}`", {}),
                    (
                        f"an item without `{key}`",
                        {kind: [{k: v for k, v in item.items() if k != key}]},
                    ),
                ]
            return [
                (f"`{kind}` an object, not an array", {kind: item}),
                (f"`{key}` a number", {kind: [{**item, key: 42}]}),
            ]
        match endpoint:
            case "POST /associations":
                if missing:
                    return [("no `associations`", {})]
                return [("`associations` a string", {"associations": MARKER})]
            case "POST /activities":
                sent = self.activity("EMAIL", "OUTBOUND", None, None)
                if missing:
                    return [("no `type`", {k: v for k, v in sent.items() if k != "type"})]
                return [("`type` a number", {**sent, "type": 42})]
            case "POST /tasks":
                task = self.task(None, None)
                if missing:
                    return [("no `subject`", {k: v for k, v in task.items() if k != "subject"})]
                return [("`subject` a number", {**task, "subject": 42})]
            case "PATCH /tasks/:taskId":
                if missing:
                    return [("no `completed`", {})]
                return [("`completed` a string", {"completed": "yes"})]
            case "POST /tasks/batch":
                if missing:
                    return [("no `ids`", {})]
                return [("`ids` a string", {"ids": tasks[0]})]
            case "PATCH /tasks/batch":
                if missing:
                    return [("no `ids`", {"completed": True}), ("no `completed`", {"ids": tasks})]
                return [
                    ("`ids` a string", {"ids": tasks[0], "completed": True}),
                    ("`completed` a string", {"ids": tasks, "completed": "yes"}),
                ]
        raise ValueError(f"{endpoint} takes no body")
