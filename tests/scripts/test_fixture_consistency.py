"""Generated fixtures never show engagement values that contradict the member's sequence state
and activity (issue 14): over several seeds, every contact exported to the reference CRM
carries an engagement status and sequence status its own activity list agrees with."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from emulator.app import create_app
from emulator.platform.engagement import engagement_rank
from tests.conftest import make_settings, open_client
from tests.processes import generated_fixtures
from tests.simulation.crm_link.autosync_harness import crm_all, export_in_process

pytestmark = pytest.mark.anyio

SENT = ("Message sent", "InMail sent", "Email sent", "Connection request sent")
RECEIVED = ("Message received", "InMail received", "Email received")


def generate(out: Path, seed: int) -> Path:
    return generated_fixtures(out, contacts=80, companies=12, campaigns=6, seed=seed)


def contradictions(record: dict[str, Any]) -> list[str]:
    """What is wrong between one CRM contact's engagement fields and its activity list."""
    fields = record["fields"]
    status = fields.get("platform_engagement_status")
    sequence = fields.get("platform_sequence_status")
    if status is None:
        return []
    log = [a for a in (fields.get("platform_activities") or "").split(", ") if a]
    wrong = []
    if not log and (status, sequence) != ("Added to Campaign", "Not Started"):
        wrong.append(f"no activity but {status!r} / {sequence!r}")
    if any(a in SENT for a in log) and (status == "Added to Campaign" or sequence == "Not Started"):
        wrong.append(f"{log} beside {status!r} / {sequence!r}")
    if any(a in RECEIVED for a in log) and not (
        status.startswith("Message Replied") and sequence == "Replied"
    ):
        wrong.append(f"a reply in {log} beside {status!r} / {sequence!r}")
    if engagement_rank(status)[0] < 0:
        wrong.append(f"{status!r} is not an engagement value")
    replies = fields.get("platform_reply_analysis")
    if replies is not None and (replies != "No") != any(a in RECEIVED for a in log):
        wrong.append(f"reply analysis {replies!r} beside {log}")
    return wrong


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
async def test_exported_engagement_agrees_with_activity(tmp_path: Path, seed: int) -> None:
    directory = generate(tmp_path / f"seed-{seed}", seed)
    app = create_app(make_settings(fixtures=str(directory)))
    async with open_client(app) as client:
        await export_in_process(app)
        contacts = await crm_all(client, "contacts")
        checked = [c for c in contacts if c["fields"].get("platform_engagement_status")]
        assert checked, "the set has campaign members in the CRM"
        assert any(c["fields"].get("platform_activities") for c in checked)
        problems = {c["externalId"]: contradictions(c) for c in checked}
        assert not {k: v for k, v in problems.items() if v}


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_generated_tasks_make_one_export_call_every_endpoint(
    tmp_path: Path, seed: int
) -> None:
    """Generated sets hold tasks completed on the platform (sent and not yet sent) and tasks
    completed on the CRM, so one export calls all 15 Part A endpoints."""
    directory = generate(tmp_path / f"seed-{seed}", seed)
    tasks = json.loads((directory / "tasks.json").read_text())
    crm_tasks = json.loads((directory / "crm.json").read_text())["tasks"]
    done_on_platform = [t for t in tasks if t["completedAt"]]
    assert {t["crmTaskId"] is None for t in done_on_platform} == {True, False}
    assert any(t["completedAt"] for t in crm_tasks)
    app = create_app(make_settings(fixtures=str(directory)))
    async with open_client(app) as _:
        report = await export_in_process(app)
        idle = [n for n, e in report.endpoints.items() if e.status != "exercised"]
        assert idle == [] and report.exitCode == 0
