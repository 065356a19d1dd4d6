"""The export report: JSON (msgspec structs), JUnit XML (one test case per contract check), summary."""

from __future__ import annotations

from typing import Any, Literal
from xml.etree import ElementTree as ET

import msgspec

from emulator.exporter import endpoints as ep
from emulator.exporter.client import Exchange
from emulator.exporter.plan import Finding
from emulator.wire import Wire

RunStatus = Literal["running", "ok", "failed", "aborted", "cancelled"]
BODY_CAP = 2000  # characters of a body kept in a finding
EXAMPLES_PER_KIND = 5  # examples kept per kind of finding (every one is counted)
HELD_BACK_CAP = 20  # dependents named per failed record (every one is counted)
CLEARED_CAP = 10_000
FAILED_CAP = 200_000

# Every contract check of a full run, in sequence order: one JUnit test case each.
CHECKS = (
    "GET /health",
    "GET /users",
    "POST /companies/sync",
    "POST /companies",
    "PUT /companies",
    "POST /contacts/sync",
    "POST /contacts",
    "PUT /contacts",
    "POST /associations",
    "POST /activities",
    "POST /tasks",
    "PATCH /tasks/:taskId",
    "PATCH /tasks/batch",
    "GET /tasks/:taskId",
    "POST /tasks/batch",
    "PUT /contacts (engagement)",
    "PUT /companies (engagement)",
)
PHASES = (
    "health",
    "users",
    "companies",
    "contacts",
    "associations",
    "activities",
    "tasks",
    "engagement",
)


class ExchangeView(Wire):
    """The request and answer that showed a finding (API key already redacted)."""

    method: str
    path: str
    status: int
    request: str | None = None
    response: str | None = None
    error: str | None = None


class FindingExample(Wire):
    """One occurrence of a kind of finding: the record or value, and the exchange."""

    about: str | None = None
    exchange: ExchangeView | None = None


class FindingGroup(Wire):
    """Every finding of one kind under one check: how many, and the first few."""

    check: str
    message: str
    count: int = 0
    examples: list[FindingExample] = msgspec.field(default_factory=list)


class FailedRecord(Wire):
    kind: str  # companies, contacts, associations, activities, tasks, task completion, ...
    id: str | None  # None: an aggregate entry (records never attempted after a stop)
    reason: str
    phase: str  # the phase that counts it as failed (a key of Report.phases)
    # What this record's failure kept out of the run (activities, tasks, links, engagement).
    heldBack: list[str] = msgspec.field(default_factory=list)
    heldBackTotal: int = 0


class ClearedField(Wire):
    kind: str
    id: int
    field: str
    previous: Any
    core: bool
    # Why the CRM's answer cleared it: "absent" (left out of `properties`), "null" (present as
    # null), "echo" (`properties` echoed the CRM's last update, not the fields to sync back).
    cause: str = "absent"


class ClearedCount(Wire):
    """How many values of one field (of one kind) the sync-back cleared."""

    kind: str
    field: str
    count: int = 0


class PossibleDuplicate(Wire):
    """An activity or task whose POST was in flight when an earlier run stopped (a crash, a
    kill): the CRM may have logged it although the platform never stored its CRM id, so this
    run sent it again and the CRM may now hold it twice."""

    kind: str  # "activity" or "task"
    id: int  # platform id: the message id (activities' metadata.messageId) or the task id
    exportId: str  # the run that was sending it
    since: str  # wall-clock time that run recorded the intent to send it


class PhaseStats(Wire):
    sent: int = 0
    received: int = 0  # items the CRM answered with (users listed, tasks read back)
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    failed: int = 0
    skipped: int = 0
    # Dependents kept out of the run by a record that failed or whose CRM id this run did not
    # learn (each is named under that record's failure); not counted in `skipped`.
    heldBack: int = 0
    alreadyLinked: int = 0  # associations: links the CRM took but already had (not created)
    # associations: links a successful answer without `created` took (new or not, unsaid)
    linkedUncounted: int = 0
    requests: int = 0
    seconds: float = 0.0
    cpuSeconds: float = 0.0  # the exporter process's CPU (every thread) during the phase


class CheckResult(Wire):
    name: str
    calls: int = 0
    violations: int = 0
    warnings: int = 0


class TaskReadBack(Wire):
    """What reading the CRM's tasks back found (POST /tasks/batch, GET /tasks/:taskId)."""

    asked: int = 0
    open: int = 0  # still open on the CRM
    completedOnCrm: int = 0  # completed on the CRM side: now completed on the platform too
    unknown: int = 0  # the CRM no longer knows them: reported once, never asked again
    unknownIds: list[str] = msgspec.field(default_factory=list)


