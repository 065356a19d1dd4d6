"""Scenario files are strict: a key no struct of the format knows is an error naming the file,
the JSON path and the key with the closest valid one; a scenario that expects nothing is an
error; every bundled scenario names its JSON Schema."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from emulator.scenarios import models as sm
from emulator.scenarios.fixtures import build_fixtures
from tests.accepted_by_object import accepted_by_object

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "fixtures" / "scenarios"
BUNDLED = sm.scenario_files([str(SCENARIOS)])
TAGS = {"step"}  # a step's tag: renaming it is a missing tag, not an unknown key


def load(path: Path) -> dict[str, Any]:
    if path.suffix == ".toml":
        return tomllib.loads(path.read_text())
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def text_of(data: dict[str, Any], path: Path) -> bytes | dict[str, Any]:
    if path.suffix == ".toml":  # the decoded TOML is what the decoder checks
        return data
    return json.dumps(data).encode()


def typo(key: str) -> str:
    """A slip of the keyboard: the last letter dropped (short keys: doubled)."""
    return key[:-1] if len(key) > 3 else key + key[-1]


def key_paths(value: Any, at: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    """Every object key of a decoded document, as the path to it."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*at, key)
            yield from key_paths(item, (*at, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from key_paths(item, (*at, i))


def renamed(data: dict[str, Any], path: tuple[str | int, ...], new: str) -> dict[str, Any]:
    changed = copy.deepcopy(data)
    parent: Any = changed
    for step in path[:-1]:
        parent = parent[step]
    old = path[-1]
    parent[new] = parent.pop(old)
    return changed


def dotted(path: tuple[str | int, ...]) -> str:
    out = ""
    for step in path:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else step)
    return out


def struct_keys(data: dict[str, Any]) -> list[tuple[str | int, ...]]:
    """The keys of a scenario that a struct of the format declares (not keys inside free-form
    values such as an expected report or a request body)."""
    paths = list(key_paths(data))
    accepted = accepted_by_object(sm.Scenario, paths, data)
    return [
        path
        for path in paths
        if path[-1] not in TAGS
        and isinstance(path[-1], str)
        and path[-1] in accepted[path[:-1]]
        and typo(path[-1]) not in accepted[path[:-1]]
    ]


def test_the_bundled_scenarios_are_found() -> None:
    assert len(BUNDLED) >= 18
    assert any(p.suffix == ".toml" for p in BUNDLED)


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.name)
def test_every_bundled_scenario_names_its_schema(path: Path) -> None:
    data = load(path)
    assert data["$schema"] == "../../emulator/schemas/scenario.json"
    assert (path.parent / data["$schema"]).resolve() == ROOT / "emulator/schemas/scenario.json"
    sm.load_scenario(path)  # allowed by the decoder


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.name)
def test_a_misspelled_key_anywhere_in_a_bundled_scenario_is_named_with_its_fix(
    path: Path,
) -> None:
    data = load(path)
    keys = struct_keys(data)
    depths = {len(k) for k in keys}
    assert ("expect",) in keys or ("steps",) in keys
    assert max(depths) >= 3, keys  # nested structs are covered, not only the top
    for key_path in keys:
        key = str(key_path[-1])
        wrong = typo(key)
        mutated = renamed(data, key_path, wrong)
        with pytest.raises(sm.ScenarioError) as info:
            sm.parse_scenario(text_of(mutated, path), str(path))
        where = dotted((*key_path[:-1], wrong))
        assert str(info.value) == (
            f"{path}: {where}: unknown key `{wrong}` (did you mean `{key}`?)"
        ), key_path


def inline_kinds(data: dict[str, Any]) -> list[str]:
    fixtures = data.get("fixtures", {})
    return [k for k, v in fixtures.items() if k != "replace" and isinstance(v, list) and v]


WITH_INLINE = [p for p in BUNDLED if inline_kinds(load(p))]


def test_some_bundled_scenarios_carry_inline_records() -> None:
    assert len(WITH_INLINE) >= 2


@pytest.mark.parametrize("path", WITH_INLINE, ids=lambda p: p.name)
def test_a_misspelled_key_of_an_inline_fixture_record_is_named(path: Path) -> None:
    data = load(path)
    kinds = inline_kinds(data)
    for kind in kinds:
        record = data["fixtures"][kind][0]
        key = next(k for k in record if len(k) > 3)
        mutated = renamed(data, ("fixtures", kind, 0, key), typo(key))
        scenario = sm.parse_scenario(text_of(mutated, path), str(path))
        with pytest.raises(sm.ScenarioError) as info:
            build_fixtures(scenario, path.parent, str(path))
        assert str(info.value) == (
            f"{path}: fixtures.{kind}[0].{typo(key)}: unknown key `{typo(key)}` "
            f"(did you mean `{key}`?)"
        )


