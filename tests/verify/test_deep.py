"""`verify --deep` against in-process CRMs: no false fail on CRMs that keep the contract, and
every planted sequence-only bug found (and shrunk) within the default budget."""

from __future__ import annotations

import asyncio
import json
import shlex
from collections.abc import AsyncIterator
from typing import Any
from xml.etree import ElementTree as ET

import pytest
from starlette.applications import Starlette

from emulator.app import create_app
from emulator.verify import deep
from emulator.verify.deep_model import Violation
from emulator.verify.deep_report import DEFAULT_EXAMPLES, DeepOptions
from emulator.verify.html import html_report
from emulator.verify.report import junit_xml, summary, to_json
from tests.conftest import make_settings
from tests.verify.conftest import failing, verify_app, verify_strange
from tests.verify.strange_crm import HEADER, KEY, SEQUENCE_BUGS, StrangeCrm
from tests.verify.test_reference_crm import KEY as REFERENCE_KEY
from tests.verify.test_reference_crm import switch

pytestmark = pytest.mark.anyio
SEEDS = (1, 2)


@pytest.fixture
async def crm() -> AsyncIterator[Starlette]:
    app = create_app(make_settings())
    async with app.router.lifespan_context(app):
        yield app


@pytest.fixture
def quick_shrink(monkeypatch: pytest.MonkeyPatch) -> None:
    """Shrink for a few seconds only: the test needs the bug found, not the shortest sequence."""
    monkeypatch.setattr(deep, "SHRINK_LIMIT", 1.0)


@pytest.fixture
def no_shrink(monkeypatch: pytest.MonkeyPatch) -> None:
    """No shrinking: the first failing sequence is the one reported (after Hypothesis's final
    replay of it). For tests that need a bug found and reported, not shrunk: a second of
    shrinking cost each about a second of CPU, and what it reached varied with the load."""
    monkeypatch.setattr(deep, "SHRINK_LIMIT", 0.0)


@pytest.mark.parametrize(("seed", "sync_back"), [(1, None), (2, "all"), (3, "nulls")])
async def test_the_reference_crm_passes_deep(
    crm: Starlette, seed: int, sync_back: str | None
) -> None:
    if sync_back is not None:  # whole records, or nulls, as sync properties: no false fail
        await switch(crm, syncBack=sync_back)
    options = DeepOptions(examples=12, seed=seed)
    report = await verify_app(crm, "http://emulator.localhost/crm", REFERENCE_KEY, deep=options)
    assert report.deep is not None and report.deep.outcome == "pass", summary(report)
    assert report.exitCode == 0 and report.deep.calls > 100 and report.deep.sequence == []


@pytest.mark.parametrize("seed", (1, 2, 3))
async def test_the_strange_crm_with_no_switch_passes_deep(seed: int) -> None:
    report = await verify_strange(deep=DeepOptions(examples=20, seed=seed))
    assert report.deep is not None and report.deep.outcome == "pass", summary(report)
    assert report.exitCode == 0


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("bug", SEQUENCE_BUGS)
@pytest.mark.usefixtures("no_shrink")
async def test_a_sequence_only_bug_passes_the_checks_and_deep_finds_it(bug: str, seed: int) -> None:
    report = await verify_strange({bug}, deep=DeepOptions(seed=seed))
    assert report.summary["fail"] == 0 and report.summary["warn"] == 0, failing(report)
    found = report.deep
    assert found is not None and found.outcome == "fail", summary(report)
    assert found.examples == DEFAULT_EXAMPLES and found.rule == SEQUENCE_BUGS[bug]
    assert report.exitCode == 1 and report.status == "fail"
    assert found.sequence and [s.n for s in found.sequence] == list(
        range(1, len(found.sequence) + 1)
    )


