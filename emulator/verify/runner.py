"""The probing run: calls every Part A endpoint and records each check's verdict. Calls go
through `emulator.outbound` (`Peer`): each within the --timeout deadline as a whole, answers
within the response cap, no redirect followed.

The CRM is a stranger here (this package never imports `emulator.crm`): everything is learned
over HTTP. Calls go one at a time, in catalogue order, so each check's exchanges are exactly
the calls it made.
"""

from __future__ import annotations

import asyncio
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import httpx
import msgspec

from emulator.outbound import VERIFY_DEADLINE, Peer, retry_after_seconds, tls_verify
from emulator.redaction import Redactor
from emulator.verify import checks as v
from emulator.verify import record_checks as rc
from emulator.verify.catalogue import ACTIVITY_KINDS, BODY_ENDPOINTS, BY_ID, ENDPOINTS, slug
from emulator.verify.deep_report import DeepOptions, DeepRun
from emulator.verify.probes import Probes, new_run_id
from emulator.verify.report import CheckResult, Exchange, Report, build
from emulator.wire import encode, now_iso

Key = Literal["valid", "missing", "wrong"]
KEY_PROBES: tuple[Key, ...] = ("missing", "wrong")
BODY_LIMIT = 4000  # characters of each body kept in the report
RETRIES = 2  # for 429/502/503/504 only: a probe judges answers, it does not hide them
UNKNOWN_ACTIVITY = "VERIFY_UNKNOWN_TYPE"  # outside the spec's four activity types


@dataclass(frozen=True)
class Call:
    answer: v.Answer
    exchange: Exchange


def clip(text: str) -> str:
    return (
        text
        if len(text) <= BODY_LIMIT
        else f"{text[:BODY_LIMIT]}... ({len(text) - BODY_LIMIT} more characters)"
    )


