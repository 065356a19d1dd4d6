"""Documentation examples that must work when pasted: the scenario anywhere, the pytest example's reset."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.processes import ROOT, USER_PYTEST

pytest_plugins = ["pytester"]

NO_RESET = """
import httpx
import pytest

from emulator.testing import Emulator


@pytest.fixture
def emulator(emulator_server):
    with httpx.Client(base_url=emulator_server.url, timeout=30) as client:
        yield Emulator(emulator_server, client)
"""


def docs_block(page: str, language: str) -> str:
    """The first `language` block of docs/`page`."""
    text = (ROOT / "docs" / page).read_text()
    match = re.search(rf"```{language}\n(.*?)```", text, re.DOTALL)
    assert match is not None, f"docs/{page} lost its {language} example"
    return match.group(1)


def test_the_scenario_example_passes_saved_in_any_directory(tmp_path: Path) -> None:
    (tmp_path / "link-templates.json").write_text(docs_block("scenarios.md", "json"))
    done = subprocess.run(
        [sys.executable, "-m", "emulator", "replay", "link-templates.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("PASS  link-templates")


def test_the_pytest_example_needs_the_reset_it_claims(pytester: pytest.Pytester) -> None:
    """Without the `emulator` fixture's reset, the example's second test must fail."""
    pytester.makepyfile(test_outreach=docs_block("pytest-plugin.md", "python"))
    pytester.makeconftest(NO_RESET)
    result = pytester.runpytest_subprocess(*USER_PYTEST, "test_outreach.py")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(
        ["*FAILED test_outreach.py::test_every_test_starts_from_the_fixtures*"]
    )
