"""The tasks phase: the tasks of the campaigns' TASK steps created, read back, completed."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from operator import itemgetter

from emulator.exporter import plan as p
from emulator.exporter import records as rec
from emulator.exporter import task_checks as tc
from emulator.exporter.context import RunContext
from emulator.exporter.phases.activities import crm_id_writer, send_all, sendable, task
from emulator.exporter.plan import Finding
from emulator.platform import tasks as platform_tasks

UNKNOWN_IDS_CAP = 200  # CRM task ids named in the report's read-back section (all are counted)


async def run(ctx: RunContext, contacts: Sequence[int] | None = None) -> None:
    """Have the platform bring its TASK-step tasks up to date, send the unsent ones (of
    `contacts` only, if given) to the CRM, then read back and complete every open one."""
    with ctx.timed("tasks"):
        # The platform's rule, applied before sending: a member past a TASK step has its task.
        await ctx.write(partial(platform_tasks.ensure_for_members, contacts=contacts))
        if ctx.on_progress is not None:  # a total to show (not read for auto-sync's pushes)
            count = partial(rec.count_tasks_to_create, contacts=contacts)
            ctx.totals["tasks"] = await ctx.store.read(count)
            ctx.progress("tasks", 0, ctx.totals["tasks"])
        reader = partial(rec.read_tasks_to_create, contacts=contacts)
        rows = sendable(
            ctx,
            "tasks",
            reader,
            itemgetter(0),
            lambda row: (row[0], row[2], row[1].get("companyId")),
        )
        crm_ids = await crm_id_writer(ctx, "tasks", platform_tasks.set_crm_ids)
        await send_all(ctx, rows, partial(task, ctx, crm_ids), crm_ids)
        # Read back first: a task completed or lost on the CRM side needs no PATCH.
        await read_back_tasks(ctx)
        await complete_tasks(ctx)


async def read_back_tasks(ctx: RunContext) -> None:
    """Ask the CRM for every task it holds open as far as the platform knows (GET for one,
    POST /tasks/batch by 100 for more): completed there -> completed on the platform;
    unknown there -> reported once and never asked again."""
    todo: list[tuple[int, str]] = await ctx.store.read(rec.read_tasks_to_read_back)
    by_crm = {crm_id: task_id for task_id, crm_id in todo}
    rb, stats = ctx.report.taskReadBack, ctx.report.phases["tasks"]
    for chunk in p.chunks(todo, 100):
        asked = [crm_id for _, crm_id in chunk]
        rb.asked += len(asked)
        if len(todo) == 1:
            check = tc.READ_ONE
            ex = await ctx.call(check, "GET", f"/tasks/{asked[0]}")
        else:
            check = "POST /tasks/batch"
            ex = await ctx.call(check, "POST", "/tasks/batch", {"ids": asked})
        body, reason = (None, None) if tc.task_gone(check, ex.status) else ctx.answer(ex, check)
        answer = (
            tc.answered_tasks(check, ex.status, body)
            if reason is None
            else tc.TaskAnswer(None, reason)
        )
        for f in answer.findings:
            ctx.finding(f, ex)
        if answer.tasks is None:
            for task_id, _ in chunk:
                ctx.fail("tasks", "task read-back", str(task_id), answer.failed or ex.describe())
            continue
        found = tc.plan_read_back(asked, answer.tasks, check)
        for f in found.findings:
            ctx.finding(f, ex)
        stats.received += len(found.completed) + len(found.open)
        rb.open += len(found.open)
        rb.completedOnCrm += len(found.completed)
        rb.unknown += len(found.unknown)
        for crm_id in found.unknown:
            if len(rb.unknownIds) < UNKNOWN_IDS_CAP:
                rb.unknownIds.append(crm_id)
            ctx.finding(
                Finding(
                    "warning",
                    check,
                    "task unknown to the CRM: reported once, not asked again",
                    f"task {by_crm[crm_id]} (CRM task {crm_id})",
                ),
                ex,
            )
        await ctx.write(
            partial(
                rec.write_read_back,
                completed=[(by_crm[c], at) for c, at in found.completed.items()],
                gone=[(by_crm[c], c) for c in found.unknown],
                now=ctx.now(),
            )
        )


async def complete_tasks(ctx: RunContext) -> None:
    stats = ctx.report.phases["tasks"]
    todo: list[tuple[int, str]] = await ctx.store.read(rec.read_tasks_to_complete)
    done: list[int] = []
    single = len(todo) == 1
    for chunk in p.chunks(todo, 100):
        if single:
            check = tc.COMPLETE_ONE
            ex = await ctx.call(check, "PATCH", f"/tasks/{chunk[0][1]}", {"completed": True})
        else:
            check = "PATCH /tasks/batch"
            ex = await ctx.call(
                check, "PATCH", "/tasks/batch", {"ids": [c for _, c in chunk], "completed": True}
            )
        body, reason = ctx.answer(ex, check)
        plan = tc.plan_completion(check, [c for _, c in chunk], body) if reason is None else None
        for f in plan.findings if plan is not None else []:
            ctx.finding(f, ex)
        for task_id, crm_id in chunk:
            why = reason if plan is None else plan.failed.get(crm_id)
            if why is None:
                done.append(task_id)
            else:
                ctx.fail("tasks", "task completion", str(task_id), why)
    stats.updated += len(done)
    await ctx.write(lambda conn: platform_tasks.mark_crm_completed(conn, done))
