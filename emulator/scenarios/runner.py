"""Replay scenarios: each one in a fresh emulator of its own, served on a free loopback port.

The exporter reaches the CRM over real HTTP (faults such as dropConnection need a socket);
every CRM exchange is recorded in full at the transport, so call expectations see the same
sequence as the export journal without its body cap. A playback CRM is a transport that
answers from the recorded list, no server needed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, assert_never
from urllib.parse import urlsplit

import httpx
import msgspec
from msgspec import UNSET

from emulator.exporter.run import Exporter
from emulator.fixtures.models import CrmConnection, FixtureSet
from emulator.outbound import RetryPolicy, tls_verify
from emulator.platform import connection as platform_connection
from emulator.scenarios import models as sm
from emulator.scenarios.calls import Failed, check_calls, mismatch
from emulator.scenarios.expectations import check_expectations
from emulator.scenarios.fixtures import build_fixtures, scenario_base
from emulator.scenarios.match import show, subset
from emulator.scenarios.models import Failure, Outcome, ReplayResult, ScenarioResult
from emulator.scenarios.playback import PlaybackTransport, json_or_text
from emulator.scenarios.record import Exchange, RecordingTransport
from emulator.scenarios.results import summarise
from emulator.server import Platform, ServerOpener, StartupFailed
from emulator.settings import Settings
from emulator.state import Emulator

# Replays keep retries but not their waiting: the sequence is the same, only faster.
FAST_RETRIES = {"base": 0.005, "cap": 0.02, "retry_after_cap": 0.05}

log = logging.getLogger(__name__)


class Run:
    """The live state of one scenario: its server, client, CRM transport and what happened."""

    def __init__(
        self,
        scenario: sm.Scenario,
        fixtures: FixtureSet,
        base_url: str,
        emulator: Emulator,
        client: httpx.AsyncClient,
    ) -> None:
        self.scenario, self.fixtures, self.base_url = scenario, fixtures, base_url
        self.emulator, self.client = emulator, client
        self.calls: list[Exchange] = []
        self.report: Any = None
        crm = scenario.crm
        self.playback = (
            PlaybackTransport(crm.playback) if crm and crm.playback is not None else None
        )
        conn = fixtures.connection
        assert conn is not None
        if crm is not None and crm.crmUrl:
            url = crm.crmUrl
        elif self.playback is not None:
            url = "http://playback.invalid"
        else:
            url = platform_connection.resolve("/crm", base_url).base_url
        self.connection: CrmConnection = msgspec.structs.replace(conn, crmUrl=url)

    def transport(self) -> httpx.AsyncBaseTransport:
        if self.playback is not None:
            return self.playback
        conn = self.connection
        return httpx.AsyncHTTPTransport(
            verify=tls_verify(conn.verify, conn.caFile), limits=httpx.Limits(max_connections=4)
        )

    async def request(
        self, method: str, path: str, body: Any = UNSET, headers: dict[str, str] | None = None
    ) -> tuple[int, Any]:
        if not _own_path(path):  # an absolute URL would make the server call anywhere
            raise Failed(
                Failure(
                    at="path",
                    message=f"not a path of this emulator: {show(path, 80)}",
                    expected="/v1/..., /crm/... or /_emulator/...",
                    actual=show(path, 80),
                )
            )
        hdrs = dict(headers or {})
        if path.startswith("/v1") and not any(k.lower() == "x-api-key" for k in hdrs):
            hdrs["x-api-key"] = self.scenario.apiKey
        kwargs: dict[str, Any] = {"headers": hdrs}
        if body is not UNSET:
            kwargs["content"] = msgspec.json.encode(body)
            hdrs.setdefault("content-type", "application/json")
        answer = await self.client.request(method.upper(), path, **kwargs)
        return answer.status_code, json_or_text(answer.content)

    async def control(self, method: str, path: str, body: Any, at: str, what: str) -> Any:
        status, data = await self.request(method, path, body)
        if status >= 300:
            message = data.get("message") if isinstance(data, dict) else data
            raise Failed(
                Failure(
                    at=at,
                    message=f"{what} failed: {message}",
                    expected="2xx",
                    actual=f"{status} {show(data, 160)}",
                )
            )
        return data

    async def arm_faults(self, at: str) -> None:
        """The scenario's /v1 faults, through the control API (which checks them)."""
        for i, fault in enumerate(self.scenario.v1Faults):
            await self.control("POST", "/_emulator/v1-faults", fault, f"{at}[{i}]", "a /v1 fault")

    # -- steps -----------------------------------------------------------------------------

    async def export(self, step: sm.ExportStep, at: str) -> None:
        # No secret to redact: the calls are checked here, never written out.
        recorder = RecordingTransport(self.transport(), urlsplit(self.connection.crmUrl).path, "")
        exporter = Exporter(
            self.emulator.db,
            self.connection,
            now=self.emulator.clock.now_iso,
            transport=recorder,
            policy=RetryPolicy(retries=self.connection.retries, **FAST_RETRIES),  # type: ignore[arg-type]
            journal_limit=self.emulator.settings.journalLimit,
            journal_bytes=self.emulator.settings.journalBytes,
        )
        report = await exporter.run()
        calls = recorder.exchanges
        self.calls.extend(calls)
        self.report = msgspec.to_builtins(report)
        if step.expect is not UNSET:
            m = subset(step.expect, self.report)
            if m:
                raise mismatch(f"{at}.expect", m, "export report")
        if step.expectCalls is not UNSET:
            check_calls(step.expectCalls, calls, f"{at}.expectCalls")

    async def step(self, step: sm.Step, at: str) -> None:
        """Do one step; each asks the emulator (or its own playback) to change, never reaches in."""
        match step:
            case sm.ExportStep():
                await self.export(step, at)
            case sm.CompleteTasksStep():
                body = {"all": True} if step.ids is None else {"ids": step.ids}
                await self.control(
                    "POST", "/_emulator/tasks/complete", body, at, "completing tasks"
                )
            case sm.CallStep():
                await self.call(step, at)
            case sm.CrmSettingsStep():
                current = await self.control(
                    "GET", "/_emulator/crm/settings", UNSET, at, "reading CRM settings"
                )
                change = msgspec.to_builtins(step)
                change.pop("step", None)
                await self.control(
                    "PUT",
                    "/_emulator/crm/settings",
                    {**current, **change},
                    at,
                    "changing CRM settings",
                )
            case sm.ResetStep():
                await self.emulator.reset_onto(
                    self.fixtures
                )  # the scenario's fixtures, not a directory
                if self.playback is not None:
                    self.playback.rewind()
                await self.arm_faults("v1Faults")  # a reset removed them
            case sm.AdvanceClockStep():
                moves: dict[str, Any] = (
                    {"seconds": step.seconds} if step.seconds is not None else {"until": step.until}
                )
                await self.control(
                    "POST", "/_emulator/clock/advance", moves, at, "advancing the clock"
                )
            case unknown:
                assert_never(unknown)

    async def call(self, step: sm.CallStep, at: str) -> None:
        status, data = await self.request(step.method, step.path, step.body, step.headers)
        label = f"{step.method.upper()} {step.path}"
        if step.expectStatus is not None and status != step.expectStatus:
            raise Failed(
                Failure(
                    at=f"{at}.expectStatus",
                    message=f"{label}: status",
                    expected=str(step.expectStatus),
                    actual=f"{status} {show(data, 160)}",
                )
            )
        if step.expectBody is not UNSET:
            m = subset(step.expectBody, data)
            if m:
                raise mismatch(f"{at}.expectBody", m, label)

    # -- expectations ----------------------------------------------------------------------

    async def expectations(self) -> None:
        """The scenario's `expect`: calls, report, platform and CRM records."""
        missing = self.playback.missing if self.playback is not None else []
        await check_expectations(
            self.scenario.expect, self.request, self.calls, self.report, missing
        )


