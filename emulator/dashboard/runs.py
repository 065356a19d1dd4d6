"""Export and verify runs (start, progress, report) and scenario replays."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from emulator.control.scenarios import read_allowed
from emulator.dashboard.render import form_fields, page, problem, serves
from emulator.fixtures.loader import DEFAULT_FIXTURES
from emulator.path_roots import PathRefused
from emulator.scenarios import models as sm
from emulator.scenarios.runner import run_loaded
from emulator.workspace_scope import workspace

BUNDLED_SCENARIOS = DEFAULT_FIXTURES.parent / "scenarios"


def _exports(request: Request) -> dict[str, Any]:
    """The export runs the control API keeps (none before the first start)."""
    return workspace(request).exports.runs  # type: ignore[no-any-return]


async def runs(request: Request) -> Response:
    newest_first = sorted(
        (e.report for e in _exports(request).values()), key=lambda r: r.startedAt, reverse=True
    )
    return page(
        request,
        "runs.html",
        reports=newest_first,
        verify_available=serves(request, "POST", "/_emulator/verify"),
        verify_runs=request.app.state.services.verify_runs.recent(),
    )


async def export_run(request: Request) -> Response:
    export_id = request.path_params["exportId"]
    exporter = _exports(request).get(export_id)
    if exporter is None:
        return problem(request, 404, f"No export {export_id} (runs are kept until a restart)")
    html_report = f"/_emulator/exports/{export_id}/report.html"
    return page(
        request,
        "export.html",
        report=exporter.report,
        html_report=html_report if serves(request, "GET", html_report) else None,
    )


async def verify_run(request: Request) -> Response:
    verify_id = request.path_params["verifyId"]
    if not serves(request, "GET", f"/_emulator/verify/{verify_id}"):
        return problem(request, 404, "verify is not available in this build")
    html_report = f"/_emulator/verify/{verify_id}/report.html"
    return page(
        request,
        "verify.html",
        verify_id=verify_id,
        html_report=html_report if serves(request, "GET", html_report) else None,
        run=request.app.state.services.verify_runs.get(verify_id),
        cancel=serves(request, "DELETE", f"/_emulator/verify/{verify_id}"),
    )


def scenario_roots() -> list[Path]:
    """Where scenarios may be run from: the bundled rule scenarios and the working directory."""
    roots = [BUNDLED_SCENARIOS.resolve()] if BUNDLED_SCENARIOS.is_dir() else []
    return [*roots, Path.cwd().resolve()]


def _choices() -> list[tuple[str, str]]:
    """(path, label) of the bundled scenario directory and each of its files."""
    if not BUNDLED_SCENARIOS.is_dir():
        return []
    root = BUNDLED_SCENARIOS.resolve()
    files = sm.scenario_files([str(root)])
    return [(str(root), f"all {len(files)} bundled scenarios")] + [
        (str(f), str(f.relative_to(root))) for f in files
    ]


def _within_roots(text: str) -> Path | None:
    path = Path(text).expanduser()
    path = (path if path.is_absolute() else Path.cwd() / path).resolve()
    inside = any(path == root or root in path.parents for root in scenario_roots())
    return path if inside and path.exists() else None


async def scenarios(request: Request) -> Response:
    """GET: the choices; POST (a form with `path`): replay that file or directory."""
    chosen, result, error = "", None, None
    if request.method == "POST":
        chosen = form_fields(await request.body()).get("path", "").strip()
        path = _within_roots(chosen) if chosen else None
        if path is None:
            roots = ", ".join(str(r) for r in scenario_roots())
            error = f"{chosen or '(no path)'}: no such file or directory under the roots ({roots})"
        else:
            try:  # the server's own path rules too: regular files, size-limited, off the loop
                settings = workspace(request).emulator.settings
                loaded = await read_allowed(settings, str(path), scenario_roots())
            except PathRefused as exc:
                error = f"{chosen}: {exc}"
            else:
                result = await run_loaded(loaded, workspace(request).open_server, quiet=True)
    return page(
        request,
        "scenarios.html",
        choices=_choices(),
        roots=scenario_roots(),
        chosen=chosen,
        result=result,
        error=error,
        status=400 if error else 200,
    )
