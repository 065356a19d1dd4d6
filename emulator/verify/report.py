"""The verify report and its outputs: progress lines, the summary, JSON and JUnit XML.

Exit codes: 0 no check failed, 1 a check failed, 2 the CRM could not be reached at all.
The JUnit file is made from the same checks as the exit code, so the two always agree.
"""

from __future__ import annotations

from typing import Literal
from xml.etree import ElementTree as ET

import msgspec

from emulator.verify.catalogue import CHECKS
from emulator.verify.checks import Outcome
from emulator.verify.deep_report import DeepRun, deep_junit, deep_lines
from emulator.wire import Wire

OUTCOMES: tuple[Outcome, ...] = ("pass", "fail", "warn", "skip")


class Exchange(Wire):
    """One request and its answer as the report shows them (the API key redacted)."""

    method: str
    path: str
    key: str  # "valid", "missing" or "wrong": which key the request carried
    status: int  # 0: no HTTP answer
    durationMs: float
    request: str | None
    response: str
    error: str | None = None


class CheckResult(Wire):
    id: str
    endpoint: str
    outcome: Outcome
    rule: str
    message: str
    exchanges: list[Exchange] = msgspec.field(default_factory=list)


ReportStatus = Literal["pass", "fail", "error", "cancelled"]


class Report(Wire):
    status: ReportStatus
    exitCode: int
    crmUrl: str
    runId: str
    startedAt: str
    durationMs: float
    summary: dict[str, int]
    checks: list[CheckResult]
    message: str | None = None
    deep: DeepRun | None = None  # `verify --deep`: the random sequences' verdict


def build(
    results: dict[str, CheckResult],
    *,
    crm_url: str,
    run_id: str,
    started_at: str,
    duration_ms: float,
    unreachable: str | None = None,
    cancelled: bool = False,
    deep: DeepRun | None = None,
) -> Report:
    """The report of every catalogued check, in catalogue order; those not run are skips.

    `cancelled`: the run was stopped before its end (exit 2, like an unreachable CRM: it
    proves nothing); the checks it made keep their verdicts, the rest say they did not run.
    """
    checks = []
    for check in CHECKS:
        result = results.get(check.id)
        if result is None:
            why = (
                "not run: the run was cancelled"
                if cancelled
                else "not run: the CRM could not be reached"
                if unreachable
                else "not run"
            )
            result = CheckResult(
                id=check.id, endpoint=check.endpoint, outcome="skip", rule=check.rule, message=why
            )
        checks.append(result)
    summary: dict[str, int] = {o: sum(1 for c in checks if c.outcome == o) for o in OUTCOMES}
    message = unreachable
    if cancelled:
        status: ReportStatus = "cancelled"
        exit_code = 2
        message = f"the run was cancelled after {len(results)} of {len(checks)} checks"
    elif unreachable:
        status = "error"
        exit_code = 2
    else:
        deep_failed = deep is not None and deep.outcome != "pass"
        status, exit_code = ("fail", 1) if summary["fail"] or deep_failed else ("pass", 0)
    return Report(
        status=status,
        exitCode=exit_code,
        crmUrl=crm_url,
        runId=run_id,
        startedAt=started_at,
        durationMs=round(duration_ms, 1),
        summary=summary,
        checks=checks,
        message=message,
        deep=deep,
    )


def line(result: CheckResult) -> str:
    """One progress line: outcome, endpoint, check id, what was seen."""
    return f"{result.outcome.upper():<4}  {result.endpoint:<21} {result.id:<44} {result.message}"


def summary(report: Report) -> str:
    s = report.summary
    counts = ", ".join(f"{s[o]} {o}" for o in OUTCOMES)
    lines = [f"verify {report.crmUrl} (run {report.runId}): {len(report.checks)} checks: {counts}"]
    if report.message:
        lines.append(f"  {report.message}")
    for outcome in ("fail", "warn"):
        for c in report.checks:
            if c.outcome == outcome:
                lines.append(f"  {outcome.upper()} {c.endpoint} {c.id}: {c.message}")
    if report.deep is not None:
        lines += deep_lines(report.deep)
    verdict = {
        "pass": "PASS",
        "fail": "FAIL",
        "error": "ERROR (CRM unreachable)",
        "cancelled": "CANCELLED",
    }[report.status]
    marked = (
        "" if report.status == "error" else f"; probe records are marked verify-{report.runId}-*"
    )
    lines.append(f"verdict: {verdict} (exit {report.exitCode}){marked}")
    return "\n".join(lines)


def to_json(report: Report) -> bytes:
    return msgspec.json.format(msgspec.json.encode(report), indent=2) + b"\n"


def junit_xml(report: Report) -> bytes:
    """One test case per check (classname: its endpoint); a failure per failing check.

    An unreachable CRM or a cancelled run (exit 2) is one more failing case, so the file
    never reads green when the exit code is not 0.
    """
    incomplete = report.status in ("error", "cancelled")
    deep = report.deep
    fails = (
        report.summary["fail"]
        + (1 if incomplete else 0)
        + (1 if deep is not None and deep.outcome != "pass" else 0)
    )
    suite = ET.Element(
        "testsuite",
        {
            "name": "emulator verify",
            "tests": str(len(report.checks) + incomplete + (deep is not None)),
            "failures": str(fails),
            "errors": "0",
            "skipped": str(report.summary["skip"]),
            "time": f"{report.durationMs / 1000:.3f}",
        },
    )
    if report.status == "cancelled":
        case = ET.SubElement(suite, "testcase", {"classname": "verify", "name": "completed"})
        ET.SubElement(case, "failure", {"message": report.message or "cancelled"})
    elif report.status == "error":
        case = ET.SubElement(suite, "testcase", {"classname": "GET /health", "name": "reachable"})
        ET.SubElement(
            case, "failure", {"message": report.message or "unreachable"}
        ).text = report.message
    for c in report.checks:
        case = ET.SubElement(suite, "testcase", {"classname": c.endpoint, "name": c.id})
        detail = f"{c.message}\nrule: {c.rule}\n" + "\n".join(
            f"{x.method} {x.path} (key {x.key}) -> {x.status or x.error}" for x in c.exchanges
        )
        match c.outcome:
            case "fail":
                ET.SubElement(case, "failure", {"message": c.message}).text = detail
            case "skip":
                ET.SubElement(case, "skipped", {"message": c.message})
            case "warn":
                ET.SubElement(case, "system-out").text = f"WARNING: {detail}"
            case "pass":
                pass
    if deep is not None:
        deep_junit(suite, deep)
    suites = ET.Element("testsuites", {"tests": suite.get("tests", "0"), "failures": str(fails)})
    suites.append(suite)
    return ET.tostring(suites, encoding="utf-8", xml_declaration=True) + b"\n"
