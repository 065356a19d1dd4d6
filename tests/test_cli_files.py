"""`emulator check` and how `emulator serve` refuses bad fixture files: one line, exit 2, with
or without the seed cache, never a traceback or a hang (issue 20 item 1, issue 22 item 6)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from emulator.fixtures.loader import DEFAULT_FIXTURES
from tests.hostile.harness import Ran, cli

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "fixtures" / "scenarios"


def fixture_copy(root: Path) -> Path:
    shutil.copytree(DEFAULT_FIXTURES, root)
    return root


def edit(path: Path, change: Any) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def problem_lines(ran: Ran) -> list[str]:
    return [line for line in ran.out.splitlines() if line.strip()]


# ---- emulator check ------------------------------------------------------------------------


def test_check_of_the_bundled_files_is_clean() -> None:
    ran = cli("check", str(DEFAULT_FIXTURES), str(SCENARIOS))
    assert ran.code == 0, ran.out + ran.err
    assert ran.out == ""
    assert "0 problems" in ran.err


def test_check_names_one_problem_a_line_and_exits_1(tmp_path: Path) -> None:
    fx = fixture_copy(tmp_path / "fx")
    edit(fx / "contacts.json", lambda d: d[4].__setitem__("lastNme", d[4].pop("lastName")))
    edit(fx / "connection.json", lambda d: d.__setitem__("batchsize", 10))
    scenario = tmp_path / "s.json"
    scenario.write_text(
        json.dumps({"name": "s", "steps": [{"step": "export", "expcet": {"status": "ok"}}]})
    )
    nothing = tmp_path / "nothing.toml"
    nothing.write_text('name = "n"\n[[steps]]\nstep = "export"\n')
    ran = cli("check", str(fx), str(scenario), str(nothing))
    assert ran.code == 1, ran.out + ran.err
    assert problem_lines(ran) == [
        f"{fx / 'contacts.json'}: [4].lastNme: unknown key `lastNme` (did you mean `lastName`?)",
        f"{fx / 'connection.json'}: batchsize: unknown key `batchsize` (did you mean `batchSize`?)",
        f"{scenario}: steps[0].expcet: unknown key `expcet` (did you mean `expect`?)",
        f"{nothing}: expect: the scenario expects nothing (give expect, an export step's expect"
        " or expectCalls, or a call step's expectStatus or expectBody)",
    ]
    assert "Traceback" not in ran.err


def test_check_reads_a_scenarios_fixtures_without_running_it(tmp_path: Path) -> None:
    data = json.loads((SCENARIOS / "null-clearing-rule.json").read_text())
    data["fixtures"]["directory"] = str(SCENARIOS / "_small")
    data["fixtures"]["contacts"][0]["networkProfileURL"] = "x"
    scenario = tmp_path / "inline.json"
    scenario.write_text(json.dumps(data))
    ran = cli("check", str(scenario))
    assert ran.code == 1
    assert problem_lines(ran) == [
        f"{scenario}: fixtures.contacts[0].networkProfileURL: unknown key `networkProfileURL` "
        "(did you mean `networkProfileUrl`?)"
    ]


def test_check_of_a_cross_file_problem_and_a_single_file(tmp_path: Path) -> None:
    fx = fixture_copy(tmp_path / "fx")
    edit(fx / "contacts.json", lambda d: d[12].__setitem__("companyId", 999999))
    ran = cli("check", str(fx), str(fx / "companies.json"))
    assert ran.code == 1
    assert problem_lines(ran) == [f"{fx / 'contacts.json'}: [12].companyId: unknown company 999999"]


@pytest.mark.parametrize(
    "kind", ["missing path", "fixture not JSON", "scenario not JSON", "bad TOML"]
)
def test_check_of_something_unreadable_exits_2(tmp_path: Path, kind: str) -> None:
    fx = fixture_copy(tmp_path / "fx")
    broken = tmp_path / "broken.json"
    broken.write_text('{"name": ')
    toml = tmp_path / "broken.toml"
    toml.write_text("name = \n")
    (fx / "users.json").write_text("[{")
    path, needle = {
        "missing path": (tmp_path / "none", f"{tmp_path / 'none'}: no such file or directory"),
        "fixture not JSON": (fx, f"{fx / 'users.json'}: not JSON: "),
        "scenario not JSON": (broken, f"{broken}: not JSON: "),
        "bad TOML": (toml, f"{toml}: invalid TOML: "),
    }[kind]
    ran = cli("check", str(path), str(SCENARIOS / "link-templates.json"))
    assert ran.code == 2, ran.out + ran.err
    lines = problem_lines(ran)
    assert len(lines) == 1 and lines[0].startswith(needle), lines
    assert "Traceback" not in ran.err


def test_check_of_a_directory_with_nothing_to_check_is_a_problem(tmp_path: Path) -> None:
    ran = cli("check", str(tmp_path))
    assert ran.code == 1
    assert problem_lines(ran) == [f"{tmp_path}: no fixture files and no scenario files"]


# ---- emulator serve refuses bad fixtures ---------------------------------------------------


def serve_refused(fixtures: Path, *flags: str) -> str:
    """`emulator serve` on `fixtures`: exit 2 within seconds, one line, no traceback."""
    ran = cli("serve", "--port", "0", "--fixtures", str(fixtures), *flags, timeout=60)
    assert ran.code == 2, ran.out + ran.err
    assert "Traceback" not in ran.err
    lines = [line for line in ran.err.splitlines() if line.strip()]
    assert len(lines) == 1, ran.err
    return lines[0]


CACHE_FLAGS = [(), ("--no-seed-cache",)]


@pytest.mark.parametrize("flags", CACHE_FLAGS, ids=["seed cache", "no seed cache"])
def test_serve_refuses_an_unknown_key(tmp_path: Path, flags: tuple[str, ...]) -> None:
    fx = fixture_copy(tmp_path / "fx")
    edit(fx / "campaigns.json", lambda d: d[1].__setitem__("messagesync", False))
    assert serve_refused(fx, *flags) == (
        "emulator: fixture error: campaigns.json: [1].messagesync: unknown key `messagesync` "
        "(did you mean `messageSync`?)"
    )


@pytest.mark.parametrize("flags", CACHE_FLAGS, ids=["seed cache", "no seed cache"])
def test_serve_refuses_an_id_of_2_to_the_63(tmp_path: Path, flags: tuple[str, ...]) -> None:
    fx = fixture_copy(tmp_path / "fx")
    edit(fx / "contacts.json", lambda d: d[2].__setitem__("id", 2**63))
    assert serve_refused(fx, *flags) == (
        "emulator: fixture error: contacts.json: [2].id: Expected int <= 9223372036854775807"
    )


@pytest.mark.parametrize("flags", CACHE_FLAGS, ids=["seed cache", "no seed cache"])
def test_serve_refuses_a_clock_at_9999(tmp_path: Path, flags: tuple[str, ...]) -> None:
    fx = fixture_copy(tmp_path / "fx")
    (fx / "clock.json").write_text('{"start": "9999-12-31T00:00:00Z"}')
    assert serve_refused(fx, *flags) == (
        "emulator: fixture error: clock.json: start: '9999-12-31T00:00:00Z' is outside the "
        "clock's range 1970-01-01T00:00:00.000Z to 2999-12-31T23:59:59.999Z"
    )


def many_contacts(fx: Path, count: int) -> list[dict[str, Any]]:
    """contacts.json grown past the size a contacts worker process is spawned for."""
    contacts = json.loads((fx / "contacts.json").read_text())
    first = max(c["id"] for c in contacts) + 1
    grown = contacts + [
        {**contacts[i % len(contacts)], "id": first + i, "leadCRMId": None, "contactCRMId": None}
        for i in range(count)
    ]
    return grown


@pytest.mark.parametrize("flags", CACHE_FLAGS, ids=["contacts worker", "no seed cache"])
def test_serve_refuses_a_bad_contact_deep_in_a_large_file(
    tmp_path: Path, flags: tuple[str, ...]
) -> None:
    fx = fixture_copy(tmp_path / "fx")
    contacts = many_contacts(fx, 9000)
    contacts[8500]["id"] = 2**63
    contacts[8700]["jobTitel"] = "x"
    (fx / "contacts.json").write_text(json.dumps(contacts))
    assert (fx / "contacts.json").stat().st_size > 4 << 20  # the worker's threshold
    assert serve_refused(fx, *flags) == (
        "emulator: fixture error: contacts.json: [8500].id: Expected int <= 9223372036854775807"
    )
    contacts[8500]["id"] = 10**9
    (fx / "contacts.json").write_text(json.dumps(contacts))
    assert serve_refused(fx, *flags) == (
        "emulator: fixture error: contacts.json: [8700].jobTitel: unknown key `jobTitel` "
        "(did you mean `jobTitle`?)"
    )