def _own_path(path: str) -> bool:
    """A path (and query) of the scenario's own emulator: no scheme, no host, no controls."""
    return path.startswith("/") and not path.startswith("//") and path.isprintable()


async def run_scenario(
    scenario: sm.Scenario, open_server: ServerOpener, base: Path | None = None, quiet: bool = False
) -> ScenarioResult:
    """Replay one scenario in a fresh emulator; never raises for a scenario's own problems.

    `open_server` starts the scenario's own emulator (the caller's app factory bound into it).
    `quiet` (the CLI): the scenario server's own error log is muted, since injected faults
    such as dropConnection make it log one on purpose.
    """
    t0 = time.perf_counter()
    file = scenario.source or "<inline>"
    root = base or scenario_base(scenario)

    def result(outcome: Outcome, failure: Failure | None = None) -> ScenarioResult:
        return ScenarioResult(
            name=scenario.name,
            file=scenario.source,
            outcome=outcome,
            seconds=round(time.perf_counter() - t0, 3),
            failure=failure,
        )

    try:
        fixtures, directory = build_fixtures(scenario, root, file)
    except sm.ScenarioError as exc:
        return result("error", Failure(at="fixtures", message=str(exc)))
    try:
        return await _run_embedded(
            scenario, fixtures, open_server(Settings(fixtures=directory), fixtures), quiet, result
        )
    except StartupFailed as exc:  # e.g. fixtures the store refuses (duplicate CRM user ids)
        return result("error", Failure(at="fixtures", message=f"cannot seed the emulator: {exc}"))
    except Exception as exc:  # a scenario's odd input must not become the server's 500
        log.exception("scenario %s crashed", scenario.name)
        return result("error", Failure(at="run", message=f"{type(exc).__name__}: {exc}"))


