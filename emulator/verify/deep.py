"""`verify --deep`: random call sequences against the CRM, checked step by step, shrunk on failure.

A Hypothesis state machine (`DeepMachine`) draws sequences of creates (1 to 100 items),
syncs, updates (unknown crmIds at random positions, field writes), task creates, gets and
completions (single and batch, unknown ids mixed in); after every call the model
(`deep_model`) checks the answer against the spec's invariants. When one breaks, Hypothesis
shrinks the sequence to the shortest it can find that still breaks it, and that sequence is
reported as numbered requests.

Hypothesis runs in a worker thread; every request goes through the verify `Prober` on the
event loop (`run_coroutine_threadsafe`), so an in-process CRM keeps serving while the
machine waits. A seed makes the sequences drawn the same on every run; no example database
is kept. Every record carries the verify marker of the run.
"""

from __future__ import annotations

import asyncio
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast

from hypothesis import HealthCheck, Phase, Verbosity, reject, seed, settings
from hypothesis import strategies as st
from hypothesis.control import current_build_context
from hypothesis.stateful import (
    RuleBasedStateMachine,
    get_state_machine_test,
    initialize,
    invariant,
    precondition,
    rule,
)

from emulator.verify.checks import Answer
from emulator.verify.deep_model import DEEP_RULES, Model, Violation
from emulator.verify.deep_report import DeepOptions, DeepRun, DeepStep, with_curl
from emulator.verify.probes import Probes
from emulator.wire import encode

if TYPE_CHECKING:  # the runner imports this module when --deep runs: no import back
    from emulator.verify.runner import Prober


STEPS = 50  # calls per sequence at most
SHRINK_LIMIT = 60.0  # seconds of shrinking after the first failure: then the shortest so far
KINDS = st.sampled_from(["companies", "contacts"])
# Field names no CRM has heard of (it must store any): a CRM shows back all of them or none.
FIELDS = ("deepStage", "deepScore", "deepNote")
VALUES = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789 -", min_size=1, max_size=12)
# Which records a call uses: an index into the records created so far (small, so one record
# is often used by several calls) and whether to put an unknown id in its place.
PICK = st.integers(0, 7)
PICKS = st.lists(st.tuples(st.booleans(), PICK), min_size=1, max_size=20)


@dataclass
class Failure:
    violation: Violation
    steps: list[DeepStep]
    at: float  # when the first failure was seen (time.monotonic)


class Stopped(Exception):
    """The deep run was cancelled: no further call is made."""


@dataclass
class Session:
    """One deep run: the prober, the loop it lives on, the marked bodies, what was seen."""

    prober: Prober
    loop: asyncio.AbstractEventLoop
    probes: Probes
    deadline: float
    stop: threading.Event = field(default_factory=threading.Event)
    steps: list[DeepStep] = field(default_factory=list)
    best: Failure | None = None  # the shortest failing sequence seen
    sequences: int = 0
    calls: int = 0
    timed_out: bool = False
    n: int = 0  # unknown ids issued, each distinct

    def begin(self) -> None:
        """A new sequence; past the time limits only Hypothesis's final replay may run."""
        now = time.monotonic()
        shrunk_enough = self.best is not None and now > self.best.at + SHRINK_LIMIT
        over = now > self.deadline or shrunk_enough or self.stop.is_set()
        if over and not current_build_context().is_final:
            self.timed_out = True
            reject()
        self.sequences += 1
        self.steps = []

    def unknown(self, what: str) -> str:
        self.n += 1
        return f"{self.probes.absent_id(what)}-{self.n}"

    def call(self, endpoint: str, body: Any = None, task_id: str | None = None) -> Answer:
        if self.stop.is_set():
            raise Stopped("the deep run was cancelled")
        method, path = endpoint.split(" ")
        if task_id is not None:
            path = path.replace(":taskId", urllib.parse.quote(task_id, safe=""))
        future = asyncio.run_coroutine_threadsafe(self.prober.call(method, path, body), self.loop)
        done = future.result()
        self.calls += 1
        # the key out of what a step shows, in any escaped form (JSON, URL...)
        sent = None if body is None else self.prober.redactor.text(encode(body).decode())
        x = done.exchange
        self.steps.append(
            DeepStep(
                n=len(self.steps) + 1,
                method=method,
                path=x.path,
                request=sent,
                status=x.status,
                response=x.response,
                error=x.error,
            )
        )
        return done.answer

    def failed(self, violation: Violation) -> None:
        """Keep the shortest failing sequence (the later of equal ones: Hypothesis's final)."""
        if self.best is None:
            self.best = Failure(violation, list(self.steps), time.monotonic())
        elif len(self.steps) <= len(self.best.steps):
            self.best = Failure(violation, list(self.steps), self.best.at)


