"""`emulator check`'s work: validate fixture directories and scenario files without running
anything, every problem found (one per file at most: decoding stops at a file's first)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from emulator.fixtures import loader
from emulator.fixtures.loader import FILES, FixtureError, FixtureUnreadable


@dataclass(frozen=True)
class Problem:
    path: str
    message: str
    unreadable: bool = False  # missing, not readable, not JSON (TOML): exit 2

    def line(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass
class Checked:
    files: int = 0  # fixture directories and scenario files looked at
    problems: list[Problem] | None = None

    def __post_init__(self) -> None:
        self.problems = []


def is_fixture_dir(path: Path) -> bool:
    """A directory holding at least one fixture file."""
    return any((path / name).exists() or (path / name).is_symlink() for name in FILES)


def check_paths(paths: list[str]) -> Checked:
    """Each path: a fixture directory, a fixture file (checked alone: no cross-file
    references), a scenario file, or a directory of scenario files (as `replay` finds them)."""
    from emulator.scenarios.models import scenario_files

    out = Checked()
    assert out.problems is not None
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            out.problems.append(Problem(raw, "no such file or directory", unreadable=True))
        elif path.is_dir() and is_fixture_dir(path):
            out.files += 1
            out.problems.extend(check_fixture_dir(path))
        elif path.is_dir():
            found = scenario_files([raw])
            if not found:
                out.problems.append(Problem(raw, "no fixture files and no scenario files"))
            for file in found:
                out.files += 1
                out.problems.extend(check_scenario(file))
        elif path.name in FILES and path.suffix == ".json":
            out.files += 1
            out.problems.extend(check_fixture_file(path))
        else:
            out.files += 1
            out.problems.extend(check_scenario(path))
    return out


def check_fixture_file(path: Path) -> list[Problem]:
    try:
        loader.decode_fixture_dir(path.parent, only=(path.name,))
    except FixtureError as exc:
        return [_problem(path.parent, exc)]
    return []


def check_fixture_dir(directory: Path) -> list[Problem]:
    """Every fixture file decoded on its own (a problem per broken file); when all decode,
    the cross-file checks (unique ids, references, dates)."""
    problems = []
    for name in FILES:
        try:
            loader.decode_fixture_dir(directory, only=(name,))
        except FixtureError as exc:
            problems.append(_problem(directory, exc))
    if problems:
        return problems
    try:
        loader.load_fixture_dir(directory)
    except FixtureError as exc:
        return [_problem(directory, exc)]
    return []


def _problem(directory: Path, exc: FixtureError) -> Problem:
    """The loader's messages start with the file's name: the line names its path."""
    name, _, message = str(exc).partition(": ")
    where = directory / name if name in FILES else directory
    text = message if name in FILES else str(exc)
    return Problem(str(where), text, unreadable=isinstance(exc, FixtureUnreadable))


def check_scenario(path: Path) -> list[Problem]:
    """The scenario decoded and checked, and the fixtures it would start from built (its
    directory read, its inline records laid over it): nothing run."""
    from emulator.scenarios import models as sm
    from emulator.scenarios.fixtures import build_fixtures, scenario_base

    try:
        scenario = sm.load_scenario(path)
        build_fixtures(scenario, scenario_base(scenario), str(path))
    except sm.ScenarioError as exc:
        file, _, message = str(exc).partition(": ")
        return [Problem(file, message, unreadable=isinstance(exc, sm.ScenarioUnreadable))]
    return []
