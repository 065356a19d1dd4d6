"""Tasks in an export: subjects rendered like message bodies, read-back of the CRM's tasks
(completed there -> completed on the platform; unknown -> reported once), completions whose
failure fails the run and its JUnit file."""

from __future__ import annotations

import json
from xml.etree import ElementTree as ET

import httpx
import msgspec
import pytest

from emulator.exporter.report import junit_xml
from emulator.fixtures import models as m
from emulator.state import Emulator
from tests.exporter.harness import TS, FakeCrm, open_platform, run_export, small_fixtures

pytestmark = pytest.mark.anyio
UNKNOWN = "task unknown to the CRM: reported once, not asked again"


async def past_the_task_step(platform: Emulator) -> None:
    await platform.db.execute("UPDATE campaign_members SET stepIndex = 3")


async def test_task_subject_and_description_are_rendered_for_the_contact() -> None:
    fixtures = small_fixtures()
    subject = "Call {{firstName}} at {{companyName}}"
    campaigns = []
    for campaign, content in zip(
        fixtures.campaigns, ("Ask {{firstName}} about the demo", None), strict=True
    ):
        steps = list(campaign.sequence)
        steps[1] = m.SequenceStep(
            type="TASK", taskType="CALL", taskSubject=subject, content=content
        )
        campaigns.append(msgspec.structs.replace(campaign, sequence=steps))
    emulator = await open_platform(msgspec.structs.replace(fixtures, campaigns=campaigns))
    try:
        await past_the_task_step(emulator)
        crm = FakeCrm()
        await run_export(emulator, crm)
        sent = {b["contactId"]: b for b in crm.bodies("POST", "/tasks")}
        contact_1 = crm.ids["contacts"]["1"]
        assert sent[contact_1]["subject"] == "Call F1 at Co 2"
        assert sent[contact_1]["description"] == "Ask F1 about the demo"
        contact_4 = crm.ids["contacts"]["4"]  # campaign 2, no company: the message bodies' fallback
        assert sent[contact_4]["subject"] == "Call F4 at your team"
        stored = await emulator.db.fetchone(
            "SELECT subject FROM platform_tasks WHERE contactId = 1 AND campaignId = 1"
        )
        assert stored == ("Call F1 at Co 2",)
        # The other campaign's step has no content: the description names the campaign.
        assert "Sequence task of campaign Quiet" in {b.get("description") for b in sent.values()}
    finally:
        await emulator.close()


async def test_read_back_completes_platform_tasks_and_reports_an_unknown_task_once(
    platform: Emulator,
) -> None:
    await past_the_task_step(platform)
    crm = FakeCrm()
    first = await run_export(platform, crm)
    assert first.exitCode == 0 and first.taskReadBack.asked == 6 and first.taskReadBack.open == 6
    rows = dict(await platform.db.fetchall("SELECT crmTaskId, id FROM platform_tasks"))
    done_crm, gone_crm = sorted(rows)[:2]
    crm.tasks[done_crm].update(completed=True, completedAt="2026-02-03T04:05:06.000Z")
    del crm.tasks[gone_crm]

    second = await run_export(platform, crm)
    assert second.exitCode == 0, second.failed
    rb = second.taskReadBack
    assert (rb.asked, rb.completedOnCrm, rb.open, rb.unknown) == (6, 1, 4, 1) and rb.unknownIds == [
        gone_crm
    ]
    task = await platform.db.fetchone(
        "SELECT completed, completedAt, crmCompleted FROM platform_tasks WHERE id = ?",
        (rows[done_crm],),
    )
    assert task == (1, "2026-02-03T04:05:06.000Z", 1)
    group = next(g for g in second.warnings if g.message == UNKNOWN)
    assert (
        group.count == 1
        and group.check == "POST /tasks/batch"
        and gone_crm in (group.examples[0].about or "")
    )
    assert not crm.bodies("PATCH", "/tasks/batch")  # completed on the CRM: nothing to complete
    # Left out of the batch answer, it was asked once more by itself: 404 confirmed it unknown.
    confirmations = [(m, p) for m, p, _ in crm.sent if p == f"/tasks/{gone_crm}"]
    assert confirmations == [("GET", f"/tasks/{gone_crm}")]

    third = await run_export(platform, crm)
    asked = [i for b in crm.bodies("POST", "/tasks/batch")[2:] for i in b["ids"]]
    assert gone_crm not in asked and done_crm not in asked and len(asked) == 4
    assert third.taskReadBack.unknown == 0 and not any(g.message == UNKNOWN for g in third.warnings)
    # Completing the lost task on the platform sends nothing for it either.
    await platform.db.execute(
        "UPDATE platform_tasks SET completed = 1 WHERE crmTaskId = ?", (gone_crm,)
    )
    fourth = await run_export(platform, crm)
    assert fourth.exitCode == 0
    assert [(m, p) for m, p, _ in crm.sent if p == f"/tasks/{gone_crm}"] == confirmations


