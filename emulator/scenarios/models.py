"""The scenario file format (JSON or TOML), decoded into msgspec structs.

One file holds one scenario: the fixtures to start from, the CRM the exporter talks to, the
connection settings, an ordered list of steps and the expectations checked after the last step.
Subset matching everywhere: an expected object matches when each of its keys matches; an
expected list matches when each of its items matches a different actual item (any order).
CRM calls are the exception: they are matched in order (emulator/scenarios/match.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

from emulator.file_keys import explain
from emulator.fixtures.models import CrmSeed, FaultRule, SyncBackMode
from emulator.v1_fault_spec import V1FaultIn
from emulator.wire import FileWire, FileWireOmit, Wire

FixtureKind = Literal[
    "apiKeys",
    "users",
    "identities",
    "campaigns",
    "companies",
    "contacts",
    "lists",
    "savedViews",
    "conversations",
    "webhooks",
    "actionsRuns",
]
CrmKind = Literal["contacts", "companies", "activities", "tasks", "associations"]


class ScenarioError(Exception):
    """A scenario file is unreadable or invalid; the message names the file and the field."""


class ScenarioUnreadable(ScenarioError):
    """A scenario file cannot be read, or is not JSON (TOML)."""


# ---- fixtures -------------------------------------------------------------------------------


class ScenarioFixtures(FileWire):
    """The platform records to start from.

    `directory` (relative to the scenario file; default: the bundled fixtures/default) is read
    first; the kinds named in `replace` are then emptied; then each inline record is laid over
    the record with the same id (only the fields it gives change) or added when the id is new
    (api keys match on `key`). `connection` and `crm` of a fixture directory are replaced by
    the scenario's own `connection` and `crm` when those are given.
    """

    directory: str | None = None
    replace: list[FixtureKind] = []
    apiKeys: list[dict[str, Any]] = []
    users: list[dict[str, Any]] = []
    identities: list[dict[str, Any]] = []
    campaigns: list[dict[str, Any]] = []
    companies: list[dict[str, Any]] = []
    contacts: list[dict[str, Any]] = []
    lists: list[dict[str, Any]] = []
    savedViews: list[dict[str, Any]] = []
    conversations: list[dict[str, Any]] = []
    webhooks: list[dict[str, Any]] = []
    actionsRuns: list[dict[str, Any]] = []


# ---- the CRM --------------------------------------------------------------------------------


class PlaybackAnswer(FileWireOmit):
    """One recorded CRM answer; answers are given back in order per (method, path)."""

    method: str
    path: str
    status: int
    body: Any | UnsetType = UNSET  # JSON body (null is a JSON null)
    text: str | None = None  # raw, non-JSON body
    headers: dict[str, str] = {}
    # The JSON request body this answer was given to (`emulator record` writes it): a request
    # with an equal body takes this answer first, so concurrent or retried calls to one path
    # get their own answers whatever order they arrive in; other requests take the next in line.
    request: Any | UnsetType = UNSET


class ScenarioCrm(CrmSeed):
    """The CRM of a scenario: exactly one of three kinds.

    - the embedded reference CRM (default): `settings` (syncBack, usersStatus, syncErrors,
      updateFailures, faults...), `users`, `contacts`, `companies` it already holds;
    - `crmUrl`: an external CRM reached over HTTP(S) (nothing seeded);
    - `playback`: recorded answers (e.g. from `emulator record`), served in order per
      (method, path); a call with no answer left gets 599 and fails the scenario.
    """

    crmUrl: str | None = None
    playback: list[PlaybackAnswer] | None = None


# ---- steps ----------------------------------------------------------------------------------


class ExportStep(FileWire, tag_field="step", tag="export"):
    """Run one export with the scenario's connection; `expect*` check this run alone."""

    expect: Any | UnsetType = UNSET  # subset of this run's report
    expectCalls: CrmCallsExpect | UnsetType = UNSET  # this run's CRM calls only


class CompleteTasksStep(FileWire, tag_field="step", tag="completeTasks"):
    """Complete platform tasks (POST /_emulator/tasks/complete): the given ids, or all."""

    ids: list[int] | None = None