class Progress(Wire):
    phase: str
    done: int
    total: int


class Report(Wire):
    id: str
    crmUrl: str
    status: RunStatus = "running"
    exitCode: int | None = None
    message: str | None = None
    startedAt: str  # wall clock (UTC) when the run started
    finishedAt: str | None = None  # wall clock (UTC) when it finished
    seconds: float = 0.0
    # The emulator's virtual clock at start and finish (what the platform's timestamps use).
    virtualStartedAt: str | None = None
    virtualFinishedAt: str | None = None
    strict: bool = False  # --strict: every warning fails the run
    notes: list[str] = msgspec.field(default_factory=list)  # said up front, before any call
    ownerSelection: bool | None = None
    users: int | None = None
    phases: dict[str, PhaseStats]
    checks: dict[str, CheckResult]
    violations: list[FindingGroup] = msgspec.field(default_factory=list)
    warnings: list[FindingGroup] = msgspec.field(default_factory=list)
    failed: list[FailedRecord] = msgspec.field(default_factory=list)
    cleared: list[ClearedField] = msgspec.field(default_factory=list)
    clearedTotal: int = 0
    clearedByField: list[ClearedCount] = msgspec.field(default_factory=list)  # every field
    clearedByCause: dict[str, int] = msgspec.field(default_factory=dict)  # absent, null, echo
    possiblyDuplicated: list[PossibleDuplicate] = msgspec.field(default_factory=list)
    taskReadBack: TaskReadBack = msgspec.field(default_factory=TaskReadBack)
    # Per Part A endpoint (the spec's order): calls, answers and status (endpoints.py).
    endpoints: dict[str, ep.EndpointCalls] = msgspec.field(default_factory=dict)
    progress: Progress | None = None


def new_report(
    export_id: str, crm_url: str, started_at: str, virtual_started_at: str | None = None
) -> Report:
    return Report(
        id=export_id,
        crmUrl=crm_url,
        startedAt=started_at,
        virtualStartedAt=virtual_started_at,
        phases={name: PhaseStats() for name in PHASES},
        checks={name: CheckResult(name=name) for name in CHECKS},
        endpoints=ep.new_endpoints(),
    )


def _text(data: bytes | None) -> str | None:
    if data is None:
        return None
    text = data[: BODY_CAP * 4].decode("utf-8", "replace")
    return text if len(text) <= BODY_CAP else text[:BODY_CAP] + "…"


def exchange_view(ex: Exchange) -> ExchangeView:
    return ExchangeView(
        method=ex.method,
        path=ex.path,
        status=ex.status,
        request=_text(ex.request),
        response=_text(ex.response),
        error=ex.error,
    )


def add_finding(
    report: Report, finding: Finding, ex: Exchange | None, check: str | None = None
) -> None:
    """Count a finding against its check and its kind; keep the first few of each kind."""
    name = check or finding.check
    result = report.checks.get(name)
    if result is None:
        result = report.checks[name] = CheckResult(name=name)
    if finding.severity == "violation":
        result.violations += 1
        groups = report.violations
    else:
        result.warnings += 1
        groups = report.warnings
    # Kinds are few (their messages name no record), so a scan is cheap.
    group = next((g for g in groups if g.check == name and g.message == finding.message), None)
    if group is None:
        group = FindingGroup(check=name, message=finding.message)
        groups.append(group)
    group.count += 1
    if len(group.examples) < EXAMPLES_PER_KIND:
        group.examples.append(
            FindingExample(about=finding.about, exchange=None if ex is None else exchange_view(ex))
        )


def hold_back(record: FailedRecord, dependent: str) -> None:
    """Note one dependent a failed record kept out of the run (the first few by name)."""
    record.heldBackTotal += 1
    if len(record.heldBack) < HELD_BACK_CAP:
        record.heldBack.append(dependent)


def settle_endpoints(report: Report, *, name_unexercised: bool) -> None:
    """Every endpoint's status, its findings added (a failing one fails the run), and the
    findings of its checks counted on it."""
    for finding in ep.settle(report.endpoints, name_unexercised=name_unexercised):
        add_finding(report, finding, None)
    ep.tally_findings(report.endpoints, report.checks)


def exit_code(report: Report) -> int:
    """0: contract kept and nothing failed; 1: records failed or contract broken (or, with
    --strict, any warning); 2: no run (stopped, or cancelled before its end)."""
    if report.status in ("aborted", "cancelled"):
        return 2
    broken = any(c.violations for c in report.checks.values())
    failed = any(s.failed for s in report.phases.values())
    return 1 if broken or failed or strict_failure(report) else 0