class DeepMachine(RuleBasedStateMachine):
    """The rules draw calls; each checks its answer against the model at once."""

    def __init__(self, session: Session) -> None:
        super().__init__()
        self.s = session
        self.model = Model()
        self.kind = "companies"
        session.begin()

    @initialize(kind=KINDS)
    def records_of(self, kind: str) -> None:
        """The record kind of this sequence: more calls on the same records, more to find."""
        self.kind = kind

    def check(self, judge: Callable[[], None]) -> None:
        try:
            judge()
        except Violation as violation:
            self.s.failed(violation)
            raise

    def step(self) -> int:
        return len(self.s.steps)

    def pick(self, kind: str, picks: list[tuple[bool, int]]) -> list[Any]:
        """The records picked (each once, in order) and, where asked, a fresh unknown crmId."""
        records = self.model.records[kind]
        out: list[Any] = []
        for unknown, i in picks:
            if unknown or not records:
                out.append(self.s.unknown("record"))
            elif records[i % len(records)] not in out:
                out.append(records[i % len(records)])
        return out

    @rule(n=st.integers(1, 100))
    def create(self, n: int) -> None:
        kind = self.kind
        sent = self.s.probes.records(kind, n)
        answer = self.s.call(f"POST /{kind}", {kind: sent})
        self.check(lambda: self.model.created(kind, sent, answer))

    @rule(picks=PICKS)
    def sync(self, picks: list[tuple[bool, int]]) -> None:
        kind = self.kind
        body, asked, never = [], [], []
        for r in self.pick(kind, picks):
            if isinstance(r, str):  # a record never created, in place of the unknown id
                item = self.s.probes.record(kind)
                never.append(item["externalId"])
            else:
                item = r.sent
                asked.append(r)
            body.append(item)
        answer = self.s.call(f"POST /{kind}/sync", {kind: body})
        self.check(lambda: self.model.synced(kind, asked, never, answer))

    @rule(
        picks=PICKS,
        writes=st.dictionaries(st.sampled_from(FIELDS), VALUES, min_size=1, max_size=3),
    )
    def update(self, picks: list[tuple[bool, int]], writes: dict[str, str]) -> None:
        kind = self.kind
        chosen = self.pick(kind, picks)
        sent = [{"crmId": r if isinstance(r, str) else r.crm_id, **writes} for r in chosen]
        unknown = {r for r in chosen if isinstance(r, str)}
        answer = self.s.call(f"PUT /{kind}", {kind: sent})
        self.check(lambda: self.model.updated(kind, sent, answer, unknown))

    @rule()
    def create_task(self) -> None:
        answer = self.s.call("POST /tasks", self.s.probes.task(None, None))
        self.check(lambda: self.model.task_created(answer, self.step()))

    def task_id(self, unknown: bool, i: int) -> str:
        tasks = self.model.tasks
        return self.s.unknown("task") if unknown or not tasks else tasks[i % len(tasks)].id

    @rule(unknown=st.booleans(), i=PICK)
    def get_task(self, unknown: bool, i: int) -> None:
        task_id = self.task_id(unknown, i)
        answer = self.s.call("GET /tasks/:taskId", task_id=task_id)
        self.check(lambda: self.model.task_got(answer, task_id))

    @rule(unknown=st.booleans(), i=PICK)
    def complete_task(self, unknown: bool, i: int) -> None:
        task_id = self.task_id(unknown, i)
        answer = self.s.call("PATCH /tasks/:taskId", {"completed": True}, task_id=task_id)
        self.check(lambda: self.model.task_patched(answer, task_id, self.step()))

    def task_ids(self, picks: list[tuple[bool, int]]) -> list[str]:
        return list(dict.fromkeys(self.task_id(unknown, i) for unknown, i in picks))

    @precondition(lambda self: bool(self.model.tasks))
    @rule(picks=PICKS)
    def get_tasks(self, picks: list[tuple[bool, int]]) -> None:
        ids = self.task_ids(picks)
        answer = self.s.call("POST /tasks/batch", {"ids": ids})
        self.check(lambda: self.model.tasks_got(answer, ids))

    @precondition(lambda self: bool(self.model.tasks))
    @rule(picks=PICKS)
    def complete_tasks(self, picks: list[tuple[bool, int]]) -> None:
        ids = self.task_ids(picks)
        answer = self.s.call("PATCH /tasks/batch", {"ids": ids, "completed": True})
        self.check(lambda: self.model.tasks_patched(answer, ids, self.step()))

    @invariant()
    def crm_ids_distinct(self) -> None:
        self.check(self.model.distinct)


