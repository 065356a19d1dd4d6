"""The report's outputs (summary, JSON, JUnit, HTML): every kind of finding reaches every one,
and JUnit fails exactly when the exit code is not 0."""

from __future__ import annotations

from html.parser import HTMLParser
from xml.etree import ElementTree as ET

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st
from markupsafe import escape

from emulator.exporter.client import Exchange
from emulator.exporter.plan import Finding
from emulator.exporter.report import (
    EXAMPLES_PER_KIND,
    PHASES,
    FailedRecord,
    Report,
    add_finding,
    exit_code,
    junit_xml,
    new_report,
    summary,
)
from emulator.exporter.report_html import html_report

SYNC = "POST /contacts/sync"


def exchange(n: int) -> Exchange:
    return Exchange(
        "POST", "/contacts/sync", 200, 1.0, b'{"contacts": []}', f'{{"n": {n}}}'.encode(), 1
    )


def crowded_report() -> Report:
    """250 whole-record warnings first, then one cleared core field `email` warning."""
    report = new_report("r1", "http://crm.test", "2026-01-01T00:00:00.000Z")
    for i in range(250):
        add_finding(
            report,
            Finding("warning", SYNC, "`properties` carry a whole stored record", f"externalId {i}"),
            exchange(i),
        )
    add_finding(
        report,
        Finding("warning", SYNC, "sync-back cleared core field `email`", "contacts 7"),
        exchange(999),
    )
    report.status, report.exitCode = "ok", exit_code(report)
    return report


def test_findings_are_grouped_per_kind_with_counts_and_a_few_examples() -> None:
    report = crowded_report()
    groups = {g.message: g for g in report.warnings}
    assert groups["`properties` carry a whole stored record"].count == 250
    assert len(groups["`properties` carry a whole stored record"].examples) == EXAMPLES_PER_KIND
    email = groups["sync-back cleared core field `email`"]
    assert email.count == 1 and email.examples[0].about == "contacts 7"
    assert (
        email.examples[0].exchange is not None
        and email.examples[0].exchange.response == '{"n": 999}'
    )
    assert report.checks[SYNC].warnings == 251


def test_a_rare_kind_is_in_the_summary_json_junit_and_html() -> None:
    report = crowded_report()
    assert "cleared core field `email` (1x, e.g. contacts 7)" in summary(report)
    assert "whole stored record (250x" in summary(report)
    data = msgspec.json.decode(msgspec.json.encode(report))
    assert {"sync-back cleared core field `email`", "`properties` carry a whole stored record"} == {
        g["message"] for g in data["warnings"]
    }
    case = next(
        c for c in ET.fromstring(junit_xml(report)).iter("testcase") if c.get("name") == SYNC
    )
    out = case.findtext("system-out") or ""
    assert "cleared core field `email` (1x)" in out and "whole stored record (250x)" in out
    page = html_report(report)
    assert f"[{SYNC}] sync-back cleared core field `email`: 1</h3>" in page
    assert f"[{SYNC}] `properties` carry a whole stored record: 250</h3>" in page
    assert "contacts 7" in page and "{&#34;n&#34;: 999}" in page


