"""Per Part A endpoint: the calls one run made, how they were answered, and its verdict.

Pure bookkeeping over plain values: the run counts each call here (`count_call`), and at the
end `settle` names every endpoint "exercised", "not exercised" or "failing" and answers the
findings that verdict carries. An endpoint whose every call failed (5xx, no answer, or a 2xx
body that is not JSON) fails the run; one never called is named, never passed over.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal, Protocol
from xml.etree import ElementTree as ET

from emulator.exporter.terms import Finding
from emulator.part_a import ENDPOINTS
from emulator.wire import Wire

EndpointStatus = Literal["not exercised", "exercised", "failing"]
NOT_EXERCISED = "not exercised: the run made no call to it"
FAILING = "every call failed"
# Answers that say an optional endpoint does not exist (GET /users: owner selection off).
OPTIONAL_MISSING = {"GET /users": frozenset({404, 405, 501})}


class EndpointCalls(Wire):
    """One endpoint's calls in a run: one per request (retries count as `attempts`), each
    under its final outcome: "2xx", "4xx", "5xx", "no answer: timeout", "no answer: connection"."""

    calls: int = 0
    attempts: int = 0
    outcomes: dict[str, int] = {}
    failed: int = 0  # calls answered 5xx, not answered, or answered a 2xx body that is not JSON
    violations: int = 0  # findings of its checks (an engagement PUT counts for its endpoint)
    warnings: int = 0
    status: EndpointStatus = "not exercised"


class Checked(Protocol):
    """What `settle` reads of a contract check (report.CheckResult)."""

    violations: int
    warnings: int


def new_endpoints() -> dict[str, EndpointCalls]:
    return {name: EndpointCalls() for name in ENDPOINTS}


def endpoint_of(check: str) -> str:
    """The endpoint a contract check calls: "PUT /contacts (engagement)" -> "PUT /contacts"."""
    return check.partition(" (")[0]


def outcome(status: int, error: str | None) -> str:
    """The outcome a call is counted under: its status class, or why no answer came."""
    if status:
        return f"{status // 100}xx"
    text = (error or "").lower()
    return (
        "no answer: timeout"
        if "timeout" in text or "timed out" in text
        else "no answer: connection"
    )


def _entry(endpoints: dict[str, EndpointCalls], check: str) -> EndpointCalls:
    name = endpoint_of(check)
    entry = endpoints.get(name)
    if entry is None:
        entry = endpoints[name] = EndpointCalls()
    return entry


def count_call(
    endpoints: dict[str, EndpointCalls], check: str, status: int, error: str | None, attempts: int
) -> None:
    """Count one call of `check`'s endpoint under its final answer."""
    entry = _entry(endpoints, check)
    entry.calls += 1
    entry.attempts += attempts
    key = outcome(status, error)
    entry.outcomes[key] = entry.outcomes.get(key, 0) + 1
    missing = OPTIONAL_MISSING.get(endpoint_of(check), frozenset())
    if status == 0 or (status >= 500 and status not in missing):
        entry.failed += 1


def count_unreadable(endpoints: dict[str, EndpointCalls], check: str) -> None:
    """A 2xx call (already counted) whose body is not JSON: it failed too."""
    _entry(endpoints, check).failed += 1


def outcome_text(entry: EndpointCalls) -> str:
    """ "3 calls: 2 2xx, 1 5xx (5 attempts)" or "not exercised"."""
    if not entry.calls:
        return "not exercised"
    parts = ", ".join(f"{n} {k}" for k, n in sorted(entry.outcomes.items()))
    retried = f" ({entry.attempts} attempts)" if entry.attempts > entry.calls else ""
    calls = "call" if entry.calls == 1 else "calls"
    return f"{entry.calls} {calls}: {parts}{retried}"


def settle(endpoints: dict[str, EndpointCalls], *, name_unexercised: bool) -> list[Finding]:
    """Each endpoint's status; the findings it carries: a violation for one whose every call
    failed (the run fails), a warning for one never called when `name_unexercised` (a full
    run that went to its end: every endpoint had its chance)."""
    findings: list[Finding] = []
    for name, entry in endpoints.items():
        if not entry.calls:
            entry.status = "not exercised"
            if name_unexercised:
                findings.append(Finding("warning", name, NOT_EXERCISED))
        elif entry.failed >= entry.calls:
            entry.status = "failing"
            findings.append(Finding("violation", name, FAILING, outcome_text(entry)))
        else:
            entry.status = "exercised"
    return findings


def tally_findings(endpoints: dict[str, EndpointCalls], checks: Mapping[str, Checked]) -> None:
    """Each endpoint's violations and warnings: those of every check that calls it."""
    for entry in endpoints.values():
        entry.violations = entry.warnings = 0
    for check, result in checks.items():
        counted = endpoints.get(endpoint_of(check))
        if counted is not None:
            counted.violations += result.violations
            counted.warnings += result.warnings


def summary_lines(endpoints: Mapping[str, EndpointCalls]) -> list[str]:
    """One line per endpoint for the terminal summary."""
    lines = ["  endpoints (calls and their answers):"]
    width = max((len(n) for n in endpoints), default=0)
    for name, entry in endpoints.items():
        flag = {"failing": "FAILING ", "not exercised": "", "exercised": ""}[entry.status]
        findings = ", ".join(
            f"{n} {word}"
            for n, word in ((entry.violations, "violation(s)"), (entry.warnings, "warning(s)"))
            if n
        )
        tail = f"; {findings}" if findings and entry.calls else ""
        lines.append(f"    {name:<{width}}  {flag}{outcome_text(entry)}{tail}")
    return lines


def junit_cases(endpoints: Mapping[str, EndpointCalls]) -> Iterable[ET.Element]:
    """A test case per endpoint: failing fails it, never called skips it under that name,
    otherwise it passes with its calls in system-out."""
    for name, entry in endpoints.items():
        case = ET.Element("testcase", classname="crm-endpoint", name=name)
        text = outcome_text(entry)
        if entry.status == "failing":
            failure = ET.SubElement(case, "failure", message=f"{FAILING}: {text}")
            failure.text = f"{name}: {text}"
        elif entry.status == "not exercised":
            ET.SubElement(case, "skipped", message=f"{name} {NOT_EXERCISED}")
        else:
            out = ET.SubElement(case, "system-out")
            out.text = f"{name}: {text}"
        yield case