# ---------------------------------------------------------------------------------------------
# Counts: cleared fields per field and cause, the verdict line, --strict


def note_cleared(report: Report, kind: str, name: str, cause: str) -> None:
    """Count one cleared value against its field and its cause (every one, no cap)."""
    report.clearedTotal += 1
    report.clearedByCause[cause] = report.clearedByCause.get(cause, 0) + 1
    # Fields are few (the syncable names of two kinds): a scan is cheap.
    row = next((c for c in report.clearedByField if c.kind == kind and c.field == name), None)
    if row is None:
        row = ClearedCount(kind=kind, field=name)
        report.clearedByField.append(row)
    row.count += 1


CAUSE_TEXT = {
    "absent": "the CRM left the property out of `properties`",
    "null": "the CRM answered the property as null",
    "echo": "`properties` echoed the CRM's last update instead of the fields to sync back",
}


def cleared_verdict(report: Report) -> str:
    """One line: how many platform values the sync-back cleared, and which CRM behaviour did it."""
    if not report.clearedTotal:
        return "sync-back cleared no platform value"
    causes = "; ".join(
        f"{n} because {CAUSE_TEXT.get(cause, cause)}"
        for cause, n in sorted(report.clearedByCause.items(), key=lambda kv: -kv[1])
    )
    return f"sync-back cleared {report.clearedTotal} platform value(s): {causes}"


def cleared_lines(report: Report) -> list[str]:
    """The verdict, then one line per field with its count (most cleared first)."""
    rows = sorted(report.clearedByField, key=lambda c: (-c.count, c.kind, c.field))
    return [cleared_verdict(report)] + [f"{c.kind} `{c.field}`: {c.count}" for c in rows]


def strict_failure(report: Report) -> bool:
    """Whether --strict fails the run: any warning at all."""
    return report.strict and any(c.warnings for c in report.checks.values())


def duplicate_lines(report: Report) -> list[str]:
    """Each activity and task an earlier, stopped run may have logged in the CRM already."""
    return [
        f"{d.kind} {d.id} possibly duplicated: its POST was in flight when export {d.exportId}"
        f" stopped ({d.since}), and it was sent again"
        for d in report.possiblyDuplicated
    ]


# ---------------------------------------------------------------------------------------------
# JUnit: the same verdict as the exit code (a failing test case for each cause of a non-zero exit)


JUNIT_LINES = 500  # failed records written into one phase's failure text (all are counted)


def junit_xml(report: Report) -> bytes:
    """A test case per contract check (violations fail it), per phase (failed records fail it)
    and one for the run itself (a stop fails it): failures > 0 exactly when the exit code is not 0."""
    cases: list[ET.Element] = []
    for check in report.checks.values():
        case = ET.Element("testcase", classname="crm-contract", name=check.name)
        if check.violations:
            failure = ET.SubElement(
                case, "failure", message=f"{check.violations} contract violation(s)"
            )
            failure.text = "\n\n".join(
                _group_text(g) for g in report.violations if g.check == check.name
            )
        elif report.strict and check.warnings:
            failure = ET.SubElement(
                case, "failure", message=f"{check.warnings} warning(s) (--strict)"
            )
            failure.text = "\n\n".join(
                _group_text(g) for g in report.warnings if g.check == check.name
            )
        elif not check.calls:
            ET.SubElement(case, "skipped", message="not exercised: no call in this run")
        warned = [g for g in report.warnings if g.check == check.name]
        if warned:
            out = ET.SubElement(case, "system-out")
            out.text = "\n\n".join("warning: " + _group_text(g) for g in warned)
        cases.append(case)
    for name, stats in report.phases.items():
        case = ET.Element("testcase", classname="export-phase", name=name)
        if stats.failed:
            mine = [f for f in report.failed if f.phase == name]
            failure = ET.SubElement(case, "failure", message=f"{stats.failed} record(s) failed")
            lines = [_failed_line(f) for f in mine[:JUNIT_LINES]]
            if len(mine) > JUNIT_LINES:
                lines.append(f"... and {len(mine) - JUNIT_LINES} more in the JSON report")
            failure.text = "\n".join(lines)
        elif not (stats.requests or stats.skipped):
            ET.SubElement(case, "skipped", message="nothing to do in this run")
        cases.append(case)
    cases.append(_junit_cleared(report))
    cases.extend(ep.junit_cases(report.endpoints))
    run = ET.Element("testcase", classname="export-run", name="export run")
    if report.status in ("aborted", "cancelled"):
        ET.SubElement(run, "failure", message=report.message or "the export stopped")
    said = report.notes + duplicate_lines(report)
    if said:
        ET.SubElement(run, "system-out").text = "\n".join(said)
    cases.append(run)
    suite = ET.Element(
        "testsuite",
        name="crm-contract",
        tests=str(len(cases)),
        failures=str(sum(1 for c in cases if c.find("failure") is not None)),
        skipped=str(sum(1 for c in cases if c.find("skipped") is not None)),
        time=f"{report.seconds:.3f}",
    )
    suite.extend(cases)
    return ET.tostring(suite, encoding="utf-8", xml_declaration=True)


