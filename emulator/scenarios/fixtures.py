"""A scenario's starting state: its fixture directory with its inline records laid over it by
id, `replace` emptying whole kinds first, and its connection checked by the platform's rule."""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_args

import msgspec

from emulator.file_keys import explain
from emulator.fixtures.loader import (
    DEFAULT_FIXTURES,
    FixtureError,
    check_fixtures,
    load_fixture_dir,
)
from emulator.fixtures.models import FixtureSet
from emulator.platform import connection as platform_connection
from emulator.scenarios import models as sm

INLINE_KINDS = get_args(sm.FixtureKind)  # the kinds a scenario may lay over its directory
STAMPED = (
    "identities",
    "campaigns",
    "companies",
    "contacts",
    "lists",
    "savedViews",
    "webhooks",
    "actionsRuns",
)
DEFAULT_STAMP = "2026-01-01T00:00:00.000Z"


_fixture_cache: dict[str, FixtureSet] = {}


def _base_fixtures(directory: Path) -> FixtureSet:
    key = str(directory.resolve())
    if key not in _fixture_cache:
        _fixture_cache[key] = load_fixture_dir(directory)
    return _fixture_cache[key]


def _merge(
    records: list[dict[str, Any]], inline: list[dict[str, Any]], key: str, stamped: bool
) -> dict[int, int]:
    """Lay inline records over `records` by `key`; answers merged index -> inline index."""
    index = {r.get(key): i for i, r in enumerate(records)}
    origin: dict[int, int] = {}
    for j, item in enumerate(inline):
        at = index.get(item.get(key))
        if at is None:
            new = dict(item)
            if stamped:
                new.setdefault("createdAt", DEFAULT_STAMP)
                new.setdefault("updatedAt", DEFAULT_STAMP)
            records.append(new)
            at = index[item.get(key)] = len(records) - 1
        else:
            records[at] = {**records[at], **item}
        origin[at] = j
    return origin


def fixture_directory(scenario: sm.Scenario, base: Path) -> Path:
    """The directory a scenario's fixtures start from (relative: to `base`)."""
    directory = (
        Path(scenario.fixtures.directory) if scenario.fixtures.directory else DEFAULT_FIXTURES
    )
    return directory if directory.is_absolute() else base / directory


def scenario_base(scenario: sm.Scenario) -> Path:
    """What relative paths of a scenario are relative to: its file's directory, else cwd."""
    return Path(scenario.source).parent if scenario.source else Path.cwd()


def build_fixtures(scenario: sm.Scenario, base: Path, file: str) -> tuple[FixtureSet, str]:
    """The scenario's FixtureSet and the directory it started from; ScenarioError names the field."""
    spec = scenario.fixtures
    directory = fixture_directory(scenario, base)
    try:
        raw: dict[str, Any] = msgspec.to_builtins(_base_fixtures(directory))
    except FixtureError as exc:
        raise sm.ScenarioError(f"{file}: fixtures.directory: {exc}") from None
    origins: dict[str, dict[int, int]] = {}
    for emptied in spec.replace:
        raw[emptied] = []
    for kind in INLINE_KINDS:
        inline = getattr(spec, kind)
        if inline:
            key = "key" if kind == "apiKeys" else "id"
            origins[kind] = _merge(raw[kind], inline, key, kind in STAMPED)
    crm = scenario.crm
    if crm is not None:
        seed = msgspec.to_builtins(crm)
        raw["crm"] = {
            k: seed[k] for k in ("settings", "users", "contacts", "companies") if k in seed
        }
    connection = {**(raw.get("connection") or {}), **scenario.connection}
    connection["crmUrl"] = "/crm"
    if "apiKey" not in scenario.connection and (crm is not None or not raw.get("connection")):
        connection["apiKey"] = (
            (raw.get("crm") or {}).get("settings", {}).get("apiKey", "crm-demo-key")
        )
    raw["connection"] = connection
    try:
        fixtures = msgspec.convert(raw, FixtureSet)
        check_fixtures(fixtures)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        path, message = explain(exc, FixtureSet, raw)
        raise sm.ScenarioError(f"{file}: {_inline_path(path, origins)}: {message}") from None
    except FixtureError as exc:
        raise sm.ScenarioError(f"{file}: fixtures: {exc}") from None
    problems = (
        platform_connection.problems(msgspec.to_builtins(fixtures.connection))
        if fixtures.connection
        else []
    )
    if problems:
        field, message = problems[0]
        raise sm.ScenarioError(f"{file}: connection.{field}: {message}")
    return fixtures, str(directory)


def _inline_path(path: str, origins: dict[str, dict[int, int]]) -> str:
    """'contacts[203].x' -> 'fixtures.contacts[1].x' when that record came from the scenario."""
    kind, _, rest = path.partition("[")
    if kind in origins and rest:
        number, _, tail = rest.partition("]")
        if number.isdigit() and int(number) in origins[kind]:
            return f"fixtures.{kind}[{origins[kind][int(number)]}]{tail}"
    if kind.split(".")[0] in ("connection", "crm"):  # the scenario's own keys
        return path
    return f"fixtures {path}"


# ---- CRM transports -------------------------------------------------------------------------

# ---- running one scenario -------------------------------------------------------------------
