"""The pytest plugin's call assertions and faults, in a user's suite run by pytester against a
real `emulator serve`, including docs/test-double.md's example as written."""

from __future__ import annotations

import re

import pytest

from tests.processes import ROOT, USER_PYTEST

pytest_plugins = ["pytester"]


def docs_example() -> str:
    text = (ROOT / "docs" / "test-double.md").read_text()
    section = text.split("## In a pytest suite", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match is not None, "docs/test-double.md lost its example"
    return match.group(1)


def test_docs_example_and_failing_assertions_against_a_real_server(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_client_copes=docs_example())
    pytester.makepyfile(
        test_failures="""
        import time

        import pytest

        def test_near_misses_are_listed(emulator):
            api = emulator.v1()
            api.post("/contact", json={"firstName": "Ada", "email": "ada@example.com"})
            api.get("/contacts")
            with pytest.raises(AssertionError) as caught:
                emulator.assert_called("POST", "/v1/contact", json={"firstName": "Bob"})
            message = str(caught.value)
            assert "no call matched (2 call(s) recorded)" in message
            lines = message.splitlines()
            # the closest first: same route and method, with a body excerpt
            assert lines[1].strip().startswith('POST /v1/contact -> 201  {"firstName":"Ada"')
            assert lines[2].strip() == "GET /v1/contacts -> 200"

        def test_wrong_count_and_not_called_fail(emulator):
            emulator.v1().get("/contact/1")
            with pytest.raises(AssertionError, match="called 1 time"):
                emulator.assert_called("GET", "/v1/contact/{contactId}", times=2)
            with pytest.raises(AssertionError, match="expected no call GET /v1/contact/1"):
                emulator.assert_not_called("GET", "/v1/contact/1")
            emulator.assert_not_called("DELETE", "/v1/contact/1")

        def test_a_reset_clears_calls_and_faults(emulator):
            fault = emulator.fault("GET", "/v1/contacts", status=503)
            assert emulator.v1().get("/contacts").status_code == 503
            [listed] = emulator.faults()
            assert (listed["id"], listed["fired"]) == (fault, 1)
            assert emulator.requests(route="/v1/contacts")[0]["fault"]["id"] == fault
            emulator.reset()
            assert emulator.requests() == [] and emulator.faults() == []

        def test_latency_of_two_seconds_on_one_endpoint(emulator):
            emulator.fault("GET", "/v1/contact/{contactId}", latencyMs=2000)
            t0 = time.monotonic()
            assert emulator.v1().get("/contact/1").status_code == 200
            assert time.monotonic() - t0 >= 2.0
            calls = emulator.requests(route="/v1/contact/{contactId}")
            assert len(calls) == 1, calls
            [call] = calls
            assert call["durationMs"] >= 2000 and call["fault"]["effects"] == ["latency 2000 ms"]
    """
    )
    result = pytester.runpytest_subprocess(*USER_PYTEST, "-W", "error")
    result.assert_outcomes(passed=7)
