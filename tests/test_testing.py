"""The pytest plugin `emulator.testing`: a user's suite, run by pytester, exactly as the docs show."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import httpx
import pytest

from tests.processes import ROOT, USER_PYTEST, emulator_process, free_port

pytest_plugins = ["pytester"]


def readme_example(page: str = "pytest-plugin.md") -> str:
    """The Python example of a docs page (the pytest plugin's by default)."""
    text = (ROOT / "docs" / page).read_text()
    match = re.search(r"```python\n(.*?)```", text, re.DOTALL)
    assert match is not None, f"docs/{page} lost its example"
    return match.group(1)


def test_registered_as_a_pytest11_entry_point() -> None:
    assert "emulator.testing" in {ep.value for ep in entry_points(group="pytest11")}


def test_the_readme_example_passes_against_a_real_server(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_outreach=readme_example())
    # A second module: the server starts once for the whole session, not per module.
    pytester.makepyfile(
        test_more="""
        def test_same_server(emulator, emulator_server):
            # its own workspace on the session's one server
            assert emulator.url == f"{emulator_server.url}/w/{emulator.workspace_id}"
            assert emulator_server.process is not None
            assert emulator.client.get("/_emulator/health").json()["status"] == "ok"
    """
    )
    # A fresh interpreter, as a user's run: the plugin comes from the entry point alone.
    result = pytester.runpytest_subprocess(*USER_PYTEST, "-W", "error")
    result.assert_outcomes(passed=5)


def test_options_url_fixtures_and_failures(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytester.makepyfile(
        test_user="""
        import pytest

        from datetime import datetime

        def test_uses_the_running_server(emulator, emulator_server):
            assert emulator_server.process is None  # nothing started: --emulator-url given
            before = datetime.fromisoformat(emulator.now())
            moved = emulator.advance(3600)
            assert datetime.fromisoformat(moved["now"]) == datetime.fromisoformat(emulator.now())
            assert (datetime.fromisoformat(emulator.now()) - before).total_seconds() == 3600

        def test_a_failing_control_call_names_the_route(emulator):
            with pytest.raises(AssertionError, match="/_emulator/snapshots/nope/restore answered 404"):
                emulator.restore("nope")

        def test_no_server_for_tests_that_do_not_ask():
            pass

        def test_reset_before_the_test(emulator):
            assert emulator.v1().get("/contacts", params={"search": "Left"}).json()["data"] == []
    """
    )
    with emulator_process() as base:
        # Left over from before the session: the plugin resets before each test.
        made = httpx.post(
            f"{base}/v1/contact", json={"firstName": "Left"}, headers={"x-api-key": "demo-all"}
        )
        assert made.status_code == 201
        result = pytester.runpytest_subprocess(*USER_PYTEST, f"--emulator-url={base}")
        result.assert_outcomes(passed=4)
    # A fixture directory that does not load: the session says why, it does not hang.
    (tmp_path / "contacts.json").write_text("[{}]")
    pytester.makepyfile(test_broken="def test_x(emulator):\n    pass\n")
    broken = pytester.runpytest_subprocess(
        *USER_PYTEST, f"--emulator-fixtures={tmp_path}", "test_broken.py"
    )
    broken.assert_outcomes(errors=1)
    broken.stdout.fnmatch_lines(["*emulator serve exited 2*", "*contacts.json*"])


def test_an_unreachable_emulator_url_stops_the_session_once(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_user="""
        def test_one(emulator):
            pass

        def test_two(emulator):
            pass
    """
    )
    nobody = f"http://127.0.0.1:{free_port()}"
    result = pytester.runpytest_subprocess(*USER_PYTEST, "--emulator-url", nobody)
    assert result.ret == 3
    said = [line for line in result.outlines if f"no emulator answers at {nobody}" in line]
    assert len(said) == 1, result.outlines
    assert not any("ConnectError" in line and "Traceback" in line for line in result.outlines)


PARALLEL_SUITE = """
import time

import pytest


@pytest.mark.parametrize("n", range(12))
def test_no_cross_talk(emulator, n):
    v1 = emulator.v1()
    before = v1.get("/contacts").json()["meta"]["total"]
    emulator.fault("GET", "/v1/contact/{contactId}", status=500, times=1)
    name = f"Parallel{n}"
    assert v1.post("/contact", json={"firstName": name}).status_code == 201
    moved = emulator.advance(600 * (n + 1))
    time.sleep(0.05)  # let the other workers' tests run meanwhile
    assert v1.get("/contact/1").status_code == 500  # its own fault, armed once
    assert v1.get("/contact/1").status_code == 200
    assert v1.get("/contacts").json()["meta"]["total"] == before + 1
    emulator.assert_called("POST", "/v1/contact", times=1, json={"firstName": name})
    emulator.assert_called("GET", "/v1/contact/{contactId}", times=2)
    assert moved["now"] == emulator.now()
    emulator.reset()
    assert v1.get("/contacts").json()["meta"]["total"] == before
"""


def test_the_docs_suite_runs_under_xdist_with_a_workspace_per_test(
    pytester: pytest.Pytester,
) -> None:
    """`pytest -n 4`: four workers share one server; each test has its own workspace, so
    resets, advances and faults never collide (no 409) nor leak into another test."""
    pytester.makepyfile(
        test_outreach=readme_example(),
        test_client_copes=readme_example("test-double.md"),  # a 500, a 2 s latency, asserts
        test_parallel=PARALLEL_SUITE,
    )
    pytester.makepyfile(
        test_one_server="""
        import os

        def test_one_server_for_the_run(emulator, emulator_server):
            # the worker that did not start it reaches the same one
            assert os.environ["PYTEST_XDIST_WORKER"].startswith("gw")
            assert emulator.client.get("/_emulator/health").status_code == 200
        """
    )
    result = pytester.runpytest_subprocess(*USER_PYTEST, "-n", "4", "-p", "xdist")
    result.assert_outcomes(passed=12 + 4 + 3 + 1)
    assert not any(" 409" in line for line in result.outlines)


SESSION_OF_ITS_OWN = """
import os
import time
from pathlib import Path


def test_a_server_of_its_own(emulator_server):
    # pytest run from inside an xdist worker's test inherits PYTEST_XDIST_WORKER, yet it is
    # no worker of that run: it starts its own server, never another session's
    assert emulator_server.process is not None
    here, other = Path(os.environ["SESSION_NAME"]), Path(os.environ["OTHER_SESSION"])
    here.touch()
    deadline = time.monotonic() + 60
    while not other.exists():  # both sessions hold their servers at once
        assert time.monotonic() < deadline, "the other session never got its server"
        time.sleep(0.05)
"""


def test_sessions_beside_each_other_never_share_a_server(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    """Two sessions at once whose temp directories have one parent (as two `pytest` runs of
    one user, /tmp/pytest-of-USER), in an environment that says PYTEST_XDIST_WORKER (run from
    inside an xdist worker, as the docs' examples are): each has its own server."""
    pytester.makepyfile(test_own=SESSION_OF_ITS_OWN)
    common = tmp_path / "pytest-of-user"
    common.mkdir()
    ready = tmp_path / "ready"
    ready.mkdir()

    def run(name: str, other: str) -> subprocess.Popen[str]:
        env = {
            **os.environ,
            "PYTEST_XDIST_WORKER": "gw0",
            "SESSION_NAME": str(ready / name),
            "OTHER_SESSION": str(ready / other),
        }
        command = [sys.executable, "-m", "pytest", *USER_PYTEST, "-W", "error", "-q"]
        return subprocess.Popen(
            [*command, f"--basetemp={common / name}", "test_own.py"],
            cwd=pytester.path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    sessions = [run("a", "b"), run("b", "a")]
    outputs = [session.communicate(timeout=120)[0] for session in sessions]
    for session, output in zip(sessions, outputs, strict=True):
        assert session.returncode == 0, output
        assert "1 passed" in output, output
