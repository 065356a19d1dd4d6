"""The export report as one self-contained HTML page (inline style, no script, no external
asset); Jinja2 escapes every value the CRM or the platform put into it."""

from __future__ import annotations

from typing import Any

from jinja2 import Environment, StrictUndefined

from emulator.exporter.report import FailedRecord, Report, cleared_verdict, duplicate_lines

HTML_FAILED_PER_PHASE = 1000  # failed records listed per phase (all are counted; JSON has all)
HTML_CLEARED = 200  # cleared fields listed (all are counted)

_TEMPLATE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Export {{ r.id }}: {{ r.status }}</title>
<style>
body { font: 14px/1.45 system-ui, sans-serif; margin: 2rem; color: #1d1d1f; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.15rem; margin-top: 2rem; }
table { border-collapse: collapse; margin: .5rem 0; }
th, td { border: 1px solid #ccc; padding: .25rem .6rem; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
.ok { color: #176f2c; } .failed, .aborted, .cancelled, .violation { color: #b00020; } .warning { color: #8a5a00; }
pre { background: #f7f7f7; padding: .5rem; white-space: pre-wrap; word-break: break-all; margin: .2rem 0; }
details { margin: .2rem 0 .6rem 1rem; } .muted { color: #666; }
</style>
</head>
<body>
<h1>Export <code>{{ r.id }}</code> to <code>{{ r.crmUrl }}</code>:
<span class="{{ r.status }}">{{ r.status }}</span> (exit {{ r.exitCode }})</h1>
<p>Started {{ r.startedAt }}, finished {{ r.finishedAt or "-" }} (wall clock, UTC), {{ "%.2f"|format(r.seconds) }} s.
Virtual clock: {{ r.virtualStartedAt or "-" }} to {{ r.virtualFinishedAt or "-" }}.
Owner selection: {{ "on" if r.ownerSelection else "off" }}.{% if r.strict %} Strict: every warning fails the run.{% endif %}</p>
{% if r.message %}<p class="failed">{{ r.message }}</p>{% endif %}
{% for n in r.notes %}<p class="warning">Note: {{ n }}</p>
{% endfor %}
{% if duplicates %}
<h2>Possibly duplicated ({{ duplicates|length }})</h2>
<ul>
{% for line in duplicates %}<li>{{ line }}</li>
{% endfor %}
</ul>
{% endif %}

<h2>Phases</h2>
<table>
<tr><th>phase</th>{% for c in counts %}<th>{{ c }}</th>{% endfor %}<th>requests</th><th>seconds</th></tr>
{% for name, s in r.phases.items() %}
<tr><td>{{ name }}</td>{% for c in counts %}<td class="n{% if c == 'failed' and s.failed %} failed{% endif %}">{{ s[c] }}</td>{% endfor %}
<td class="n">{{ s.requests }}</td><td class="n">{{ "%.2f"|format(s.seconds) }}</td></tr>
{% endfor %}
</table>
{% set rb = r.taskReadBack %}
<p>Task read-back: {{ rb.asked }} asked, {{ rb.open }} open, {{ rb.completedOnCrm }} completed on the CRM
(now completed on the platform), {{ rb.unknown }} unknown to the CRM{% if rb.unknownIds %}
({{ rb.unknownIds|join(", ") }}){% endif %}.</p>

<h2>Contract checks</h2>
<table>
<tr><th>check</th><th>calls</th><th>violations</th><th>warnings</th></tr>
{% for c in r.checks.values() %}
<tr><td>{{ c.name }}</td><td class="n">{{ c.calls }}</td>
<td class="n{% if c.violations %} violation{% endif %}">{{ c.violations }}</td>
<td class="n{% if c.warnings %} warning{% endif %}">{{ c.warnings }}</td></tr>
{% endfor %}
</table>

<h2>Endpoints</h2>
<table>
<tr><th>endpoint</th><th>status</th><th>calls</th><th>attempts</th><th>answers</th><th>violations</th><th>warnings</th></tr>
{% for name, e in r.endpoints.items() %}
<tr><td>{{ name }}</td><td class="{{ endpoint_class[e.status] }}">{{ e.status }}</td>
<td class="n">{{ e.calls }}</td><td class="n">{{ e.attempts }}</td>
<td>{% for k, n in e.outcomes|dictsort %}{{ n }} {{ k }}{% if not loop.last %}, {% endif %}{% else %}-{% endfor %}</td>
<td class="n{% if e.violations %} violation{% endif %}">{{ e.violations }}</td>
<td class="n{% if e.warnings %} warning{% endif %}">{{ e.warnings }}</td></tr>
{% endfor %}
</table>

{% for title, severity, groups in (("Violations", "violation", r.violations), ("Warnings", "warning", r.warnings)) %}
<h2>{{ title }} ({{ groups|sum(attribute="count") }} in {{ groups|length }} kind(s))</h2>
{% for g in groups %}
<h3 class="{{ severity }}">[{{ g.check }}] {{ g.message }}: {{ g.count }}</h3>
{% for e in g.examples %}
<details><summary>{{ e.about or "example " ~ loop.index }}{% if e.exchange %}: {{ e.exchange.method }} {{ e.exchange.path }} &rarr; {{ e.exchange.status or e.exchange.error }}{% endif %}</summary>
{% if e.exchange %}<p class="muted">request</p><pre>{{ e.exchange.request or "" }}</pre>
<p class="muted">response{% if e.exchange.error %} ({{ e.exchange.error }}){% endif %}</p><pre>{{ e.exchange.response or "" }}</pre>{% endif %}
</details>
{% endfor %}
{% if g.count > g.examples|length %}<p class="muted">{{ g.count - g.examples|length }} more of this kind.</p>{% endif %}
{% else %}<p>None.</p>
{% endfor %}
{% endfor %}

<h2>Failed records ({{ r.failed|length }})</h2>
{% for phase, failed in failed_by_phase.items() %}
<h3>{{ phase }}: {{ r.phases[phase].failed if phase in r.phases else failed|length }}</h3>
<table>
<tr><th>kind</th><th>id</th><th>reason</th><th>held back</th></tr>
{% for f in failed[:per_phase] %}
<tr><td>{{ f.kind }}</td><td>{{ f.id or "-" }}</td><td>{{ f.reason }}</td>
<td>{{ f.heldBack|join(", ") }}{% if f.heldBackTotal > f.heldBack|length %} and {{ f.heldBackTotal - f.heldBack|length }} more{% endif %}</td></tr>
{% endfor %}
</table>
{% if failed|length > per_phase %}<p class="muted">{{ failed|length - per_phase }} more in the JSON report.</p>{% endif %}
{% else %}<p>None.</p>
{% endfor %}

<h2>Fields cleared by sync-back ({{ r.clearedTotal }})</h2>
<p>{{ verdict }}.</p>
{% if cleared_fields %}
<table>
<tr><th>kind</th><th>field</th><th>cleared</th></tr>
{% for c in cleared_fields %}
<tr><td>{{ c.kind }}</td><td>{{ c.field }}</td><td class="n">{{ c.count }}</td></tr>
{% endfor %}
</table>
{% endif %}
{% if r.cleared %}
<table>
<tr><th>kind</th><th>id</th><th>field</th><th>previous value</th><th>core</th><th>cause</th></tr>
{% for c in r.cleared[:cleared_cap] %}
<tr><td>{{ c.kind }}</td><td class="n">{{ c.id }}</td><td>{{ c.field }}</td><td>{{ c.previous }}</td><td>{{ "yes" if c.core else "" }}</td><td>{{ c.cause }}</td></tr>
{% endfor %}
</table>
{% if r.clearedTotal > cleared_cap %}<p class="muted">{{ r.clearedTotal - cleared_cap }} more (the JSON report lists up to its own cap).</p>{% endif %}
{% else %}<p>None.</p>{% endif %}
</body>
</html>
"""

_env = Environment(autoescape=True, undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
_page = _env.from_string(_TEMPLATE)
# How an endpoint's status is shown: a failing one in red, one never called as a warning.
ENDPOINT_CLASS = {"exercised": "ok", "not exercised": "warning", "failing": "failed"}
COUNTS = (
    "sent",
    "received",
    "created",
    "updated",
    "unchanged",
    "alreadyLinked",
    "linkedUncounted",
    "failed",
    "heldBack",
    "skipped",
)


def html_report(report: Report) -> str:
    """The whole report, every kind of finding and every phase's failures, as one page."""
    failed_by_phase: dict[str, list[FailedRecord]] = {}
    for f in report.failed:
        failed_by_phase.setdefault(f.phase, []).append(f)
    return _page.render(
        r=report,
        counts=COUNTS,
        failed_by_phase=failed_by_phase,
        per_phase=HTML_FAILED_PER_PHASE,
        cleared_cap=HTML_CLEARED,
        **_counts_parts(report),
        endpoint_class=ENDPOINT_CLASS,
    )


def _counts_parts(report: Report) -> dict[str, Any]:
    """The cleared-field verdict and per-field counts, and the possibly duplicated events."""
    return {
        "verdict": cleared_verdict(report),
        "cleared_fields": sorted(report.clearedByField, key=lambda c: (-c.count, c.kind, c.field)),
        "duplicates": duplicate_lines(report),
    }
