"""The deep run's outputs: curl lines a shell reads back as sent, the verdict in every format."""

from __future__ import annotations

import json
import shlex
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from emulator.verify.deep_report import DeepRun, DeepStep, curl, deep_lines

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=10,
)


@given(body=json_values, path=st.sampled_from(["/tasks", "/tasks/t 1'x", "/companies/sync"]))
def test_a_curl_line_is_read_back_by_a_shell_as_the_request_sent(body: Any, path: str) -> None:
    sent = json.dumps(body)
    step = DeepStep(n=1, method="POST", path=path, request=sent, status=200, response="{}")
    argv = shlex.split(curl("http://crm.example:3000/", "X-Api-Token", step))
    assert argv[:5] == ["curl", "-sS", "-X", "POST", f"http://crm.example:3000{path}"]
    assert argv[argv.index("--data-raw") + 1] == sent
    assert argv[argv.index("-H") + 1] == "X-Api-Token: ***"


def test_a_get_has_no_body_and_a_passing_run_no_sequence() -> None:
    step = DeepStep(n=1, method="GET", path="/tasks/t1", request=None, status=404, response="")
    assert "--data-raw" not in shlex.split(curl("http://c", "X-API-Key", step))
    run = DeepRun(
        outcome="pass",
        seed=3,
        examples=5,
        stepsPerSequence=50,
        sequences=5,
        calls=200,
        durationMs=1500,
    )
    assert deep_lines(run) == [
        "deep: PASS seed 3, 5 sequences (5 asked, up to 50 calls each), 200 calls in 1.5 s"
    ]
