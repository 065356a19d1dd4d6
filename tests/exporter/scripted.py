"""End-to-end harness of the exporter's property tests: a platform app (the /v1 API over its
store), a CRM scripted per record and per batch, and the platform's state read back.

The expected values of the tests come from the spec's tables, written out here as the spec
words them, never from the exporter's own lists:

- interfaces.md, "Sync result item": the syncable property names given as common, per kind;
- interfaces.md, Part B Company and Contact: the platform fields the core ones are (decisions.md
  §3 names `domain`, `phone` and `email` core; `industry` and `mobilePhone` are platform
  fields of the same name).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx
import msgspec

from emulator.app import create_app
from emulator.exporter.report import Report
from emulator.fixtures import models as m
from emulator.state import Emulator
from tests.conftest import make_settings
from tests.exporter.harness import FakeCrm, run_export, small_fixtures

# interfaces.md "Sync result item": syncable property names given as common.
SPEC_COMMON: dict[str, frozenset[str]] = {
    "companies": frozenset(
        {
            "domain",
            "phone",
            "accountTier",
            "totalDeals",
            "lifetimeValue",
            "accountOwner",
            "industry",
            "tags",
            "lastActivityDate",
        }
    ),
    "contacts": frozenset(
        {
            "email",
            "phone",
            "mobilePhone",
            "leadScore",
            "lifecycleStage",
            "lastActivityDate",
            "owner",
            "dealValue",
            "tags",
        }
    ),
}
# The common names that are platform fields, by their /v1 name (Part B Company, Contact).
SPEC_CORE_V1: dict[str, dict[str, str]] = {
    "companies": {"domain": "domain", "phone": "phoneNumber", "industry": "industry"},
    "contacts": {"email": "professionalEmail", "phone": "phones", "mobilePhone": "mobilePhone"},
}
CRM_ID_V1 = {"companies": "companyCRMId", "contacts": "contactCRMId"}
KEEP = "fixtureOnly"  # a custom field no CRM synced: only an explicit null clears it
STALE = "stale-"  # CRM ids of an earlier CRM: this CRM never issued them
V1_KEY = "v1-key"
BATCH = 2
SIZES = {"companies": 5, "contacts": 7}  # 3 and 4 batches of BATCH


def custom_seed(kind: str) -> dict[str, Any]:
    """Every non-core common property set, and one custom field nobody synced."""
    values = {n: f"old-{n}" for n in SPEC_COMMON[kind] - SPEC_CORE_V1[kind].keys()}
    return {**values, KEEP: "kept"}


def fixtures() -> m.FixtureSet:
    """small_fixtures with every syncable value set, stale CRM ids, batches of BATCH, a /v1 key."""
    base = small_fixtures(SIZES["companies"], SIZES["contacts"])
    companies = [
        msgspec.structs.replace(
            c, customFields=custom_seed("companies"), companyCRMId=f"{STALE}co-{c.id}"
        )
        for c in base.companies
    ]
    contacts = [
        msgspec.structs.replace(
            c,
            customFields=custom_seed("contacts"),
            mobilePhone="+1 555 0177",
            contactCRMId=f"{STALE}ct-{c.id}",
        )
        for c in base.contacts
    ]
    assert base.connection is not None
    return msgspec.structs.replace(
        base,
        companies=companies,
        contacts=contacts,
        connection=msgspec.structs.replace(base.connection, batchSize=BATCH),
        apiKeys=[m.ApiKey(key=V1_KEY, name="tests", scopes=["ALL"])],
    )


Fate = Literal["match", "new", "error", "update_fail"]
Fault = Literal["500", "timeout", "malformed"]
Endpoint = Literal["sync", "create", "update"]


@dataclass
class Script:
    """What the CRM does: each record's fate and sync-back `properties` (None: no key), and
    whole-batch faults keyed by (kind, endpoint, batch index)."""

    fates: dict[str, list[Fate]]
    properties: dict[str, list[dict[str, Any] | None]]
    faults: dict[tuple[str, Endpoint, int], Fault] = field(default_factory=dict)

    def fate(self, kind: str, ext: str) -> Fate:
        return self.fates[kind][int(ext) - 1]


def batch_of(ext: str) -> int:
    return (int(ext) - 1) // BATCH


class ScriptedCrm(FakeCrm):
    """A FakeCrm whose sync, create and update answers follow a Script."""

    def __init__(self, script: Script) -> None:
        super().__init__(sync_answer=self.sync, faults=[self.batch_fault, self.writes])
        self.script = script

    def sync(self, kind: str, items: list[dict[str, Any]]) -> dict[str, Any]:
        results: list[dict[str, Any]] = []
        errors: list[dict[str, Any]] = []
        for item in items:
            ext = item["externalId"]
            fate = self.script.fate(kind, ext)
            if fate in ("match", "update_fail"):
                self.ids[kind][ext] = f"{kind}-{ext}"
                result: dict[str, Any] = {"externalId": ext, "crmId": f"{kind}-{ext}"}
                props = self.script.properties[kind][int(ext) - 1]
                if props is not None:
                    result["properties"] = props
                results.append(result)
            elif fate == "error":
                errors.append({"externalId": ext, "error": f"record {ext} is locked"})
        return {"results": results, "errors": errors}

    def batch_fault(self, request: httpx.Request) -> httpx.Response | None:
        path = request.url.path.removeprefix("/crm")
        kind = path.strip("/").split("/")[0]
        if kind not in SIZES:
            return None
        endpoint: Endpoint = (
            "sync" if path.endswith("/sync") else "create" if request.method == "POST" else "update"
        )
        items = json.loads(request.content)[kind]
        if "externalId" not in items[0]:
            return None  # an engagement PUT: not a records batch
        fault = self.script.faults.get((kind, endpoint, batch_of(items[0]["externalId"])))
        if fault == "500":
            return httpx.Response(500, json={"error": "internal", "message": "boom"})
        if fault == "timeout":
            raise httpx.ReadTimeout("scripted timeout", request=request)
        if fault == "malformed":
            return httpx.Response(200, content=b"<html>oops", headers={"content-type": "text/html"})
        return None

    def writes(self, request: httpx.Request) -> httpx.Response | None:
        path = request.url.path.removeprefix("/crm")
        kind = path.strip("/")
        if kind not in SIZES or request.method not in ("POST", "PUT"):
            return None
        items = json.loads(request.content)[kind]
        if request.method == "POST":
            results = []
            for item in items:
                ext = item["externalId"]
                self.ids[kind][ext] = f"{kind}-new-{ext}"
                results.append({"externalId": ext, "crmId": f"{kind}-new-{ext}"})
            return httpx.Response(201, json={"results": results})
        by_crm = {v: k for k, v in self.ids[kind].items()}
        return httpx.Response(
            200,
            json={
                "results": [
                    {
                        "crmId": i["crmId"],
                        "success": i["crmId"] in by_crm
                        and self.script.fate(kind, by_crm[i["crmId"]]) != "update_fail",
                        "error": "validation failed",
                    }
                    for i in items
                ]
            },
        )


@dataclass
class After:
    """The platform after the export: /v1 records by id, stored custom fields by id."""

    v1: dict[str, dict[int, dict[str, Any]]]
    custom: dict[str, dict[int, dict[str, Any]]]


@asynccontextmanager
async def platform_app() -> AsyncIterator[tuple[Emulator, httpx.AsyncClient]]:
    """A fresh platform app over `fixtures()`: its emulator, and a /v1 client of it."""
    app = create_app(make_settings(), fixtures())
    async with app.router.lifespan_context(app):
        emulator: Emulator = app.state.services.emulator
        # Every member is past the TASK step: tasks to create, activities to log.
        await emulator.db.execute("UPDATE campaign_members SET stepIndex = 3")
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://emulator.localhost", headers={"x-api-key": V1_KEY}
        ) as v1:
            yield emulator, v1


async def export_and_read(script: Script) -> tuple[Report, ScriptedCrm, After]:
    """Export to a CRM following `script`, then read the platform back (SQLite and /v1)."""
    crm = ScriptedCrm(script)
    async with platform_app() as (emulator, v1):
        report = await run_export(emulator, crm)
        after = After(v1={}, custom={})
        for kind, path in (("companies", "/v1/companies"), ("contacts", "/v1/contacts")):
            answer = await v1.get(path, params={"pageSize": "100"})
            assert answer.status_code == 200, answer.text
            after.v1[kind] = {r["id"]: r for r in answer.json()["data"]}
            rows = await emulator.db.fetchall(f"SELECT id, customFields FROM {kind}")
            after.custom[kind] = {rid: json.loads(text) if text else {} for rid, text in rows}
    return report, crm, after
