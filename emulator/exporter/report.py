"""The export report: JSON (msgspec structs), JUnit XML (one test case per contract check), summary."""

from __future__ import annotations

from typing import Any, Literal
from xml.etree import ElementTree as ET

import msgspec

from emulator.exporter import endpoints as ep
from emulator.exporter.client import Exchange
from emulator.exporter.plan import Finding
from emulator.wire import Wire

RunStatus = Literal["running", "ok", "failed", "aborted"]
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


class PhaseStats(Wire):
    sent: int = 0
    received: int = 0  # items the CRM answered with (users listed, tasks read back)
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    failed: int = 0
    skipped: int = 0
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
    startedAt: str
    finishedAt: str | None = None
    seconds: float = 0.0
    ownerSelection: bool | None = None
    users: int | None = None
    phases: dict[str, PhaseStats]
    checks: dict[str, CheckResult]
    violations: list[FindingGroup] = msgspec.field(default_factory=list)
    warnings: list[FindingGroup] = msgspec.field(default_factory=list)
    failed: list[FailedRecord] = msgspec.field(default_factory=list)
    cleared: list[ClearedField] = msgspec.field(default_factory=list)
    clearedTotal: int = 0
    taskReadBack: TaskReadBack = msgspec.field(default_factory=TaskReadBack)
    # Per Part A endpoint (the spec's order): calls, answers and status (endpoints.py).
    endpoints: dict[str, ep.EndpointCalls] = msgspec.field(default_factory=dict)
    progress: Progress | None = None


def new_report(export_id: str, crm_url: str, started_at: str) -> Report:
    return Report(
        id=export_id,
        crmUrl=crm_url,
        startedAt=started_at,
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
    """0: contract kept and nothing failed; 1: records failed or contract broken; 2: no run."""
    if report.status == "aborted":
        return 2
    broken = any(c.violations for c in report.checks.values())
    failed = any(s.failed for s in report.phases.values())
    return 1 if broken or failed else 0


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
    cases.extend(ep.junit_cases(report.endpoints))
    run = ET.Element("testcase", classname="export-run", name="export run")
    if report.status == "aborted":
        ET.SubElement(run, "failure", message=report.message or "the export stopped")
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
    for name, s in report.phases.items():
        if not (s.requests or s.failed or s.skipped):
            continue
        parts = [
            f"{k} {v}"
            for k, v in (
                ("received", s.received),
                ("created", s.created),
                ("updated", s.updated),
                ("unchanged", s.unchanged),
                ("failed", s.failed),
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
        f"{sum(c.warnings for c in report.checks.values())} warning(s); "
        f"{report.clearedTotal} field(s) cleared by sync-back"
    )
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