def test_a_key_far_from_every_valid_one_lists_the_valid_ones() -> None:
    with pytest.raises(sm.ScenarioError) as info:
        sm.parse_scenario(
            json.dumps({"name": "x", "steps": [{"step": "call", "path": "/v1/x", "zzz": 1}]}),
            "s.json",
        )
    assert str(info.value).startswith("s.json: steps[0].zzz: unknown key `zzz` (accepted: `body`")


def test_the_issue_examples_are_refused() -> None:
    """`expects`, `expectedStatus` and a misspelled `expect` all used to pass unchecked."""
    base = {"name": "x", "steps": [{"step": "call", "path": "/v1/me", "expectStatus": 200}]}
    cases = {
        "expects": (
            {**base, "expects": {}},
            "expects: unknown key `expects` (did you mean `expect`?)",
        ),
        "expcet": ({**base, "expcet": {}}, "expcet: unknown key `expcet` (did you mean `expect`?)"),
        "expectedStatus": (
            {"name": "x", "steps": [{"step": "call", "path": "/v1/me", "expectedStatus": 200}]},
            "steps[0].expectedStatus: unknown key `expectedStatus` (did you mean `expectStatus`?)",
        ),
    }
    for data, message in cases.values():
        with pytest.raises(sm.ScenarioError) as info:
            sm.parse_scenario(json.dumps(data), "s.json")
        assert str(info.value) == f"s.json: {message}"


def test_a_toml_scenario_is_as_strict() -> None:
    text = 'name = "t"\n[[steps]]\nstep = "export"\nexpcet = {}\n'
    with pytest.raises(sm.ScenarioError) as info:
        sm.parse_scenario(text, "s.toml")
    assert (
        str(info.value) == "s.toml: steps[0].expcet: unknown key `expcet` (did you mean `expect`?)"
    )


@pytest.mark.parametrize(
    "data",
    [
        {"name": "nothing"},
        {"name": "steps only", "steps": [{"step": "export"}, {"step": "call", "path": "/v1/me"}]},
        {"name": "empty expect", "steps": [{"step": "export"}], "expect": {"platform": []}},
    ],
    ids=lambda d: d["name"],
)
def test_a_scenario_that_expects_nothing_is_an_error(data: dict[str, Any]) -> None:
    with pytest.raises(sm.ScenarioError, match=r"s\.json: expect: the scenario expects nothing"):
        sm.parse_scenario(json.dumps(data), "s.json")


@pytest.mark.parametrize(
    "step",
    [
        {"step": "export", "expect": {}},
        {"step": "export", "expectCalls": {"calls": []}},
        {"step": "call", "path": "/v1/me", "expectStatus": 200},
        {"step": "call", "path": "/v1/me", "expectBody": {}},
    ],
)
def test_an_expectation_in_a_step_is_enough(step: dict[str, Any]) -> None:
    sm.parse_scenario(json.dumps({"name": "x", "steps": [step]}), "s.json")


def test_replay_of_a_misspelled_bundled_scenario_exits_2_naming_key_and_fix(
    tmp_path: Path,
) -> None:
    data = load(SCENARIOS / "null-clearing-rule.json")
    data["fixtures"]["directory"] = str(SCENARIOS / data["fixtures"].get("directory", "_small"))
    data["expect"]["crmCalls"]["calls"][0]["methd"] = data["expect"]["crmCalls"]["calls"][0].pop(
        "method"
    )
    bad = tmp_path / "null-clearing-rule.json"
    bad.write_text(json.dumps(data))
    done = subprocess.run(
        [sys.executable, "-m", "emulator", "replay", str(bad)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert (
        f"{bad}: expect.crmCalls.calls[0].methd: unknown key `methd` (did you mean `method`?)"
        in done.stdout
    )
    assert "PASS" not in done.stdout and "Traceback" not in done.stderr


def test_a_crm_settings_steps_faults_are_checked_when_read() -> None:
    data = {
        "name": "x",
        "steps": [
            {"step": "crmSettings", "faults": [{"endpoint": "*", "staus": 500}]},
            {"step": "export", "expect": {}},
        ],
    }
    with pytest.raises(sm.ScenarioError) as info:
        sm.parse_scenario(json.dumps(data), "s.json")
    assert str(info.value) == (
        "s.json: steps[0].faults[0].staus: unknown key `staus` (did you mean `status`?)"
    )


def test_a_scenarios_connection_is_checked_as_connection_json_is() -> None:
    data = {
        "name": "x",
        "connection": {"batchsize": 5},
        "steps": [{"step": "export", "expect": {}}],
    }
    scenario = sm.parse_scenario(json.dumps(data), "s.json")
    with pytest.raises(sm.ScenarioError) as info:
        build_fixtures(scenario, SCENARIOS, "s.json")
    assert str(info.value) == (
        "s.json: connection.batchsize: unknown key `batchsize` (did you mean `batchSize`?)"
    )