def run_machine(session: Session, examples: int, seed_value: int) -> None:
    """Hypothesis over `DeepMachine`, seeded, no database, quiet (the report says it all)."""
    config = settings(
        max_examples=examples,
        stateful_step_count=STEPS,
        deadline=None,
        database=None,
        derandomize=False,
        report_multiple_bugs=False,
        print_blob=False,
        verbosity=Verbosity.quiet,
        phases=(Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
    )
    # A factory function is allowed ("a class or a function"); the stubs ask for a class.
    factory = cast("type[RuleBasedStateMachine]", lambda: DeepMachine(session))
    test = get_state_machine_test(factory, settings=config)
    seed(seed_value)(test)
    test()


Outcome = Literal["pass", "fail", "error"]


def _run(session: Session, examples: int, seed_value: int) -> tuple[Outcome, str | None]:
    """("pass" | "fail" | "error", message) of one deep run, in the worker thread."""
    try:
        run_machine(session, examples, seed_value)
    except Stopped:
        return "error", "cancelled"
    except Exception as exc:  # Violation, Flaky..., or the CRM's transport failing
        if session.stop.is_set():
            return "error", "cancelled"
        if session.best is not None:
            return "fail", None
        if session.timed_out:  # every sequence after the limit was turned away
            return ("pass", None) if session.sequences else ("error", "no sequence ran in time")
        return "error", f"the deep run stopped: {type(exc).__name__}: {exc}"
    # A violation seen is a fail however the run ended: were it ever swallowed on its way out
    # (a check that did not re-raise), the verdict would otherwise be a pass.
    return ("fail" if session.best is not None else "pass"), None


async def deep(prober: Prober, probes: Probes, options: DeepOptions) -> DeepRun:
    """Run the state machine against the prober's CRM; the result for every report output."""
    t0 = time.perf_counter()
    deadline = time.monotonic() + options.timeLimit
    session = Session(prober, asyncio.get_running_loop(), probes, deadline)
    try:
        outcome, message = await asyncio.to_thread(_run, session, options.examples, options.seed)
    except asyncio.CancelledError:
        session.stop.set()
        raise
    found = session.best if outcome == "fail" else None
    if found is not None:
        message = found.violation.message
    elif session.timed_out and outcome == "pass":
        message = (
            f"the time limit ({options.timeLimit:g} s) ended the run after "
            f"{session.sequences} of {options.examples} sequences"
        )
    run = DeepRun(
        outcome=outcome,
        seed=options.seed,
        examples=options.examples,
        stepsPerSequence=STEPS,
        sequences=session.sequences,
        calls=session.calls,
        durationMs=round((time.perf_counter() - t0) * 1000, 1),
        rule=None if found is None else found.violation.rule,
        ruleText=None if found is None else DEEP_RULES[found.violation.rule],
        message=message,
        sequence=[] if found is None else found.steps,
        invariants=[f"{k}: {v}" for k, v in DEEP_RULES.items()],
        apiKeyHeader=prober.header,
    )
    return with_curl(run, prober.base_url)
