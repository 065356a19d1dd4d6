"""The `verify --deep` result in every output: the JSON struct, summary lines, JUnit, HTML.

A failure is shown as the shrunk sequence of numbered requests, each with a curl command line
that repeats it (the API key as `***`: put yours in its place), and the rule it broke.
"""

from __future__ import annotations

import shlex
from html import escape
from typing import Annotated, Literal
from xml.etree import ElementTree as ET

import msgspec

from emulator.wire import NonNegative64, Wire

DEEP_CLASS = "verify --deep"
DEFAULT_EXAMPLES = 60  # sequences drawn by default: 10-25 s against the reference CRM, loaded
MAX_EXAMPLES = 100_000
DEFAULT_TIME_LIMIT = 300.0


class DeepOptions(Wire):
    """What `verify --deep` was asked: how many sequences, drawn from which seed."""

    examples: Annotated[int, msgspec.Meta(ge=1, le=MAX_EXAMPLES)] = DEFAULT_EXAMPLES
    seed: NonNegative64 = 0
    # seconds: past it no new sequence starts and shrinking stops (the shortest so far is shown)
    timeLimit: Annotated[float, msgspec.Meta(gt=0, le=86400)] = DEFAULT_TIME_LIMIT


DEEP_CASE = "random call sequences"


class DeepStep(Wire):
    """One request of a sequence and the CRM's answer (the API key redacted)."""

    n: int
    method: str
    path: str
    request: str | None
    status: int  # 0: no HTTP answer
    response: str
    error: str | None = None
    curl: str = ""


class DeepRun(Wire):
    outcome: Literal["pass", "fail", "error"]
    seed: int
    examples: int  # sequences asked for
    stepsPerSequence: int
    sequences: int  # sequences run, shrinking included
    calls: int
    durationMs: float
    rule: str | None = None  # the broken invariant's id
    ruleText: str | None = None
    message: str | None = None
    sequence: list[DeepStep] = msgspec.field(default_factory=list)  # the shortest failing one
    invariants: list[str] = msgspec.field(default_factory=list)
    apiKeyHeader: str = "X-API-Key"


def curl(base_url: str, header: str, step: DeepStep) -> str:
    """A command line repeating `step` (the key left as ***)."""
    parts = ["curl", "-sS", "-X", step.method, f"{base_url.rstrip('/')}{step.path}"]
    parts += ["-H", f"{header}: ***", "-H", "Accept: application/json"]
    if step.request is not None:
        parts += ["-H", "Content-Type: application/json", "--data-raw", step.request]
    return " ".join(shlex.quote(p) for p in parts)


def with_curl(run: DeepRun, base_url: str) -> DeepRun:
    for step in run.sequence:
        step.curl = curl(base_url, run.apiKeyHeader, step)
    return run


def answer_text(step: DeepStep) -> str:
    return f"{step.status} {step.response[:300]}" if step.status else f"no answer: {step.error}"


def deep_lines(run: DeepRun) -> list[str]:
    """The terminal summary of a deep run: the verdict, and a failure's numbered sequence."""
    head = (
        f"deep: {run.outcome.upper()} seed {run.seed}, {run.sequences} sequences "
        f"({run.examples} asked, up to {run.stepsPerSequence} calls each), {run.calls} calls "
        f"in {run.durationMs / 1000:.1f} s"
    )
    lines = [head]
    if run.outcome == "fail":
        lines.append(f"  FAIL deep/{run.rule}: {run.message}")
        lines.append(f"  rule: {run.ruleText}")
        lines.append(f"  shortest failing sequence ({len(run.sequence)} requests):")
        for step in run.sequence:
            lines.append(f"  {step.n}. {step.method} {step.path} -> {answer_text(step)}")
            lines.append(f"     {step.curl}")
        lines.append(f"  repeat it: emulator verify --deep --seed {run.seed} ...")
    elif run.message:
        lines.append(f"  {run.message}")
    return lines


def deep_junit(suite: ET.Element, run: DeepRun) -> None:
    """The deep run as one test case: a failure (or error) carries the numbered sequence."""
    case = ET.SubElement(suite, "testcase", {"classname": DEEP_CLASS, "name": DEEP_CASE})
    text = "\n".join(deep_lines(run))
    if run.outcome != "pass":
        ET.SubElement(case, "failure", {"message": run.message or run.outcome}).text = text
    else:
        ET.SubElement(case, "system-out").text = text


def deep_html_head(run: DeepRun) -> str:
    """The deep verdict under the report's verdict (the section is at the end)."""
    cls = "pass" if run.outcome == "pass" else "fail"
    broke = f": broke <code>{escape(run.rule)}</code>" if run.rule else ""
    return (
        f'<p>Deep mode (seed {run.seed}): <a href="#deep" class="{cls}">'
        f"{escape(run.outcome.upper())}</a>{broke}</p>"
    )


def deep_html(run: DeepRun) -> str:
    """The deep run's section of the HTML report."""
    cls = {"pass": "pass", "fail": "fail", "error": "fail"}[run.outcome]
    steps = "".join(
        f"<li><p><code>{escape(s.method)} {escape(s.path)}</code> &rarr; "
        f"<b>{escape(str(s.status) if s.status else 'no answer: ' + (s.error or ''))}</b></p>"
        + (f"<pre>request: {escape(s.request)}</pre>" if s.request is not None else "")
        + f"<pre>answer: {escape(s.response)}</pre><pre>{escape(s.curl)}</pre></li>"
        for s in run.sequence
    )
    failure = ""
    if run.outcome == "fail":
        failure = (
            f"<p><i>Rule broken</i> (<code>{escape(run.rule or '')}</code>): "
            f"{escape(run.ruleText or '')}</p><p>{escape(run.message or '')}</p>"
            f"<p>Shortest failing sequence, {len(run.sequence)} requests (the API key is "
            f"<code>***</code>):</p><ol>{steps}</ol>"
        )
    elif run.message:
        failure = f"<p>{escape(run.message)}</p>"
    invariants = "".join(f"<li>{escape(i)}</li>" for i in run.invariants)
    return (
        f'<h2 id="deep"><span class="{cls}">verify --deep: {escape(run.outcome.upper())}'
        f"</span></h2><p>Seed {run.seed}: {run.sequences} sequences ({run.examples} asked, up "
        f"to {run.stepsPerSequence} calls each), {run.calls} calls in "
        f"{run.durationMs / 1000:.1f} s.</p>{failure}"
        f"<details><summary>Invariants checked after every call</summary><ul>{invariants}"
        "</ul></details>"
    )