class CallStep(FileWire, tag_field="step", tag="call"):
    """One HTTP call to this emulator (/v1, /_emulator or /crm).

    /v1 calls without an x-api-key header get the scenario's `apiKey`.
    """

    method: str = "GET"
    path: str
    body: Any | UnsetType = UNSET
    headers: dict[str, str] = {}
    expectStatus: int | None = None
    expectBody: Any | UnsetType = UNSET  # subset of the JSON answer


class CrmSettingsStep(FileWireOmit, tag_field="step", tag="crmSettings"):
    """Change the reference CRM's settings mid-scenario; fields not given keep their value."""

    apiKey: str | UnsetType = UNSET
    apiKeyHeader: str | UnsetType = UNSET
    syncBack: SyncBackMode | UnsetType = UNSET
    usersStatus: Literal[200, 404, 405, 501] | UnsetType = UNSET
    syncErrors: list[str] | UnsetType = UNSET
    updateFailures: list[str] | UnsetType = UNSET
    faults: list[FaultRule] | UnsetType = UNSET  # checked as crm.json's faults are


class ResetStep(FileWire, tag_field="step", tag="reset"):
    """Put the platform and the reference CRM back to the scenario's starting state."""


class AdvanceClockStep(FileWire, tag_field="step", tag="advanceClock"):
    """Move the virtual clock (POST /_emulator/clock/advance): `seconds` or `until`."""

    seconds: float | None = None
    until: str | None = None


Step = ExportStep | CompleteTasksStep | CallStep | CrmSettingsStep | ResetStep | AdvanceClockStep


# ---- expectations ---------------------------------------------------------------------------


class CrmCallExpect(FileWireOmit):
    """One CRM call of the journal: method, path (`:id` style segments match any value),
    optional answer status and a subset of the request body."""

    method: str
    path: str
    status: int | UnsetType = UNSET
    body: Any | UnsetType = UNSET


class CrmCallsExpect(FileWire):
    """The CRM calls of the last export, in order: a subsequence, or the whole list (`exact`)."""

    calls: list[CrmCallExpect] = []
    exact: bool = False
    absent: list[CrmCallExpect] = []  # calls that must not appear at all
    counts: dict[str, int] = {}  # "METHOD /path" -> number of calls


class PlatformExpect(FileWire):
    """A /v1 read (GET `path` with the scenario's key) whose answer contains `fields`."""

    path: str
    fields: Any


class CrmRecordExpect(FileWireOmit):
    """A reference-CRM record as GET /_emulator/crm/{kind}/{crmId} shows it.

    The record is named by `crmId`, or found by `match` (a subset of its fields); `fields`
    is a subset of the record; `count` checks how many records of the kind match `match`.
    """

    kind: CrmKind
    crmId: str | UnsetType = UNSET
    match: dict[str, Any] | UnsetType = UNSET
    fields: dict[str, Any] | UnsetType = UNSET
    count: int | UnsetType = UNSET


class Expectations(FileWireOmit):
    crmCalls: CrmCallsExpect | UnsetType = UNSET
    report: Any | UnsetType = UNSET  # subset of the last export's report
    platform: list[PlatformExpect] = []
    crm: list[CrmRecordExpect] = []


# ---- the scenario ---------------------------------------------------------------------------


class Scenario(FileWire):
    """One scenario: fixtures to start from, the CRM, the connection, steps and expectations
    (at least one expectation: in `expect`, an export step or a call step)."""

    # The JSON Schema an editor checks the file against (ignored by the emulator).
    schema: str | None = msgspec.field(default=None, name="$schema")
    name: str
    description: str = ""
    apiKey: str = "demo-all"
    fixtures: ScenarioFixtures = msgspec.field(default_factory=ScenarioFixtures)
    crm: ScenarioCrm | None = None  # None: the fixture directory's reference CRM (crm.json)
    connection: dict[str, Any] = {}  # CrmConnection fields laid over the fixtures' connection
    # /v1 faults (POST /_emulator/v1-faults bodies), armed at the start and after each reset
    # step; decoded strictly here, their routes checked by the control API when armed
    v1Faults: list[V1FaultIn] = []
    steps: list[Step] = []
    expect: Expectations = msgspec.field(default_factory=Expectations)
    source: str | None = None  # the file it was read from (set by the loader)


# ---- results --------------------------------------------------------------------------------

Outcome = Literal["pass", "fail", "error"]