def _junit_cleared(report: Report) -> ET.Element:
    """A test case for the sync-back's clears: the total and one line per field (it fails
    nothing itself: a cleared core field is a warning of its sync check)."""
    case = ET.Element("testcase", classname="export-sync-back", name="fields cleared by sync-back")
    ET.SubElement(case, "system-out").text = "\n".join(cleared_lines(report))
    return case


def _failed_line(f: FailedRecord) -> str:
    line = f"{f.kind} {f.id or '(aggregate)'}: {f.reason}"
    if f.heldBackTotal:
        more = (
            f" and {f.heldBackTotal - len(f.heldBack)} more"
            if f.heldBackTotal > len(f.heldBack)
            else ""
        )
        line += f" (held back: {', '.join(f.heldBack)}{more})"
    return line


def _group_text(g: FindingGroup) -> str:
    lines = [f"{g.message} ({g.count}x)"]
    for e in g.examples:
        if e.about:
            lines.append(f"  - {e.about}")
        if e.exchange is not None:
            ex = e.exchange
            lines.append(f"    {ex.method} {ex.path} -> {ex.status or ex.error}")
            lines.append(f"    request: {ex.request}")
            lines.append(f"    response: {ex.response}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# The human summary


SUMMARY_EXAMPLES = 3  # failed records shown per phase (the JSON report has all)


def summary(report: Report) -> str:
    """A few human lines: outcome, counts per phase, every kind of finding, failures per phase."""
    head = f"export {report.id} to {report.crmUrl}: {report.status}"
    lines = [f"{head} (exit {report.exitCode}) in {report.seconds:.2f}s"]
    if report.message:
        lines.append(f"  {report.message}")
    lines.extend(f"  note: {n}" for n in report.notes)
    for name, s in report.phases.items():
        if not (s.requests or s.failed or s.skipped or s.heldBack):
            continue
        parts = [
            f"{k} {v}"
            for k, v in (
                ("received", s.received),
                ("created", s.created),
                ("updated", s.updated),
                ("unchanged", s.unchanged),
                ("already linked", s.alreadyLinked),
                ("linked (the CRM did not say how many were new)", s.linkedUncounted),
                ("failed", s.failed),
                ("held back", s.heldBack),
                ("skipped", s.skipped),
                ("sent", s.sent),
            )
            if v
        ]
        lines.append(
            f"  {name:<12} {', '.join(parts) or '-'}  ({s.requests} requests, {s.seconds:.2f}s)"
        )
    rb = report.taskReadBack
    if rb.asked:
        lines.append(
            f"  task read-back: {rb.asked} asked, {rb.open} open, {rb.completedOnCrm} completed "
            f"on the CRM (now completed on the platform), {rb.unknown} unknown to the CRM"
        )
    broken = [c for c in report.checks.values() if c.violations]
    lines.append(
        f"  contract: {len(broken)} check(s) broken, "
        f"{sum(c.violations for c in broken)} violation(s), "
        f"{sum(c.warnings for c in report.checks.values())} warning(s)"
        + (" (--strict: warnings fail the run)" if report.strict else "")
    )
    lines.extend(f"  {line}" for line in _summary_cleared(report))
    lines.extend(f"  {line}" for line in duplicate_lines(report))
    for severity, groups in (("violation", report.violations), ("warning", report.warnings)):
        for g in groups:
            example = next((e.about for e in g.examples if e.about), None)
            tail = f", e.g. {example}" if example else ""
            lines.append(f"  {severity} [{g.check}] {g.message} ({g.count}x{tail})")
    lines.extend(ep.summary_lines(report.endpoints))
    by_phase: dict[str, list[FailedRecord]] = {}
    for f in report.failed:
        by_phase.setdefault(f.phase, []).append(f)
    for phase, failed in by_phase.items():
        count = report.phases[phase].failed if phase in report.phases else len(failed)
        lines.append(f"  {phase}: {count} failed, e.g.")
        lines.extend(f"    failed {_failed_line(f)}" for f in failed[:SUMMARY_EXAMPLES])
    return "\n".join(lines)


def _summary_cleared(report: Report) -> list[str]:
    verdict, *fields = cleared_lines(report)
    return [verdict] + [f"  cleared {line}" for line in fields]
