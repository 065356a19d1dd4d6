"""The tasks phase: the tasks of the campaigns' TASK steps created, read back, completed.

Completions go in two groups, each by PATCH /tasks/batch (100 a call), or PATCH /tasks/:taskId
when the group holds one task: first the tasks this run created that were completed on the
platform before (the CRM opens every task it creates, so they need no read-back), then, after
the read-back, the tasks created by earlier runs and completed on the platform since (a read-back
that finds one completed or deleted on the CRM side saves its PATCH). The read-back's calls go
out `in_flight` at once; their answers are handled one by one in the order asked. An id a
POST /tasks/batch answer leaves out is asked once more with GET /tasks/:taskId before it is
taken as unknown to the CRM (never asked again)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from functools import partial
from operator import itemgetter

from emulator.exporter import listing, shapes
from emulator.exporter import plan as p
from emulator.exporter import records as rec
from emulator.exporter import task_checks as tc
from emulator.exporter.client import Exchange
from emulator.exporter.context import RunContext
from emulator.exporter.phases.activities import crm_id_writer, post_one, send_all, sendable
from emulator.exporter.plan import Finding
from emulator.exporter.sends import SendLog
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
        created_completed: set[int] = set()
        async with listing.listed(ctx.store, rec.list_tasks_to_create, contacts) as listed:
            reader = partial(rec.read_tasks_to_create, listing=listed)
            rows = sendable(
                ctx,
                "tasks",
                reader,
                itemgetter(0),
                lambda row: (row[0], row[2], row[1].get("companyId")),
            )
            crm_ids = await crm_id_writer(ctx, "tasks", platform_tasks.set_crm_ids)
            create = partial(create_task, ctx, crm_ids, created_completed)
            await send_all(ctx, rows, create, crm_ids, itemgetter(0))
        if created_completed:
            await complete_tasks(ctx, lambda task_id: task_id in created_completed)
        # Read back first: a task completed or lost on the CRM side needs no PATCH.
        await read_back_tasks(ctx)
        await complete_tasks(ctx, lambda task_id: task_id not in created_completed)


async def create_task(
    ctx: RunContext, crm_ids: SendLog, created_completed: set[int], row: rec.TaskRow
) -> None:
    """POST /tasks for one platform task; one completed on the platform is noted, to be
    completed on the CRM once the creations are done."""
    task_id, body, _, campaign_owner, completed, contact_id, _ = row
    body = shapes.with_owner(dict(body), ctx.owner_for(campaign_owner))
    crm_id = await post_one(ctx, "tasks", body, task_id, contact_id, crm_ids)
    if completed and crm_id is not None:
        created_completed.add(task_id)


async def read_back_tasks(ctx: RunContext) -> None:
    """Ask the CRM for every task it holds open as far as the platform knows (GET for one,
    POST /tasks/batch by 100 for more): completed there -> completed on the platform;
    unknown there -> reported once and never asked again."""
    todo: list[tuple[int, str]] = await ctx.store.read(rec.read_tasks_to_read_back)
    by_crm = {crm_id: task_id for task_id, crm_id in todo}
    rb = ctx.report.taskReadBack
    check = tc.READ_ONE if len(todo) == 1 else "POST /tasks/batch"
    chunks = list(p.chunks(todo, 100))
    async with asking(ctx, check, chunks) as answers:
        for chunk, answer in zip(chunks, answers, strict=True):
            rb.asked += len(chunk)
            await read_back_chunk(ctx, check, chunk, await answer, by_crm)


@asynccontextmanager
async def asking(
    ctx: RunContext, check: str, chunks: Sequence[Sequence[tuple[int, str]]]
) -> AsyncIterator[list[asyncio.Task[Exchange]]]:
    """The read-back's calls, one per chunk, `in_flight` at once (the CRM reads the next
    chunks while this side handles the first answers), as tasks in chunk order; the ones
    still running when the block ends (a StopExport, say) are cancelled."""
    gate = asyncio.Semaphore(ctx.in_flight)

    async def ask(chunk: Sequence[tuple[int, str]]) -> Exchange:
        asked = [crm_id for _, crm_id in chunk]
        async with gate:
            if check == tc.READ_ONE:
                return await ctx.call(check, "GET", f"/tasks/{asked[0]}")
            return await ctx.call(check, "POST", "/tasks/batch", {"ids": asked})

    tasks = [asyncio.create_task(ask(chunk)) for chunk in chunks]
    try:
        yield tasks
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def read_back_chunk(
    ctx: RunContext,
    check: str,
    chunk: Sequence[tuple[int, str]],
    ex: Exchange,
    by_crm: dict[str, int],
) -> None:
    """One read-back answer: tasks completed on the CRM side completed on the platform,
    unknown ones remembered, each finding and failure reported."""
    rb, stats = ctx.report.taskReadBack, ctx.report.phases["tasks"]
    asked = [crm_id for _, crm_id in chunk]
    body, reason = (None, None) if tc.task_gone(check, ex.status) else ctx.answer(ex, check)
    answer = (
        tc.answered_tasks(check, ex.status, body) if reason is None else tc.TaskAnswer(None, reason)
    )
    for f in answer.findings:
        ctx.finding(f, ex)
    if answer.tasks is None:
        for task_id, _ in chunk:
            ctx.fail("tasks", "task read-back", str(task_id), answer.failed or ex.describe())
        return
    found = tc.plan_read_back(asked, answer.tasks, check)
    for f in found.findings:
        ctx.finding(f, ex)
    if check == "POST /tasks/batch" and found.unknown:
        await confirm_unknown(ctx, found, ex, by_crm)
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


async def confirm_unknown(
    ctx: RunContext, found: tc.ReadBackPlan, batch: Exchange, by_crm: dict[str, int]
) -> None:
    """Ask GET /tasks/:taskId for each id the batch answer left out: 404 confirms it unknown;
    a task answered means the batch omitted a task the CRM holds (a violation), read as
    answered; no usable answer fails that task's read-back this run (asked again next run)."""
    unknown, found.unknown = found.unknown, []
    for crm_id in unknown:
        ex = await ctx.call(tc.READ_ONE, "GET", f"/tasks/{crm_id}")
        if tc.task_gone(tc.READ_ONE, ex.status):
            found.unknown.append(crm_id)
            continue
        body, reason = ctx.answer(ex, tc.READ_ONE)
        one = tc.plan_read_back([crm_id], [body], tc.READ_ONE) if reason is None else None
        if one is None or one.unknown:
            why = reason or f"GET /tasks/{crm_id} answered no task"
            ctx.fail("tasks", "task read-back", str(by_crm[crm_id]), why)
            continue
        for f in one.findings:
            ctx.finding(f, ex)
        ctx.finding(
            Finding(
                "violation",
                "POST /tasks/batch",
                "left out a task it holds (GET /tasks/:taskId answers it)",
                f"task {by_crm[crm_id]} (CRM task {crm_id})",
            ),
            batch,
        )
        found.completed.update(one.completed)
        found.open |= one.open


async def complete_tasks(ctx: RunContext, group: Callable[[int], bool]) -> None:
    """Complete on the CRM the tasks of a group (`group(task id)`) completed on the platform
    and not yet on the CRM: PATCH /tasks/batch by 100, PATCH /tasks/:taskId for one."""
    stats = ctx.report.phases["tasks"]
    due: list[tuple[int, str]] = await ctx.store.read(rec.read_tasks_to_complete)
    todo = [t for t in due if group(t[0])]
    done: list[int] = []
    for chunk in p.chunks(todo, 100):
        done.extend(await complete_chunk(ctx, chunk, single=len(todo) == 1))
    stats.updated += len(done)
    await ctx.write(partial(platform_tasks.mark_crm_completed, ids=done))


async def complete_chunk(
    ctx: RunContext, chunk: Sequence[tuple[int, str]], *, single: bool
) -> list[int]:
    """One PATCH for (task id, CRM task id) pairs; answers the task ids the CRM completed
    (each other one is failed with its reason)."""
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
    done: list[int] = []
    for task_id, crm_id in chunk:
        why = reason if plan is None else plan.failed.get(crm_id)
        if why is None:
            done.append(task_id)
        else:
            ctx.fail("tasks", "task completion", str(task_id), why)
    return done
