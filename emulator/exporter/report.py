"""The export report: JSON (msgspec structs), JUnit XML (one test case per contract check), summary."""

from __future__ import annotations

from typing import Any, Literal
from xml.etree import ElementTree as ET

import msgspec

from emulator.exporter.client import Exchange
from emulator.exporter.plan import Finding
from emulator.wire import Wire

RunStatus = Literal["running", "ok", "failed", "aborted"]
BODY_CAP = 2000  # characters of a body kept in a finding
FINDINGS_PER_CHECK = 50  # findings kept per check and severity (all are counted)
CLEARED_CAP = 10_000
FAILED_CAP = 200_000

# Every contract check of a full run, in sequence order: one JUnit test case each.
CHECKS = (
    "GET /health", "GET /users",
    "POST /companies/sync", "POST /companies", "PUT /companies",
    "POST /contacts/sync", "POST /contacts", "PUT /contacts",
    "POST /associations", "POST /activities", "POST /tasks",
    "PATCH /tasks/:taskId", "PATCH /tasks/batch",
    "PUT /contacts (engagement)", "PUT /companies (engagement)",
)
PHASES = (
    "health", "users", "companies", "contacts", "associations", "activities", "tasks",
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


class FindingView(Wire):
    check: str
    message: str
    exchange: ExchangeView | None = None


class FailedRecord(Wire):
    kind: str
    id: str | None  # None: an aggregate entry (records never attempted after a stop)
    reason: str


class ClearedField(Wire):
    kind: str
    id: int
    field: str
    previous: Any
    core: bool


class PhaseStats(Wire):
    sent: int = 0
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
    violations: list[FindingView] = msgspec.field(default_factory=list)
    warnings: list[FindingView] = msgspec.field(default_factory=list)
    failed: list[FailedRecord] = msgspec.field(default_factory=list)
    cleared: list[ClearedField] = msgspec.field(default_factory=list)
    clearedTotal: int = 0
    progress: Progress | None = None


def new_report(export_id: str, crm_url: str, started_at: str) -> Report:
    return Report(
        id=export_id, crmUrl=crm_url, startedAt=started_at,
        phases={name: PhaseStats() for name in PHASES},
        checks={name: CheckResult(name=name) for name in CHECKS},
    )


def _text(data: bytes | None) -> str | None:
    if data is None:
        return None
    text = data[: BODY_CAP * 4].decode("utf-8", "replace")
    return text if len(text) <= BODY_CAP else text[:BODY_CAP] + "…"


def exchange_view(ex: Exchange) -> ExchangeView:
    return ExchangeView(
        method=ex.method, path=ex.path, status=ex.status, request=_text(ex.request),
        response=_text(ex.response), error=ex.error,
    )


def add_finding(report: Report, finding: Finding, ex: Exchange | None, check: str | None = None) -> None:
    """Count a finding against its check; keep the first ones with their exchange."""
    name = check or finding.check
    result = report.checks.get(name)
    if result is None:
        result = report.checks[name] = CheckResult(name=name)
    if finding.severity == "violation":
        result.violations += 1
        target, kept = report.violations, result.violations
    else:
        result.warnings += 1
        target, kept = report.warnings, result.warnings
    if kept <= FINDINGS_PER_CHECK:
        target.append(
            FindingView(check=name, message=finding.message,
                        exchange=None if ex is None else exchange_view(ex))
        )


def exit_code(report: Report) -> int:
    """0: contract kept and nothing failed; 1: records failed or contract broken; 2: no run."""
    if report.status == "aborted":
        return 2
    broken = any(c.violations for c in report.checks.values())
    failed = any(s.failed for s in report.phases.values())
    return 1 if broken or failed else 0


def junit_xml(report: Report) -> bytes:
    """One test case per contract check; violations are failures, unused checks are skipped."""
    suite = ET.Element(
        "testsuite", name="crm-contract", tests=str(len(report.checks)),
        failures=str(sum(1 for c in report.checks.values() if c.violations)),
        skipped=str(sum(1 for c in report.checks.values() if not c.calls and not c.violations)),
        time=f"{report.seconds:.3f}",
    )
    for check in report.checks.values():
        case = ET.SubElement(suite, "testcase", classname="crm-contract", name=check.name)
        mine = [v for v in report.violations if v.check == check.name]
        warned = [w for w in report.warnings if w.check == check.name]
        if check.violations:
            failure = ET.SubElement(
                case, "failure", message=f"{check.violations} contract violation(s)"
            )
            failure.text = "\n".join(_finding_line(v) for v in mine)
        elif not check.calls:
            ET.SubElement(case, "skipped", message="not called in this run")
        if warned:
            out = ET.SubElement(case, "system-out")
            out.text = "\n".join("warning: " + _finding_line(w) for w in warned)
    return ET.tostring(suite, encoding="utf-8", xml_declaration=True)


def _finding_line(f: FindingView) -> str:
    if f.exchange is None:
        return f.message
    ex = f.exchange
    return (
        f"{f.message}\n  {ex.method} {ex.path} -> {ex.status or ex.error}"
        f"\n  request: {ex.request}\n  response: {ex.response}"
    )


def summary(report: Report) -> str:
    """A few human lines: outcome, counts per phase, findings."""
    head = f"export {report.id} to {report.crmUrl}: {report.status}"
    lines = [f"{head} (exit {report.exitCode}) in {report.seconds:.2f}s"]
    if report.message:
        lines.append(f"  {report.message}")
    for name, s in report.phases.items():
        if not (s.requests or s.failed or s.skipped):
            continue
        parts = [f"{k} {v}" for k, v in (
            ("created", s.created), ("updated", s.updated), ("unchanged", s.unchanged),
            ("failed", s.failed), ("skipped", s.skipped), ("sent", s.sent),
        ) if v]
        lines.append(f"  {name:<12} {', '.join(parts) or '-'}  ({s.requests} requests, {s.seconds:.2f}s)")
    broken = [c for c in report.checks.values() if c.violations]
    lines.append(
        f"  contract: {len(broken)} check(s) broken, "
        f"{sum(c.violations for c in broken)} violation(s), "
        f"{sum(c.warnings for c in report.checks.values())} warning(s); "
        f"{report.clearedTotal} field(s) cleared by sync-back"
    )
    for v in report.violations[:5]:
        lines.append(f"  violation [{v.check}] {v.message}")
    for f in report.failed[:5]:
        lines.append(f"  failed {f.kind} {f.id or ''}: {f.reason}")
    return "\n".join(lines)