@pytest.mark.usefixtures("quick_shrink")
async def test_the_shrunk_sequence_is_in_every_output_as_curl_without_the_key() -> None:
    report = await verify_strange({"seq-batch-get-stale"}, deep=DeepOptions(seed=1))
    found = report.deep
    assert found is not None and found.outcome == "fail" and found.rule == "task-state"
    last = found.sequence[-1]
    assert (last.method, last.path) == ("POST", "/tasks/batch")
    argv = shlex.split(last.curl)  # a command line a shell reads back as sent
    assert argv[:5] == ["curl", "-sS", "-X", "POST", "http://strange/tasks/batch"]
    assert "X-Api-Token: ***" in argv and json.loads(argv[argv.index("--data-raw") + 1])["ids"]
    text = summary(report)
    assert "FAIL deep/task-state" in text and f"{len(found.sequence)}. POST /tasks/batch" in text
    assert "--seed 1" in text
    as_json = json.loads(to_json(report))
    assert as_json["deep"]["sequence"][-1]["curl"] == last.curl
    cases = ET.fromstring(junit_xml(report)).iter("testcase")
    deep_case = next(c for c in cases if c.get("classname") == "verify --deep")
    failure = deep_case.find("failure")
    assert failure is not None and "1. POST /tasks" in (failure.text or "")
    root = ET.fromstring(junit_xml(report))
    assert root.get("failures") == "1"
    page = html_report(report).decode()
    assert "verify --deep: FAIL" in page and "task-state" in page and "<ol>" in page
    assert 'Deep mode (seed 1): <a href="#deep" class="fail">FAIL</a>' in page
    for output in (text, to_json(report).decode(), junit_xml(report).decode(), page):
        assert KEY not in output


async def test_a_violation_seen_is_a_fail_even_if_the_run_then_ends_normally(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def swallowed(session: deep.Session, examples: int, seed_value: int) -> None:
        """A run that saw a violation but did not raise it on (as a check swallowing it)."""
        session.failed(Violation("task-state", "planted: seen, then swallowed"))

    monkeypatch.setattr(deep, "run_machine", swallowed)
    report = await verify_strange(deep=DeepOptions(seed=1))
    found = report.deep
    assert found is not None and found.outcome == "fail", summary(report)
    assert found.rule == "task-state" and found.message == "planted: seen, then swallowed"
    assert report.exitCode == 1 and report.status == "fail"
    assert ET.fromstring(junit_xml(report)).get("failures") == "1"


async def test_a_seed_draws_the_same_sequences() -> None:
    async def calls(seed: int) -> list[str]:
        """The requests a fresh strange CRM gets from a deep run of `seed` (a log of its own)."""
        seen: list[str] = []
        crm = StrangeCrm().app

        async def logged(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http":
                seen.append(f"{scope['method']} {scope['path']}")
            await crm(scope, receive, send)

        report = await verify_app(
            logged,
            "http://strange",
            KEY,
            HEADER,
            run_id="5eed0001",  # the same marker: paths of unknown ids carry it
            deep=DeepOptions(examples=4, seed=seed),
        )
        assert report.deep is not None and report.deep.outcome == "pass"
        return seen

    one, two, other = [await calls(seed) for seed in (5, 5, 6)]
    assert one == two and one != other


async def test_the_time_limit_ends_a_deep_run_and_says_so() -> None:
    # two seconds: a shorter limit can pass before a loaded machine starts the first sequence
    # (then the run is an error, "no sequence ran in time"), and this test would flake
    report = await verify_strange(deep=DeepOptions(examples=100_000, seed=1, timeLimit=2))
    assert report.deep is not None and report.deep.outcome == "pass"
    assert "time limit (2 s) ended the run" in (report.deep.message or "")
    assert "time limit" in summary(report)


async def test_a_cancelled_deep_run_makes_no_further_call() -> None:
    seen: list[str] = []
    crm = StrangeCrm().app

    async def logged(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            seen.append(scope["path"])
        await crm(scope, receive, send)

    running = asyncio.create_task(
        verify_app(logged, "http://strange", KEY, HEADER, deep=DeepOptions(examples=10_000))
    )
    while len(seen) < 300:  # the checks, then the deep run's first calls
        await asyncio.sleep(0.05)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    await asyncio.sleep(0.5)  # the worker thread sees the stop at its next call
    calls = len(seen)
    await asyncio.sleep(1)
    assert len(seen) == calls