def test_html_escapes_everything_and_references_nothing_outside() -> None:
    report = new_report("r<1>", "http://crm.test/<script>", "2026-01-01T00:00:00.000Z")
    evil = '<img src=x onerror="alert(1)">'
    add_finding(
        report,
        Finding("violation", "POST /tasks", evil, evil),
        Exchange("POST", "/tasks", 500, 1.0, evil.encode(), evil.encode(), 1),
    )
    report.failed.append(
        FailedRecord(
            kind="tasks", id=evil, reason=evil, phase="tasks", heldBack=[evil], heldBackTotal=1
        )
    )
    report.phases["tasks"].failed = 1
    page = html_report(report)
    assert "<img" not in page and "<script>" not in page and "&lt;img" in page

    found: list[str] = []

    class Refs(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            found.extend(f"{tag} {k}={v}" for k, v in attrs if k in ("src", "href"))
            if tag in ("script", "link", "img", "iframe"):
                found.append(tag)

    Refs().feed(page)
    assert found == []


def failures(xml: bytes) -> int:
    return int(ET.fromstring(xml).get("failures") or 0)


def test_junit_fails_on_failed_task_completions_alone() -> None:
    report = new_report("r2", "http://crm.test", "2026-01-01T00:00:00.000Z")
    report.phases["tasks"].failed = 2
    report.failed += [
        FailedRecord(
            kind="task completion",
            id=str(i),
            reason="PATCH /tasks/batch answered 500: boom",
            phase="tasks",
        )
        for i in (1, 2)
    ]
    report.status = "failed"
    report.exitCode = exit_code(report)
    xml = junit_xml(report)
    assert report.exitCode == 1 and failures(xml) == 1
    case = next(c for c in ET.fromstring(xml).iter("testcase") if c.get("name") == "tasks")
    failure = case.find("failure")
    assert failure is not None and "answered 500: boom" in (failure.text or "")


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(st.sampled_from(PHASES), st.integers(0, 3)),
    st.lists(
        st.sampled_from(["GET /health", SYNC, "POST /tasks", "PATCH /tasks/batch"]), max_size=4
    ),
    st.lists(st.sampled_from(["GET /users", "POST /tasks/batch"]), max_size=3),
    st.booleans(),
    st.booleans(),
)
def test_junit_failures_exactly_when_the_exit_code_is_not_0(
    failed: dict[str, int], violations: list[str], warnings: list[str], aborted: bool, strict: bool
) -> None:
    report = new_report("r3", "http://crm.test", "2026-01-01T00:00:00.000Z")
    report.strict = strict
    for phase, n in failed.items():
        report.phases[phase].failed = n
    for check in violations:
        add_finding(report, Finding("violation", check, "broken"), None)
    for check in warnings:
        add_finding(report, Finding("warning", check, "odd"), None)
    report.status = "aborted" if aborted else "ok"
    report.exitCode = exit_code(report)
    assert (failures(junit_xml(report)) > 0) == (report.exitCode != 0)


def test_every_output_gives_the_cleared_total_and_one_line_per_field() -> None:
    from emulator.exporter.report import note_cleared

    report = new_report("r4", "http://crm.test", "2026-01-01T00:00:00.000Z")
    cleared = {
        ("contacts", "email", "null"): 3,
        ("contacts", "mobilePhone", "echo"): 156,
        ("companies", "industry", "absent"): 120,
        ("companies", "accountTier", "absent"): 156,
    }
    for (kind, name, cause), n in cleared.items():
        for _ in range(n):
            note_cleared(report, kind, name, cause)
    report.status, report.exitCode = "ok", exit_code(report)
    verdict = (
        "sync-back cleared 435 platform value(s): 276 because the CRM left the property out"
        " of `properties`; 156 because `properties` echoed the CRM's last update instead of"
        " the fields to sync back; 3 because the CRM answered the property as null"
    )
    lines = {f"{kind} `{name}`: {n}" for (kind, name, _), n in cleared.items()}
    text = summary(report)
    assert verdict in text and all(f"cleared {line}" in text for line in lines)
    case = next(
        c
        for c in ET.fromstring(junit_xml(report)).iter("testcase")
        if c.get("name") == "fields cleared by sync-back"
    )
    junit = (case.findtext("system-out") or "").splitlines()
    assert junit[0] == verdict and set(junit[1:]) == lines
    data = msgspec.json.decode(msgspec.json.encode(report))
    assert data["clearedTotal"] == 435
    assert {(c["kind"], c["field"], c["count"]) for c in data["clearedByField"]} == {
        (kind, name, n) for (kind, name, _), n in cleared.items()
    }
    assert data["clearedByCause"] == {"absent": 276, "echo": 156, "null": 3}
    page = html_report(report)
    assert str(escape(verdict)) in page
    for (kind, name, _), n in cleared.items():
        assert f'<tr><td>{kind}</td><td>{name}</td><td class="n">{n}</td></tr>' in page


def test_strict_turns_a_warning_into_a_failed_run_in_every_output() -> None:
    report = new_report("r5", "http://crm.test", "2026-01-01T00:00:00.000Z")
    add_finding(report, Finding("warning", "POST /companies", "answered 200"), None)
    assert exit_code(report) == 0 and failures(junit_xml(report)) == 0
    report.strict = True
    report.status, report.exitCode = "failed", exit_code(report)
    assert report.exitCode == 1
    xml = ET.fromstring(junit_xml(report))
    case = next(c for c in xml.iter("testcase") if c.get("name") == "POST /companies")
    assert case.find("failure") is not None and "answered 200" in (
        case.find("failure").text or ""  # type: ignore[union-attr]
    )
    assert "--strict" in summary(report) and "Strict" in html_report(report)