class Failure(Wire):
    """The first expectation that did not hold, expected and actual rendered short."""

    at: str
    message: str
    expected: str = ""
    actual: str = ""


class ScenarioResult(Wire):
    name: str
    file: str | None = None
    outcome: Outcome
    seconds: float
    failure: Failure | None = None


class ReplayResult(Wire):
    results: list[ScenarioResult]
    passed: int
    failed: int
    errors: int
    seconds: float


def _fail(
    file: str, exc: msgspec.ValidationError | msgspec.DecodeError, data: Any
) -> ScenarioError:
    where, message = explain(exc, Scenario, data)
    return ScenarioError(f"{file}: {where + ': ' if where else ''}{message}")


def expects_something(scenario: Scenario) -> bool:
    """Whether the scenario checks anything: a scenario without an expectation passes
    whatever happens, which no one means."""
    e = scenario.expect
    if e.crmCalls is not UNSET or e.report is not UNSET or e.platform or e.crm:
        return True
    for step in scenario.steps:
        if isinstance(step, ExportStep) and (
            step.expect is not UNSET or step.expectCalls is not UNSET
        ):
            return True
        if isinstance(step, CallStep) and (
            step.expectStatus is not None or step.expectBody is not UNSET
        ):
            return True
    return False


def check(scenario: Scenario, file: str) -> None:
    """Rules beyond the types; raises ScenarioError naming the field."""
    crm = scenario.crm
    if crm is not None and crm.crmUrl is not None and crm.playback is not None:
        raise ScenarioError(f"{file}: crm: give crmUrl or playback, not both")
    if "crmUrl" in scenario.connection:
        raise ScenarioError(f"{file}: connection.crmUrl: give the CRM's URL as crm.crmUrl")
    for i, step in enumerate(scenario.steps):
        if isinstance(step, AdvanceClockStep) and (step.seconds is None) == (step.until is None):
            raise ScenarioError(f"{file}: steps[{i}]: give exactly one of seconds or until")
        if isinstance(step, CallStep) and not step.path.startswith("/"):
            raise ScenarioError(f"{file}: steps[{i}].path: must start with /")
    for i, rec in enumerate(scenario.expect.crm):
        if (rec.crmId is UNSET) == (rec.match is UNSET):
            raise ScenarioError(f"{file}: expect.crm[{i}]: give exactly one of crmId or match")
    if not expects_something(scenario):
        raise ScenarioError(
            f"{file}: expect: the scenario expects nothing (give expect, an export step's"
            " expect or expectCalls, or a call step's expectStatus or expectBody)"
        )


def parse_scenario(data: bytes | str | dict[str, Any], file: str = "<scenario>") -> Scenario:
    """Decode a scenario from JSON text, TOML text (file ending .toml) or a decoded object."""
    raw: Any = data
    try:
        if isinstance(data, dict):
            scenario = msgspec.convert(data, Scenario)
        elif file.endswith(".toml"):
            import tomllib  # here, not at the top: `emulator serve` loads this module

            text = data.decode() if isinstance(data, bytes) else data
            try:
                raw = tomllib.loads(text)
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
                raise ScenarioUnreadable(f"{file}: invalid TOML: {exc}") from None
            scenario = msgspec.convert(raw, Scenario)
        else:
            scenario = msgspec.json.decode(data, type=Scenario)
    except msgspec.ValidationError as exc:  # (a DecodeError too: first)
        raise _fail(file, exc, raw) from None
    except msgspec.DecodeError as exc:
        raise ScenarioUnreadable(f"{file}: not JSON: {exc}") from None
    check(scenario, file)
    return scenario


def load_scenario(path: str | Path) -> Scenario:
    """Read one scenario file; `source` is set to its path (relative fixture paths use it)."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise ScenarioUnreadable(f"{p}: cannot read: {exc.strerror}") from None
    scenario = parse_scenario(data, str(p))
    scenario.source = str(p)
    return scenario


def scenario_files(paths: list[str]) -> list[Path]:
    """Scenario files of the given files and directories (recursive, sorted, .json/.toml)."""
    found: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found.extend(
                sorted(
                    f
                    for f in p.rglob("*")
                    if f.suffix in (".json", ".toml")
                    and f.is_file()
                    and not any(part.startswith("_") for part in f.relative_to(p).parts)
                )
            )
        else:
            found.append(p)
    return found