async def _run_embedded(
    scenario: sm.Scenario,
    fixtures: FixtureSet,
    server: AbstractAsyncContextManager[Platform],
    quiet: bool,
    result: Callable[..., ScenarioResult],
) -> ScenarioResult:
    async with server as platform:
        assert platform.server_base is not None
        if quiet:  # set after start-up: uvicorn configures its loggers when it starts
            logging.getLogger("uvicorn.error").setLevel(logging.CRITICAL)
        async with httpx.AsyncClient(base_url=platform.server_base, timeout=30) as client:
            run = Run(scenario, fixtures, platform.server_base, platform.emulator, client)
            try:
                await run.arm_faults("v1Faults")
                for i, step in enumerate(scenario.steps):
                    await run.step(step, f"steps[{i}]")
                await run.expectations()
            except Failed as exc:
                return result("fail", exc.failure)
    return result("pass")


async def replay(
    paths: list[str],
    open_server: ServerOpener,
    on_result: Callable[[ScenarioResult], None] | None = None,
    quiet: bool = False,
) -> ReplayResult:
    """Every scenario file of `paths` (files, or directories searched recursively), in order."""
    return await run_loaded(
        ((path, load_or_error(path)) for path in sm.scenario_files(paths)),
        open_server,
        on_result,
        quiet,
    )


def load_or_error(path: Path) -> sm.Scenario | sm.ScenarioError:
    try:
        return sm.load_scenario(path)
    except sm.ScenarioError as exc:
        return exc


async def run_loaded(
    loaded: Iterable[tuple[Path, sm.Scenario | sm.ScenarioError]],
    open_server: ServerOpener,
    on_result: Callable[[ScenarioResult], None] | None = None,
    quiet: bool = False,
) -> ReplayResult:
    """Run scenarios already read (a file that could not be read is an `error` result)."""
    t0 = time.perf_counter()
    results: list[ScenarioResult] = []
    for path, scenario in loaded:
        if isinstance(scenario, sm.ScenarioError):
            res = ScenarioResult(
                name=path.stem,
                file=str(path),
                outcome="error",
                seconds=0.0,
                failure=Failure(at="file", message=str(scenario)),
            )
        else:
            res = await run_scenario(scenario, open_server, quiet=quiet)
        results.append(res)
        if on_result:
            on_result(res)
    return summarise(results, time.perf_counter() - t0)
