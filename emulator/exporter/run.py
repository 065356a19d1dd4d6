"""The export sequence of decisions.md §3: health, users, companies, contacts, associations,
activities, tasks, engagement; real HTTP to any CRM, platform writes one hop per batch."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from operator import itemgetter
from typing import Any
from urllib.parse import urljoin

from emulator.exporter import engagement as eng
from emulator.exporter import plan as p
from emulator.exporter import properties as rule
from emulator.exporter import records as rec
from emulator.exporter import shapes
from emulator.exporter import task_checks as tc
from emulator.exporter.client import (
    CrmClient,
    Exchange,
    MalformedBody,
    StopExport,
)
from emulator.exporter.context import RunContext, json_or_none
from emulator.exporter.journal import Coalescer
from emulator.exporter.plan import Finding, Kind
from emulator.exporter.report import (
    CLEARED_CAP,
    ClearedField,
    FailedRecord,
    Report,
    exit_code,
)

STREAM_PAGE = 500  # activity and task rows per read hop
UNKNOWN_IDS_CAP = 200  # CRM task ids named in the report's read-back section (all are counted)


def resolve_crm_url(crm_url: str, server_base: str | None) -> str:
    """A relative crmUrl ("/crm") means this emulator's own CRM: join it to the server's URL."""
    if crm_url.startswith(("http://", "https://")):
        return crm_url
    if not server_base:
        raise ValueError(f"crmUrl {crm_url!r} is relative and there is no server to resolve it against")
    return urljoin(server_base.rstrip("/") + "/", crm_url.lstrip("/"))


class Exporter(RunContext):
    """One export run against one CRM: its phases in sequence; `run()` answers the finished report."""

    # -- the run -------------------------------------------------------------------------------

    async def run(self) -> Report:
        """The whole export sequence of decisions.md §3."""
        self.totals = await self.store.read(
            lambda c: {k: rec.count(c, k) for k in ("companies", "contacts")}  # type: ignore[misc]
        )
        self.learned = {"companies": set(), "contacts": set()}

        async def sequence() -> None:
            await self._health()
            await self._users()
            await self._records("companies")
            await self._records("contacts")
            await self._associations()
            await self._activities()
            await self._tasks()
            await self._engagement()

        return await self._session(sequence)

    async def push_events(
        self,
        contacts: Sequence[int],
        companies: Sequence[int],
        *,
        owner_selection: bool | None = None,
    ) -> Report:
        """The incremental push of auto-sync: activities, tasks and engagement of the given
        platform records only (task completions of every record), no health check, no record
        sync. `owner_selection` carries GET /users' verdict from an earlier run (None: ask).

        Records left with something unsent are in `unfinished`; a CRM that does not answer
        at all aborts the push at once (status "aborted"), so a down CRM costs one call.
        """
        self.stop_when_unreachable = True

        async def sequence() -> None:
            if owner_selection is None:
                await self._users()
            else:
                self.owner_enabled = self.report.ownerSelection = owner_selection
            await self._activities(contacts)
            await self._tasks(contacts)
            await self._engagement(contacts, companies)

        return await self._session(sequence)

    async def export_records(
        self,
        contacts: Sequence[int],
        companies: Sequence[int],
        *,
        owner_selection: bool | None = None,
    ) -> Report:
        """Export only the given platform records (an actions run's EXPORT_TO_CRM): health,
        users (unless `owner_selection` is known), companies, contacts, associations."""
        self.record_ids = {"contacts": contacts, "companies": companies}
        self.totals = {"contacts": len(contacts), "companies": len(companies)}
        # It syncs its records, so like a full run it sends only CRM ids it learnt.
        self.learned = {"companies": set(), "contacts": set()}

        async def sequence() -> None:
            await self._health()
            if owner_selection is None:
                await self._users()
            else:
                self.owner_enabled = self.report.ownerSelection = owner_selection
            if companies:
                await self._records("companies")
            if contacts:
                await self._records("contacts")
            await self._associations()

        return await self._session(sequence)

    def _client(self) -> CrmClient:
        c = self.conn
        return CrmClient(
            c.crmUrl, c.apiKey, c.apiKeyHeader, verify=c.verify, ca_file=c.caFile,
            timeout=c.timeoutSeconds, policy=self.policy, journal=self.journal.add,
            transport=self.transport, max_connections=self.in_flight,
        )

    async def _session(self, sequence: Callable[[], Awaitable[None]]) -> Report:
        """Run `sequence` with a client open; a stop aborts it; the report is finished."""
        report = self.report
        t0 = time.perf_counter()
        status = "ok"
        try:
            async with self._client() as self.client:
                await sequence()
        except StopExport as exc:
            status, report.message = "aborted", str(exc)
            self._not_attempted(str(exc))
        finally:
            await self.flush_journal()
            report.finishedAt = self.now()
            report.seconds = round(time.perf_counter() - t0, 4)
        # Status and exit code change together, after the last await: a reader polling the
        # report never sees it finished without its exit code.
        report.status = status
        report.exitCode = exit_code(report)
        if report.status == "ok" and report.exitCode:
            report.status = "failed"
        return report

    def _not_attempted(self, why: str) -> None:
        """After a stop, every record no batch reached is failed, so none is lost."""
        for kind in ("companies", "contacts"):
            s = self.report.phases[kind]
            left = self.totals.get(kind, 0) - (s.created + s.updated + s.unchanged + s.failed)
            if left > 0:
                s.failed += left
                self.report.failed.append(FailedRecord(
                    kind=kind, id=None, reason=f"{left} record(s) not exported: {why}", phase=kind,
                ))

    async def _health(self) -> None:
        with self.timed("health"):
            ex = await self.call("GET /health", "GET", "/health")
            if ex.status == 0:
                raise StopExport(f"CRM unreachable at {self.conn.crmUrl}: {ex.error}")
            if not ex.ok:
                raise StopExport(f"CRM health check failed: GET /health answered {ex.status}")
            try:
                body = ex.json()
            except MalformedBody as exc:
                body = None
                self.finding(Finding("warning", "GET /health", "answered a body that is not JSON", str(exc)), ex)
            for f in p.check_health(body):
                self.finding(f, ex)

    async def _users(self) -> None:
        with self.timed("users") as stats:
            ex = await self.call("GET /users", "GET", "/users")
            users = p.plan_users(ex.status, json_or_none(ex) if ex.ok else None, self.conn.ownerId, ex.error)
            for f in users.findings:
                self.finding(f, ex)
            self.owner_enabled = users.owner_selection
            if users.users is not None:
                self.report.users = stats.received = users.users
            self.report.ownerSelection = self.owner_enabled

    # -- companies and contacts ----------------------------------------------------------------

    def _as_sent(self, kind: Kind, row: dict[str, Any]) -> dict[str, Any]:
        if kind == "companies":
            return shapes.company_as_sent(row)
        return shapes.contact_as_sent(row, row.get("companyName"))

    def _create_item(self, kind: Kind, row: dict[str, Any]) -> dict[str, Any]:
        if kind == "companies":
            item = shapes.company_create_item(row, self.owner_id)
        else:
            item = shapes.with_owner(self._as_sent(kind, row), self.owner_id)
        return item if self.shape_item is None else self.shape_item(kind, item, False)

    async def _records(self, kind: Kind) -> None:
        with self.timed(kind):
            self.progress(kind, 0, self.totals.get(kind, 0))
            ids = None if self.record_ids is None else self.record_ids[kind]
            batches = self.pages(partial(rec.read_batch, kind=kind, ids=ids), itemgetter("id"), self.batch_size)
            await self.bounded(batches, partial(self._record_batch, kind))

    async def _record_batch(self, kind: Kind, rows: list[dict[str, Any]]) -> None:
        stats = self.report.phases[kind]
        by_ext = {str(r["id"]): r for r in rows}
        stats.sent += len(rows)
        sync_check = f"POST /{kind}/sync"
        sent = {ext: self._as_sent(kind, r) for ext, r in by_ext.items()}
        ex = await self.call(sync_check, "POST", f"/{kind}/sync", {kind: list(sent.values())})
        body, reason = self.answer(ex, sync_check)
        if reason is not None:
            for ext, row in by_ext.items():
                self.fail_record(kind, row, reason)
            await self.flush_journal()
            self.advance(kind)
            return
        sync = p.plan_sync(kind, list(by_ext), body)
        for f in sync.findings:
            self.finding(f, ex)
        failed: dict[str, str] = dict(sync.failed)
        updates: list[rec.RecordUpdate] = []
        put_items, put_asked = [], []
        for ext, match in sync.matched.items():
            row = by_ext[ext]
            update = rec.RecordUpdate(id=row["id"], crm_id=match.crm_id)
            if match.properties is not None:
                change = rule.apply_properties(kind, row, row["customFields"], row["synced"], match.properties)
                update.columns = rec.with_keys(kind, change.columns, row)
                if change.custom != row["customFields"]:
                    update.custom = change.custom
                if set(change.synced) != set(row["synced"]):
                    update.synced = change.synced
                for c in change.cleared:
                    self._cleared(kind, row["id"], c, ex)
                row = {**row, **change.columns, "customFields": change.custom}
            updates.append(update)
            item = self._as_sent(kind, row) if match.properties is not None else sent[ext]
            put_item = shapes.update_item(item, match.crm_id)
            put_items.append(put_item if self.shape_item is None else self.shape_item(kind, put_item, True))
            put_asked.append((ext, match.crm_id))
        created: dict[str, str] = {}
        if sync.new:
            check = f"POST /{kind}"
            ex2 = await self.call(check, "POST", f"/{kind}", {kind: [self._create_item(kind, by_ext[e]) for e in sync.new]})
            body2, reason = self.answer(ex2, check)
            if reason is not None:
                failed.update({e: reason for e in sync.new})
            else:
                cp = p.plan_create(kind, sync.new, ex2.status, body2)
                for f in cp.findings:
                    self.finding(f, ex2)
                failed.update(cp.failed)
                created = cp.created
        updated: set[str] = set()
        if put_items:
            check = f"PUT /{kind}"
            ex3 = await self.call(check, "PUT", f"/{kind}", {kind: put_items})
            body3, reason = self.answer(ex3, check)
            if reason is not None:
                failed.update({e: reason for e, _ in put_asked})
            else:
                up = p.plan_update(kind, put_asked, body3)
                for f in up.findings:
                    self.finding(f, ex3)
                failed.update(up.failed)
                updated = up.updated
        updates += [rec.RecordUpdate(id=by_ext[e]["id"], crm_id=c) for e, c in created.items()]
        now = self.now()
        await self.write(lambda conn: rec.write_batch(conn, kind, updates, now))
        stats.created += len(created)
        stats.updated += len(updated)
        if self.learned is not None:
            self.learned[kind].update(by_ext[e]["id"] for e in (*sync.matched, *created))
        for ext, why in failed.items():
            self.fail_record(kind, by_ext[ext], why)
        if kind == "contacts":
            crm_ids = {**{e: m.crm_id for e, m in sync.matched.items()}, **created}
            for ext in (*created, *updated):
                row = by_ext[ext]
                company = row.get("companyCRMId")
                if not company or ext in failed or self.held_back(
                    "associations", f"association of contact {ext}", ("companies", row["companyId"])
                ):
                    continue
                self.pairs.append((crm_ids[ext], company))
        self.advance(kind)

    def _cleared(self, kind: str, record_id: int, c: rule.Cleared, ex: Exchange) -> None:
        self.report.clearedTotal += 1
        if len(self.report.cleared) < CLEARED_CAP:
            self.report.cleared.append(
                ClearedField(kind=kind, id=record_id, field=c.name, previous=c.previous, core=c.core)
            )
        if c.core:
            self.finding(
                Finding("warning", f"POST /{kind}/sync", f"sync-back cleared core field `{c.name}`",
                        f"{kind} {record_id}"),
                ex,
            )

    # -- associations, activities, tasks -------------------------------------------------------

    async def _associations(self) -> None:
        with self.timed("associations") as stats:
            pairs, self.pairs = self.pairs, []
            for chunk in p.chunks(pairs, 100):
                items = [{"contactCRMId": a, "companyCRMId": b} for a, b in chunk]
                stats.sent += len(items)
                ex = await self.call("POST /associations", "POST", "/associations", {"associations": items})
                body, reason = self.answer(ex, "POST /associations")
                if reason is not None:
                    for a, _ in chunk:
                        self.fail("associations", "associations", a, reason)
                    continue
                links = p.plan_associations([a for a, _ in chunk], body)
                for f in links.findings:
                    self.finding(f, ex)
                for contact, why in links.failed:
                    self.fail("associations", "associations", contact, why)
                stats.created += links.created
            await self.flush_journal()

    async def _activities(self, contacts: Sequence[int] | None = None) -> None:
        with self.timed("activities"):
            reader = partial(rec.read_messages, contacts=contacts)
            rows = self._sendable("activities", reader, lambda row: row[0].id,
                                  lambda row: (row[0].id, row[1], row[2]))
            await self.bounded(rows, self._activity)

    async def _tasks(self, contacts: Sequence[int] | None = None) -> None:
        with self.timed("tasks"):
            await self.write(partial(rec.ensure_platform_tasks, contacts=contacts))
            reader = partial(rec.read_tasks_to_create, contacts=contacts)
            rows = self._sendable("tasks", reader, itemgetter(0),
                                  lambda row: (row[0], row[2], row[1].get("companyId")))
            await self.bounded(rows, self._task)
            # Read back first: a task completed or lost on the CRM side needs no PATCH.
            await self._read_back_tasks()
            await self._complete_tasks()

    async def _sendable(
        self, phase: str, reader: Callable[..., list[Any]], key: Callable[[Any], int],
        ids: Callable[[Any], tuple[int, str | None, str | None]],
    ) -> Any:
        """Rows of `reader` in id order, STREAM_PAGE per read hop, less those that must wait
        (counted skipped; a later run sends them): those whose contact is not in the CRM yet,
        and, in a full run, those that would carry a CRM id of their contact or company
        (platform ids last in the row) that this run did not learn. `ids(row)` answers the
        row's own id and the contact and company CRM ids it would carry."""
        stats = self.report.phases[phase]
        dependent = "activity" if phase == "activities" else "task"
        async for rows in self.pages(reader, key, STREAM_PAGE):
            for row in rows:
                own, contact_crm, company_crm = ids(row)
                contact_id, company_id = row[-2], row[-1]
                if contact_crm is None:
                    stats.skipped += 1
                elif not self.held_back(
                    phase, f"{dependent} {own}", ("contacts", contact_id),
                    ("companies", company_id if company_crm is not None else None),
                ):
                    yield row

    async def _activity(self, row: rec.MessageRow) -> None:
        view, contact, company, campaign_owner, contact_id, _ = row
        body = shapes.activity_body(view, contact, company, self.owner_for(campaign_owner))
        await self._post_one("activities", body, view.id, contact_id, self._activity_ids)

    async def _task(self, row: rec.TaskRow) -> None:
        task_id, body, _, campaign_owner, contact_id, _ = row
        body = shapes.with_owner(dict(body), self.owner_for(campaign_owner))
        await self._post_one("tasks", body, task_id, contact_id, self._task_ids)

    async def _post_one(
        self, phase: str, body: dict[str, Any], record_id: int, contact_id: int, crm_ids: Coalescer
    ) -> None:
        """POST /activities or /tasks for one platform row; a failure leaves its contact unfinished."""
        stats = self.report.phases[phase]
        stats.sent += 1
        check = f"POST /{phase}"
        ex = await self.call(check, "POST", f"/{phase}", body)
        crm_id = self._created(check, ex, phase, record_id)
        if crm_id is not None:
            # Stored at once: a crash after this line never sends the row twice.
            await crm_ids.add((crm_id, record_id))
            stats.created += 1
        else:
            self.unfinished["contacts"].add(contact_id)

    def _created(self, check: str, ex: Exchange, phase: str, record_id: int) -> str | None:
        body, reason = self.answer(ex, check)
        if reason is not None:
            self.fail(phase, phase, str(record_id), reason)
            return None
        created = tc.plan_created(check, body)
        for f in created.findings:
            self.finding(f, ex)
        if created.failed is not None:
            self.fail(phase, phase, str(record_id), created.failed)
        return created.crm_id

    async def _read_back_tasks(self) -> None:
        """Ask the CRM for every task it holds open as far as the platform knows (GET for one,
        POST /tasks/batch by 100 for more): completed there -> completed on the platform;
        unknown there -> reported once and never asked again."""
        todo: list[tuple[int, str]] = await self.store.read(rec.read_tasks_to_read_back)
        by_crm = {crm_id: task_id for task_id, crm_id in todo}
        rb, stats = self.report.taskReadBack, self.report.phases["tasks"]
        for chunk in p.chunks(todo, 100):
            asked = [crm_id for _, crm_id in chunk]
            rb.asked += len(asked)
            if len(todo) == 1:
                check = tc.READ_ONE
                ex = await self.call(check, "GET", f"/tasks/{asked[0]}")
            else:
                check = "POST /tasks/batch"
                ex = await self.call(check, "POST", "/tasks/batch", {"ids": asked})
            body, reason = (None, None) if tc.task_gone(check, ex.status) else self.answer(ex, check)
            answer = tc.answered_tasks(check, ex.status, body) if reason is None else tc.TaskAnswer(None, reason)
            for f in answer.findings:
                self.finding(f, ex)
            if answer.tasks is None:
                for task_id, _ in chunk:
                    self.fail("tasks", "task read-back", str(task_id), answer.failed or ex.describe())
                continue
            found = tc.plan_read_back(asked, answer.tasks, check)
            for f in found.findings:
                self.finding(f, ex)
            stats.received += len(found.completed) + len(found.open)
            rb.open += len(found.open)
            rb.completedOnCrm += len(found.completed)
            rb.unknown += len(found.unknown)
            for crm_id in found.unknown:
                if len(rb.unknownIds) < UNKNOWN_IDS_CAP:
                    rb.unknownIds.append(crm_id)
                self.finding(Finding(
                    "warning", check, "task unknown to the CRM: reported once, not asked again",
                    f"task {by_crm[crm_id]} (CRM task {crm_id})"), ex)
            await self.write(partial(
                rec.write_read_back, completed=[(by_crm[c], at) for c, at in found.completed.items()],
                gone=[(by_crm[c], c) for c in found.unknown], now=self.now(),
            ))

    async def _complete_tasks(self) -> None:
        stats = self.report.phases["tasks"]
        todo: list[tuple[int, str]] = await self.store.read(rec.read_tasks_to_complete)
        done: list[int] = []
        single = len(todo) == 1
        for chunk in p.chunks(todo, 100):
            if single:
                check = tc.COMPLETE_ONE
                ex = await self.call(check, "PATCH", f"/tasks/{chunk[0][1]}", {"completed": True})
            else:
                check = "PATCH /tasks/batch"
                ex = await self.call(check, "PATCH", "/tasks/batch", {"ids": [c for _, c in chunk], "completed": True})
            body, reason = self.answer(ex, check)
            plan = tc.plan_completion(check, [c for _, c in chunk], body) if reason is None else None
            for f in plan.findings if plan is not None else []:
                self.finding(f, ex)
            for task_id, crm_id in chunk:
                why = reason if plan is None else plan.failed.get(crm_id)
                if why is None:
                    done.append(task_id)
                else:
                    self.fail("tasks", "task completion", str(task_id), why)
        stats.updated += len(done)
        await self.write(lambda conn: conn.executemany(
            "UPDATE platform_tasks SET crmCompleted = 1 WHERE id = ?", [(t,) for t in done]))

    # -- engagement ----------------------------------------------------------------------------

    async def _engagement(
        self, contacts: Sequence[int] | None = None, companies: Sequence[int] | None = None
    ) -> None:
        """Engagement PUTs of every exported record, or of the given ones only."""
        with self.timed("engagement"):
            for kind, ids in (("contacts", contacts), ("companies", companies)):
                mapping = getattr(self.conn.engagementFields, kind)
                if mapping and (ids is None or ids):
                    put = partial(self._engagement_put, kind, mapping)
                    reader = partial(rec.read_engagement, kind=kind, ids=ids)
                    await self.bounded(self.pages(reader, itemgetter(0), self.batch_size), put)
            await self.flush_journal()

    async def _engagement_put(self, kind: Kind, mapping: dict[str, str], rows: Sequence[Any]) -> None:
        stats = self.report.phases["engagement"]
        items, asked = [], []
        for rid, crm_id, members, log in rows:
            if self.held_back("engagement", f"engagement of {kind} {rid}", (kind, rid)):
                continue
            item = eng.engagement_item(crm_id, eng.engagement_values(kind, members, log), mapping)
            if item is not None:
                items.append(item)
                asked.append((str(rid), crm_id))
        if not items:
            return
        stats.sent += len(items)
        check = f"PUT /{kind} (engagement)"
        ex = await self.call(check, "PUT", f"/{kind}", {kind: items})
        body, reason = self.answer(ex, check)
        failed = {rid: reason for rid, _ in asked} if reason is not None else {}
        if reason is None:
            up = p.plan_update(kind, asked, body)
            for f in up.findings:
                self.finding(f, ex, check)
            stats.updated += len(up.updated)
            failed = up.failed
        for rid, why in failed.items():
            self.fail("engagement", f"engagement {kind}", rid, why)
            self.unfinished[kind].add(int(rid))

