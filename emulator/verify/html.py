"""The verify report as one self-contained HTML page: no scripts, no external assets.

A table per spec endpoint, one row per check with its outcome and message; each row opens
(<details>) onto the rule and the exchanges behind it. Everything from the CRM is escaped.
"""

from __future__ import annotations

from html import escape

from emulator.verify.catalogue import ENDPOINTS
from emulator.verify.deep_report import deep_html, deep_html_head
from emulator.verify.report import OUTCOMES, CheckResult, Exchange, Report

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}
h1{font-size:1.4em}h2{font-size:1.1em;margin-top:2em;font-family:monospace}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.35em .5em;
text-align:left;vertical-align:top}th{background:#f4f4f4}
.pass{color:#1a7f37}.fail{color:#cf222e;font-weight:bold}.warn{color:#9a6700}.skip{color:#666}
.badge{display:inline-block;min-width:3.2em;font-family:monospace;text-transform:uppercase}
pre{white-space:pre-wrap;word-break:break-all;background:#f6f8fa;padding:.5em;margin:.3em 0;
max-height:20em;overflow:auto;font-size:12px}summary{cursor:pointer}
.verdict{font-size:1.2em;padding:.5em;border-radius:4px;display:inline-block}
.verdict.pass{background:#dafbe1}.verdict.fail,.verdict.error,.verdict.cancelled{background:#ffebe9;color:#cf222e}
"""


def _exchange(x: Exchange) -> str:
    answer = f"{x.status}" if x.status else f"no answer: {x.error}"
    head = (
        f"<p><code>{escape(x.method)} {escape(x.path)}</code> (key: {escape(x.key)}) "
        f"&rarr; <b>{escape(answer)}</b> in {x.durationMs:.0f} ms</p>"
    )
    parts = [head]
    if x.request is not None:
        parts.append(f"<pre>request: {escape(x.request)}</pre>")
    parts.append(f"<pre>answer: {escape(x.response)}</pre>")
    return "".join(parts)


def _row(c: CheckResult) -> str:
    exchanges = "".join(_exchange(x) for x in c.exchanges) or "<p>No exchange.</p>"
    return (
        f'<tr><td class="{c.outcome}"><span class="badge">{c.outcome}</span></td>'
        f"<td><code>{escape(c.id)}</code></td><td><details><summary>{escape(c.message)}</summary>"
        f"<p><i>Rule:</i> {escape(c.rule)}</p>{exchanges}</details></td></tr>"
    )


def html_report(report: Report) -> bytes:
    counts = ", ".join(f'<span class="{o}">{report.summary[o]} {o}</span>' for o in OUTCOMES)
    sections = []
    for endpoint in ENDPOINTS:
        rows = [c for c in report.checks if c.endpoint == endpoint]
        worst = next(
            (o for o in ("fail", "warn", "skip", "pass") if any(c.outcome == o for c in rows)),
            "pass",
        )
        sections.append(
            f'<h2 id="{escape(endpoint)}"><span class="{worst}">{escape(endpoint)}</span></h2>'
            "<table><tr><th>Outcome</th><th>Check</th><th>What was seen (open for the rule and "
            f"the exchanges)</th></tr>{''.join(_row(c) for c in rows)}</table>"
        )
    message = f"<p>{escape(report.message)}</p>" if report.message else ""
    if report.deep is not None:
        message += deep_html_head(report.deep)
        sections.append(deep_html(report.deep))
    page = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>emulator verify: {escape(report.status)} {escape(report.crmUrl)}</title>"
        f"<style>{STYLE}</style></head><body>"
        f"<h1>CRM conformance: <code>{escape(report.crmUrl)}</code></h1>"
        f'<p class="verdict {escape(report.status)}">Verdict: {escape(report.status.upper())} '
        f"(exit code {report.exitCode})</p>{message}"
        f"<p>{len(report.checks)} checks: {counts}. Run <code>{escape(report.runId)}</code> "
        f"started {escape(report.startedAt)}, took {report.durationMs / 1000:.1f} s. Records the "
        f"probes created carry <code>externalId</code> <code>verify-{escape(report.runId)}-&lt;n&gt;</code>."
        f"</p>{''.join(sections)}</body></html>\n"
    )
    return page.encode()