class Prober:
    """One client of the CRM; each call with the valid key, no key, or a wrong one.
    `timeout` is the deadline of each exchange as a whole (connect, send, whole answer)."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        api_key_header: str = "X-API-Key",
        *,
        verify: bool = True,
        ca_file: str | None = None,
        timeout: float = VERIFY_DEADLINE,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.header = api_key_header
        self.wrong_key = "verify-wrong-key"
        self.redactor = Redactor([api_key])
        self._http = Peer(
            self.base_url,
            {"Content-Type": "application/json", "Accept": "application/json"},
            tls=tls_verify(verify, ca_file),
            deadline=timeout,
            transport=transport,
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    def _redact(self, text: str) -> str:
        return self.redactor.text(text)

    async def call(self, method: str, path: str, body: Any = None, key: Key = "valid") -> Call:
        content = None if body is None else encode(body)
        headers = {
            "valid": {self.header: self.api_key},
            "missing": {},
            "wrong": {self.header: self.wrong_key},
        }[key]
        started = time.perf_counter()
        for attempt in range(RETRIES + 1):
            status, data, error, retry_after = 0, b"", None, None
            try:
                response, data = await self._http.send(method, path, content, headers)
                status = response.status_code
                retry_after = retry_after_seconds(response.headers.get("Retry-After"))
            except httpx.TransportError as exc:
                error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            if status not in (429, 502, 503, 504) or attempt == RETRIES:
                break
            await asyncio.sleep(
                min(retry_after if retry_after is not None else 0.5 * 2**attempt, 10.0)
            )
        exchange = Exchange(
            method=method,
            path=path,
            key=key,
            status=status,
            durationMs=round((time.perf_counter() - started) * 1000, 1),
            request=None if content is None else clip(self._redact(content.decode())),
            response=clip(self._redact(data.decode("utf-8", "replace"))),
            error=error,
        )
        return Call(v.Answer(status, data, error), exchange)


class Verifier:
    """Runs every check of the catalogue against one CRM and builds the report."""

    def __init__(
        self,
        prober: Prober,
        *,
        run_id: str | None = None,
        on_result: Callable[[CheckResult], None] | None = None,
        deep: DeepOptions | None = None,
    ) -> None:
        self.deep_options = deep
        self.deep_run: DeepRun | None = None  # set once the deep run ends
        self.prober = prober
        # Applied where results are recorded, whichever transport sent the calls: a CRM that
        # echoes the key cannot put it in a verdict, an exchange or any output made of them.
        self.redactor = Redactor([prober.api_key])
        self.probes = Probes(run_id or new_run_id())
        self.on_result = on_result
        self.results: dict[str, CheckResult] = {}
        self.created: dict[str, list[str]] = {}  # crmIds issued per kind, in order sent
        self.task_ids: list[str] = []  # tasks POST /tasks created

    def record(self, check_id: str, verdict: v.Verdict, *calls: Call) -> None:
        check = BY_ID[check_id]
        result = CheckResult(
            id=check.id,
            endpoint=check.endpoint,
            outcome=verdict.outcome,
            rule=check.rule,
            message=self.redactor.text(verdict.message),
            exchanges=[self.redacted(c.exchange) for c in calls],
        )
        self.results[check_id] = result
        if self.on_result is not None:
            self.on_result(result)

    def redacted(self, exchange: Exchange) -> Exchange:
        r = self.redactor
        return msgspec.structs.replace(
            exchange,
            request=r.optional(exchange.request),
            response=r.text(exchange.response),
            error=r.optional(exchange.error),
        )

    def skip(self, reason: str, *check_ids: str) -> None:
        for check_id in check_ids:
            self.record(check_id, v.Verdict("skip", reason))

    async def call(
        self, endpoint: str, body: Any = None, key: Key = "valid", task_id: str | None = None
    ) -> Call:
        method, path = endpoint.split(" ")
        if task_id is not None:
            path = path.replace(":taskId", urllib.parse.quote(task_id, safe=""))
        call = await self.prober.call(method, path, body, key)
        # The verdicts see the answer with the key already out: a message quoting a clipped
        # body (`describe`) cannot keep half of it.
        answer = call.answer
        redacted = v.Answer(answer.status, self.redactor.bytes(answer.body), answer.error)
        return Call(redacted, call.exchange)

    async def run(self) -> Report:
        started_at, t0 = now_iso(), time.perf_counter()
        health = await self.call("GET /health")
        unreachable = None
        if health.answer.status == 0:
            unreachable = (
                f"the CRM at {self.prober.base_url} cannot be reached: {health.answer.error}"
            )
        else:
            self.record("get-health/status", v.health(health.answer), health)
            if health.answer.status == 401:
                self.results[
                    "get-health/status"
                ].message += f" (the API key was rejected: check --api-key and --api-key-header {self.prober.header})"
            await self.everything()
        if self.deep_options is not None and unreachable is None:
            from emulator.verify.deep import deep  # deferred: Hypothesis loads only for --deep

            self.deep_run = await deep(self.prober, self.probes, self.deep_options)
        return self.report(started_at, t0, unreachable=unreachable)

    def report(
        self, started_at: str, t0: float, *, unreachable: str | None = None, cancelled: bool = False
    ) -> Report:
        """The report of the checks recorded so far (all of them once `run` is done)."""
        return build(
            self.results,
            crm_url=self.prober.base_url,
            run_id=self.probes.run_id,
            started_at=started_at,
            duration_ms=(time.perf_counter() - t0) * 1000,
            unreachable=None if unreachable is None else self.redactor.text(unreachable),
            cancelled=cancelled,
            deep=self.deep_run,
        )

    async def everything(self) -> None:
        users = await self.call("GET /users")
        self.record("get-users/list", v.users(users.answer), users)
        absent = users.answer.status if users.answer.status in v.USERS_ABSENT else None
        await self.auth(absent)
        for kind in ("companies", "contacts"):
            await self.records(kind)
        await self.associations()
        await self.activities()
        await self.tasks()
        await self.status_codes()

    async def auth(self, users_absent: int | None) -> None:
        for endpoint in ENDPOINTS:
            for key in KEY_PROBES:
                body = self.probes.auth_body(endpoint)
                task_id = self.probes.absent_id("task") if ":taskId" in endpoint else None
                call = await self.call(endpoint, body, key, task_id)
                verdict = v.auth(endpoint, call.answer, users_absent)
                self.record(f"{slug(endpoint)}/auth-{key}-key", verdict, call)

    async def records(self, kind: str) -> None:
        """Create, batch create, sync, update and field keeping of one record kind."""
        create, sync, put = f"POST /{kind}", f"POST /{kind}/sync", f"PUT /{kind}"
        c, s, u = slug(create), slug(sync), slug(put)
        sent = self.probes.records(kind, 3)
        learned = v.Learned()
        made = await self.call(create, {kind: sent})
        self.record(
            f"{c}/create",
            rc.create(kind, made.answer, [r["externalId"] for r in sent], learned),
            made,
        )
        batch = self.probes.records(kind, 100)
        many = await self.call(create, {kind: batch})
        self.record(
            f"{c}/batch-100",
            rc.create(kind, many.answer, [r["externalId"] for r in batch], v.Learned()),
            many,
        )

        unmatched = self.probes.records(kind, 2)
        created = [r for r in sent if r["externalId"] in learned.ids]
        asked = [r["externalId"] for r in [*created, *unmatched]]
        found = await self.call(sync, {kind: [*created, *unmatched]})
        empty_sent = self.probes.records(kind, 2)
        empty = await self.call(sync, {kind: empty_sent})
        self.record(f"{s}/empty-results", rc.sync_empty(kind, empty.answer), empty)
        syncs = [(found.answer, asked), (empty.answer, [r["externalId"] for r in empty_sent])]
        ids = [learned.ids[r["externalId"]] for r in created]
        self.created[kind] = ids
        if not ids:
            reason = f"needs a created record, and {c}/create created none"
            self.skip(
                reason,
                f"{s}/finds-created",
                f"{s}/omits-unmatched",
                f"{u}/update",
                f"{u}/any-field-names",
                f"{u}/unknown-crm-id",
                f"{u}/keeps-fields",
            )
            self.record(f"{s}/errors-shape", rc.sync_errors(kind, syncs), found, empty)
            return
        self.record(f"{s}/finds-created", rc.sync_finds(kind, found.answer, learned.ids), found)
        self.record(
            f"{s}/omits-unmatched",
            rc.sync_omits(kind, found.answer, asked, [r["externalId"] for r in unmatched]),
            found,
        )

        field = "description" if kind == "companies" else "title"
        one, two = ids[1 % len(ids)], ids[2 % len(ids)]
        plain = await self.call(
            put, {kind: [{"crmId": one, field: f"updated by verify {self.probes.run_id}"}]}
        )
        self.record(f"{u}/update", rc.update(kind, plain.answer, [one], f"field {field}"), plain)
        fields = await self.call(put, {kind: [{"crmId": one, **self.probes.engagement()}]})
        self.record(
            f"{u}/any-field-names",
            rc.update(kind, fields.answer, [one], "engagement and unknown field names"),
            fields,
        )
        unknown = self.probes.absent_id("record")
        note = {"verifyNote": f"updated by verify {self.probes.run_id}"}
        mixed = await self.call(put, {kind: [{"crmId": two, **note}, {"crmId": unknown, **note}]})
        self.record(
            f"{u}/unknown-crm-id", rc.update_unknown(kind, mixed.answer, two, unknown), mixed
        )

        kept = await self.keeps_fields(kind, created[0], ids[0], found)
        if kept is not None:
            syncs.append((kept.answer, [created[0]["externalId"]]))
        self.record(
            f"{s}/errors-shape",
            rc.sync_errors(kind, syncs),
            found,
            empty,
            *([kept] if kept else []),
        )

    async def keeps_fields(
        self, kind: str, record: dict[str, Any], crm_id: str, before: Call
    ) -> Call | None:
        """Two PUTs of two different fields, then a sync: the answer after, or None."""
        check, ext = f"{slug(f'PUT /{kind}')}/keeps-fields", record["externalId"]
        try:
            props = rc.properties_of(before.answer, kind, ext)
        except v.Broken:
            props = None
        first, second = (
            f"verifyKeepFirst_{self.probes.run_id}",
            f"verifyKeepSecond_{self.probes.run_id}",
        )
        puts = [
            await self.call(f"PUT /{kind}", {kind: [{"crmId": crm_id, name: "kept?"}]})
            for name in (first, second)
        ]
        for put in puts:
            if not 200 <= put.answer.status < 300:
                self.record(
                    check, v.Verdict("fail", f"PUT /{kind} answered {put.answer.describe()}"), *puts
                )
                return None
        after = await self.call(f"POST /{kind}/sync", {kind: [record]})
        self.record(
            check,
            rc.keeps_fields(kind, props, after.answer, ext, first, second),
            before,
            *puts,
            after,
        )
        return after

    def first(self, kind: str) -> str | None:
        """The first crmId the CRM issued for `kind` (None: it created none)."""
        ids = self.created.get(kind)
        return ids[0] if ids else None

    async def associations(self) -> None:
        contacts, companies = self.created.get("contacts"), self.created.get("companies")
        if not contacts or not companies:
            self.skip(
                "needs a created contact and company (see the create checks)",
                "post-associations/link",
            )
            return
        pair = {"contactCRMId": contacts[0], "companyCRMId": companies[0]}
        call = await self.call("POST /associations", {"associations": [pair]})
        self.record("post-associations/link", v.associations(call.answer), call)

    async def activities(self) -> None:
        contact, company = self.first("contacts"), self.first("companies")
        learned = v.Learned()
        for type_, direction in ACTIVITY_KINDS:
            body = self.probes.activity(type_, direction, contact, company)
            call = await self.call("POST /activities", body)
            check = f"post-activities/{type_.lower().replace('_', '-')}-{direction.lower()}"
            self.record(check, v.activity(call.answer, learned), call)

    async def tasks(self) -> None:
        contact, company = self.first("contacts"), self.first("companies")
        learned = v.Learned()
        made = [
            await self.call("POST /tasks", self.probes.task(contact, company)) for _ in range(3)
        ]
        self.record("post-tasks/create", v.task_created([m.answer for m in made], learned), *made)
        t = [learned.ids.get(str(i)) for i in range(3)]
        self.task_ids = [i for i in t if i is not None]
        absent = self.probes.absent_id("task")
        missing = await self.call("GET /tasks/:taskId", task_id=absent)
        need = "needs tasks created by POST /tasks (see post-tasks/create)"
        if t[0] is None:
            self.skip(need, "get-task/read", "patch-task/complete", "post-tasks-batch/known-ids")
        else:
            read = await self.call("GET /tasks/:taskId", task_id=t[0])
            self.record("get-task/read", v.task_read(read.answer, t[0]), read)
        self.record("get-task/unknown-id", v.task_unknown(missing.answer), missing)
        if t[0] is not None:
            patched = await self.call("PATCH /tasks/:taskId", {"completed": True}, task_id=t[0])
            back = await self.call("GET /tasks/:taskId", task_id=t[0])
            self.record(
                "patch-task/complete",
                v.task_completed(patched.answer, back.answer, t[0]),
                patched,
                back,
            )
            if t[1] is not None:
                both = await self.call("POST /tasks/batch", {"ids": [t[0], t[1]]})
                self.record(
                    "post-tasks-batch/known-ids", v.tasks_batch(both.answer, [t[0], t[1]], []), both
                )
            else:
                self.skip(need, "post-tasks-batch/known-ids")
        if t[1] is None:
            self.skip(need, "post-tasks-batch/unknown-ids", "patch-tasks-batch/complete")
            return
        some = await self.call("POST /tasks/batch", {"ids": [t[1], absent]})
        self.record(
            "post-tasks-batch/unknown-ids", v.tasks_batch(some.answer, [t[1]], [absent]), some
        )
        rest = [i for i in t[1:] if i is not None]
        done = await self.call("PATCH /tasks/batch", {"ids": rest, "completed": True})
        self.record("patch-tasks-batch/complete", v.tasks_completed(done.answer, rest), done)

    async def status_codes(self) -> None:
        """The spec's status codes: invalid bodies, an unknown task id, repeated completion."""
        for endpoint in BODY_ENDPOINTS:
            for problem in ("missing-field", "wrong-type"):
                await self.invalid_body(endpoint, problem)
        absent = self.probes.absent_id("task")
        patched = await self.call("PATCH /tasks/:taskId", {"completed": True}, task_id=absent)
        self.record("patch-task/unknown-id", v.patch_unknown(patched.answer), patched)
        await self.complete_again()
        sent = self.probes.activity("EMAIL", "OUTBOUND", self.first("contacts"), None)
        odd = await self.call("POST /activities", {**sent, "type": UNKNOWN_ACTIVITY})
        self.record(
            "post-activities/unknown-type",
            v.unknown_activity_type(odd.answer, UNKNOWN_ACTIVITY),
            odd,
        )

    async def invalid_body(self, endpoint: str, problem: str) -> None:
        check = f"{slug(endpoint)}/{problem}"
        if endpoint == "PATCH /tasks/:taskId" and not self.task_ids:
            self.skip("needs a task created by POST /tasks (see post-tasks/create)", check)
            return
        task_id = self.task_ids[0] if ":taskId" in endpoint else None
        calls, sent = [], []
        for what, body in self.probes.invalid_bodies(endpoint, problem, self.task_ids):
            call = await self.call(endpoint, body, task_id=task_id)
            calls.append(call)
            sent.append((what, call.answer))
        self.record(check, v.invalid_body(sent), *calls)

    async def complete_again(self) -> None:
        check = "patch-task/complete-again"
        made = await self.call("POST /tasks", self.probes.task(None, None))
        try:
            task_id = v.task(v.ok(made.answer, "POST /tasks"), "the created task")["id"]
        except v.Broken as exc:
            self.record(check, v.Verdict("skip", f"needs a task: {exc.message}"), made)
            return
        first = await self.call("PATCH /tasks/:taskId", {"completed": True}, task_id=task_id)
        await asyncio.sleep(0.05)  # a CRM that stamps every completion would stamp a later time
        again = await self.call("PATCH /tasks/:taskId", {"completed": True}, task_id=task_id)
        self.record(check, v.completed_again(first.answer, again.answer, task_id), first, again)


async def verify(prober: Prober, **kwargs: Any) -> Report:
    """Run every check against the prober's CRM; the client is closed after."""
    try:
        return await Verifier(prober, **kwargs).run()
    finally:
        await prober.aclose()