async def test_a_single_open_task_is_read_back_with_get(platform: Emulator) -> None:
    crm = FakeCrm()
    await past_the_task_step(platform)
    await run_export(platform, crm)
    await platform.db.execute(
        "UPDATE platform_tasks SET crmCompleted = 1, completed = 1 WHERE id > 1"
    )
    crm_id = (await platform.db.fetchone("SELECT crmTaskId FROM platform_tasks WHERE id = 1"))[0]  # type: ignore[index]
    crm.tasks[crm_id].update(completed=True, completedAt=TS)
    report = await run_export(platform, crm)
    assert ("GET", f"/tasks/{crm_id}", None) in crm.sent
    assert (
        report.taskReadBack.completedOnCrm == 1 and report.checks["GET /tasks/:taskId"].calls == 1
    )
    assert await platform.db.fetchone("SELECT completed FROM platform_tasks WHERE id = 1") == (1,)


async def test_a_run_failing_on_task_completions_writes_a_junit_failure(platform: Emulator) -> None:
    def patch_fails(request: httpx.Request) -> httpx.Response | None:
        if request.method == "PATCH":
            return httpx.Response(500, json={"error": "boom", "message": "tasks are down"})
        return None

    crm = FakeCrm()
    await past_the_task_step(platform)
    await run_export(platform, crm)
    await platform.db.execute("UPDATE platform_tasks SET completed = 1")
    crm.faults.append(patch_fails)
    report = await run_export(platform, crm)
    assert report.exitCode == 1 and report.status == "failed"
    assert report.phases["tasks"].failed == 6
    assert {f.kind for f in report.failed} == {"task completion"}
    suite = ET.fromstring(junit_xml(report))
    assert int(suite.get("failures") or 0) > 0
    case = next(c for c in suite.iter("testcase") if c.get("name") == "tasks")
    assert "tasks are down" in (case.findtext("failure") or "")


async def test_a_read_back_of_several_batches_handles_each_answer_alone() -> None:
    """250 open tasks: three POST /tasks/batch calls (100, 100, 50), sent together; the
    middle one failing fails its 100 tasks' read-back only, and the other two answers still
    complete on the platform the tasks completed on the CRM side."""
    platform = await open_platform(small_fixtures(companies=5, contacts=250))
    try:
        await past_the_task_step(platform)
        crm = FakeCrm()
        assert (await run_export(platform, crm)).exitCode == 0
        rows = await platform.db.fetchall("SELECT id, crmTaskId FROM platform_tasks ORDER BY id")
        assert len(rows) == 250
        chunks = [rows[:100], rows[100:200], rows[200:]]
        for chunk in (chunks[0], chunks[2]):
            crm.tasks[chunk[5][1]].update(completed=True, completedAt=TS)
        middle = {crm_id for _, crm_id in chunks[1]}

        def refuse_the_middle_batch(request: httpx.Request) -> httpx.Response | None:
            batch = request.url.path.endswith("/tasks/batch") and request.method == "POST"
            if batch and set(json.loads(request.content)["ids"]) == middle:
                return httpx.Response(500, json={"error": "boom", "message": "down"})
            return None

        crm.faults.append(refuse_the_middle_batch)
        crm.sent.clear()
        report = await run_export(platform, crm)
        asked = [b["ids"] for b in crm.bodies("POST", "/tasks/batch")]
        assert sorted(map(len, asked)) == [50, 100, 100]
        assert sorted(asked) == sorted([[c for _, c in chunk] for chunk in chunks])
        rb = report.taskReadBack
        assert (rb.asked, rb.completedOnCrm, rb.open) == (250, 2, 148)
        failed = [f for f in report.failed if f.kind == "task read-back"]
        assert sorted(int(f.id or 0) for f in failed) == [task_id for task_id, _ in chunks[1]]
        done = await platform.db.fetchall(
            "SELECT id FROM platform_tasks WHERE completed = 1 ORDER BY id"
        )
        assert done == [(chunks[0][5][0],), (chunks[2][5][0],)]
    finally:
        await platform.close()
