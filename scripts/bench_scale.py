"""Scale benchmark (issue 24): every figure of the issue at 10,000, 100,000 and (with --max
1000000) 1,000,000 generated contacts, each beside its target with met or MISSED, then one
table of what an item costs at each size.

Parts (--only picks some; all by default):

- export: `emulator export` with the embedded reference CRM against the same export to a
  served emulator's /crm (a fresh server per run), per phase per call, and records/s (as
  scripts/bench_export.py: companies and contacts sent over those two phases' seconds).
  Targets: embedded >= 10,000 records/s from 100,000 contacts on; each phase's per-call cost
  <= 1.5 x the served one's.
- filters: every documented /v1 list filter and search, uncached: each call a query not
  asked before, then the same kind of query right after a write (POST /v1/contact); p99 over
  --samples calls each, <= 25 ms. The contact search's trigram index is built by the server
  once it listens: the first search and the time the index is whole are printed on their
  own lines (and not in the p99); the calls wait for it (at most 180 s from the spawn).
- mixed: wrk, page reads with one request in ten a new contact, against the bare Starlette
  ceiling (scripts/bench_ceiling.py) measured right before it: >= 0.55 x, p99 <= 10 ms. Each
  server is first left to finish its start's background work (the search index whole, at
  most 180 s from the spawn; its time printed), then the ceiling is measured (a process of
  its own beside the idle server), then the server gets 3 s of the same load, not counted (as
  bench_api.py warms up): the figure is the steady state, where pages read before must
  survive the creates; min(1000, size / 100) distinct pages are read, each read twice
  before the ceiling (a page is kept from its second read; its seconds printed). The
  server's CPU per request (user + system, all threads) is printed beside the ceiling's:
  what a change to the server moves, where the ratio also moves with the machine.
- start: seconds from spawn to the first 200 on /_emulator/health, cold (a fresh seed
  cache) then warm (a second start with the same --seed-cache), and the server process's
  peak RSS (VmHWM of /proc/PID/status, once the search index is whole, 60 s at most, and
  after a page read and a search) against the size of
  the seeded image it made; then two starts with `--db FILE` (the first makes the file, the
  second opens it) and their peak RSS. Targets: at 1,000,000 cold <= 10 s, warm <= 1.5 s,
  in-memory peak RSS <= 1.2 x the image; at 100,000 cold <= 2.5 s, warm <= 1.0 s (issue 13);
  with --db peak RSS <= 400 MB. The contacts worker of a cold start (a child process that
  ends before the server listens) is not in the server's RSS.
- simulation: --days consecutive one-day advances (POST /_emulator/clock/advance), events
  counted from each answer: events/s over them, and the slowest day. The fixtures are read
  without their webhook subscriptions (their receivers do not exist; deliveries are
  scripts/bench_simulation.py's), auto-sync as they have it (off). Targets: >= 50,000
  events/s at 10,000, >= 30,000 at 100,000 and 1,000,000 (a per-event cost independent of
  size), one day at 100,000 in <= 5 s. Then a server with `--db FILE` (a new file) on the
  fixtures as generated, webhook subscriptions included, makes one one-day advance: its peak
  RSS <= 400 MB (the state on disk keeps memory bounded while the simulation runs and its
  deliveries are made, not only at start). The generated receivers refuse the connection:
  each delivery is attempted 4 times within the day, and the advance answers once they are
  made (at 1,000,000 contacts, ~300,000 events and over a million attempts: minutes).

Targets stated at some sizes (records/s, start, memory against the image, events/s) have no
verdict at other sizes (--sizes); those that hold at any size (per-call ratios, p99s, the
mixed load, RSS with --db) have one at every size.
With --before DIR (a checkout of the code to compare with, e.g. `git worktree add`), that
code's figures are measured in the same run, alternating with these, for every part.
--json FILE writes every figure, the cost table and the counts. The last line counts the
targets met and missed; the exit status is 0 either way (a measurement), 1 when a part
failed to run.

Fixtures: --work DIR/fixtures-N or DIR/scale-fixtures-N when it exists, else generated once
into DIR/scale-fixtures-N (seed 7; DIR defaults to build/). Run it on a quiet machine:
`nice -n 5` and a loaded one give slower, noisier figures.
"""

from __future__ import annotations

import argparse
import atexit
import compileall
import itertools
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_api import cpu_seconds, ensure_wrk, proc_kb, run_wrk, start_server, stop, verdict

from emulator.testing import free_port

ROOT = Path(__file__).resolve().parents[1]
PHASES = ("companies", "contacts", "associations", "activities", "tasks", "engagement")
PARTS = ("export", "filters", "mixed", "start", "simulation")
ISSUE_SIZES = (10_000, 100_000, 1_000_000)
KEY = {"x-api-key": "demo-all"}


def api_client(port: int) -> httpx.Client:
    """A client of the server on `port` with the API key; 120 s per call (a search during the
    index build at 1,000,000 contacts is a full scan: far past httpx's default 5 s)."""
    return httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=KEY, timeout=120)


CRM_KEY = "crm-demo-key"
DAY = 86_400

MIXED_SCRIPT = """
local n = 0
local json = {["x-api-key"] = "demo-all", ["content-type"] = "application/json"}
request = function()
  n = n + 1
  if n %% 10 == 0 then
    return wrk.format("POST", "/v1/contact", json, '{"firstName":"Bench","lastName":"L' .. n .. '"}')
  end
  return wrk.format("GET", "/v1/contacts?page=" .. (n %% %(pages)d + 1) .. "&pageSize=100",
                    {["x-api-key"] = "demo-all"})
end
"""
# Every wrk figure is taken after this much of the same load, not counted.
WARM_UP_SECONDS = 3
# s from the spawn: the filters and the mixed load are measured once the search index is
# whole (at 1,000,000 on a loaded machine it was 79-83 s; before it, searches are scans)
INDEX_WAIT = 180
CEILING_SCRIPT = """
request = function()
  return wrk.format("GET", "/v1/contacts?page=1&pageSize=100", {["x-api-key"] = "demo-all"})
end
"""


# -- what the run found: every figure with its verdict, and the cost table ---------------------


@dataclass
class Figure:
    part: str
    size: int
    code: str  # "now", or "before" (--before)
    name: str
    shown: str  # as printed
    target: str
    verdict: str | None  # "met", "MISSED", or None (information, or a size without a target)
    values: dict[str, float] = field(default_factory=dict)


@dataclass
class Report:
    figures: list[Figure] = field(default_factory=list)
    # cost row -> column ("10000" or "10000 before") -> value
    costs: dict[str, dict[str, float]] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)

    def line(
        self,
        part: str,
        size: int,
        code: str,
        name: str,
        shown: str,
        target: str,
        ok: bool | None,
        **values: float,
    ) -> None:
        tag = "" if code == "now" else f" ({code})"
        mark = "" if ok is None else f": {verdict(ok)}"
        print(f"  {name + tag:<44} {shown:>26}   [{target}{mark}]", flush=True)
        self.figures.append(
            Figure(
                part, size, code, name, shown, target, None if ok is None else verdict(ok), values
            )
        )

    def cost(self, row: str, size: int, code: str, value: float) -> None:
        column = str(size) if code == "now" else f"{size} {code}"
        self.costs.setdefault(row, {})[column] = value

    def counts(self) -> tuple[int, int]:
        marks = [f.verdict for f in self.figures if f.code == "now" and f.verdict]
        return marks.count("met"), marks.count("MISSED")

    def print_costs(self, sizes: list[int], codes: list[str]) -> None:
        if not self.costs:
            return
        print("cost per item against size (before: the --before code, same run)", flush=True)
        header = "".join(f"{size:>22,}" for size in sizes)
        print(f"  {'':<58}{header}")
        for row, columns in self.costs.items():
            cells = []
            for size in sizes:
                now = columns.get(str(size))
                old = columns.get(f"{size} before") if "before" in codes else None
                cell = "-" if now is None else _number(now)
                if old is not None:
                    cell += f" ({_number(old)})"
                cells.append(f"{cell:>22}")
            print(f"  {row:<58}{''.join(cells)}", flush=True)

    def write_json(self, path: Path, sizes: list[int], codes: list[str]) -> None:
        met, missed = self.counts()
        path.write_text(
            json.dumps(
                {
                    "sizes": sizes,
                    "codes": codes,
                    "figures": [asdict(f) for f in self.figures],
                    "costs": self.costs,
                    "met": met,
                    "missed": missed,
                    "failed": self.failed,
                },
                indent=2,
            )
            + "\n"
        )


def _number(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.2f}" if value < 10 else f"{value:.1f}"


# -- fixtures and servers ----------------------------------------------------------------------


def fixtures_for(contacts: int, work: Path) -> Path:
    """An existing WORK/fixtures-N or WORK/scale-fixtures-N, else one generated (seed 7)."""
    for name in (f"fixtures-{contacts}", f"scale-fixtures-{contacts}"):
        if (work / name / "contacts.json").exists():
            return work / name
    out = work / f"scale-fixtures-{contacts}"
    print(f"generating {contacts:,} contacts into {out} ...", flush=True)
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "generate_fixtures.py"),
            *("--contacts", str(contacts), "--companies", str(max(10, contacts // 10))),
            *("--seed", "7", "--out", str(out)),
        ],
        check=True,
        cwd=ROOT,
    )
    return out


def env_for(code: Path) -> dict[str, str]:
    """The environment that runs the emulator package of `code` (this checkout or --before's
    copy): bytecode is read, never written (no start writes into a checkout)."""
    return dict(os.environ, PYTHONDONTWRITEBYTECODE="1", PYTHONPATH=str(code))


def runnable(code: Path, into: Path) -> Path:
    """A checkout to run with its package's bytecode compiled, as a pip install has it (else
    every start compiles every module): this checkout in place; --before's package and
    fixtures copied into `into` and compiled there (nothing is written into that checkout)."""
    if code != ROOT:
        shutil.rmtree(into, ignore_errors=True)
        for name in ("emulator", "fixtures"):
            if (code / name).is_dir():
                shutil.copytree(
                    code / name, into / name, ignore=shutil.ignore_patterns("__pycache__")
                )
        code = into
    compileall.compile_dir(code / "emulator", quiet=1)
    return code


EMULATOR = [sys.executable, "-m", "emulator"]
(ROOT / "build").mkdir(exist_ok=True)
# this run's own (another run beside it keeps its own), removed at exit
(ROOT / "build").mkdir(exist_ok=True)  # a fresh checkout has none
SEED_CACHES = Path(tempfile.mkdtemp(prefix="scale-seed-cache-", dir=ROOT / "build"))
atexit.register(shutil.rmtree, SEED_CACHES, ignore_errors=True)


def serve(
    code: Path, fixtures: Path, cache: Path | None = None, *extra: str
) -> tuple[subprocess.Popen[bytes], int, float]:
    """`emulator serve` of `code` on a free port with the seed cache `cache` (default: that
    code's own, shared by its servers: warm after its first): (process, port, seconds to its
    first 200 on /_emulator/health)."""
    port = free_port()
    cache = cache or SEED_CACHES / "shared" / str(code).strip("/").replace("/", "_")
    proc, seconds = start_server(
        fixtures.resolve(),
        port,
        *("--seed-cache", str(cache), *extra),
        cwd=code,
        env=env_for(code),
        limit=600,
    )
    return proc, port, seconds


# -- export ------------------------------------------------------------------------------------


def export_once(code: Path, fixtures: Path, crm_url: str | None) -> dict[str, Any]:
    cmd = [*EMULATOR, "export", "--fixtures", str(fixtures.resolve()), "--json"]
    if crm_url:
        cmd += ["--crm-url", crm_url, "--api-key", CRM_KEY]
    done = subprocess.run(
        cmd, check=False, capture_output=True, cwd=code, env=env_for(code), timeout=7200
    )
    if done.returncode not in (0, 1):
        raise SystemExit(f"bench_scale: {' '.join(cmd)} exited {done.returncode}: {done.stderr!r}")
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def served_export(code: Path, fixtures: Path) -> dict[str, Any]:
    """An export to the /crm of a fresh `emulator serve` (of the same code, same fixtures)."""
    proc, port, _ = serve(code, fixtures)
    try:
        return export_once(code, fixtures, f"http://127.0.0.1:{port}/crm")
    finally:
        stop(proc)


def export_figures(report: dict[str, Any]) -> dict[str, float]:
    """records/s (as bench_export.py: the companies and contacts sent over those phases'
    seconds), the whole run's seconds and each phase's ms per call of one report."""
    phases = report["phases"]
    records = phases["companies"]["sent"] + phases["contacts"]["sent"]
    seconds = phases["companies"]["seconds"] + phases["contacts"]["seconds"]
    out = {"seconds": report["seconds"], "records/s": records / max(seconds, 1e-9)}
    for phase in PHASES:
        stats = phases[phase]
        if stats["requests"]:
            out[phase] = 1000 * stats["seconds"] / stats["requests"]
    return out


def medians(runs: list[dict[str, float]]) -> dict[str, float]:
    keys = set().union(*runs)
    return {k: statistics.median(r[k] for r in runs if k in r) for k in keys}


def bench_export(
    report: Report, codes: dict[str, Path], fixtures: Path, size: int, runs: int
) -> None:
    print(f"export, {size:,} contacts (median of {runs} run(s) each, alternating)", flush=True)
    got: dict[tuple[str, str], list[dict[str, float]]] = {}
    for _ in range(runs):
        for label, code in codes.items():
            got.setdefault((label, "embedded"), []).append(
                export_figures(export_once(code, fixtures, None))
            )
            got.setdefault((label, "served"), []).append(
                export_figures(served_export(code, fixtures))
            )
    for label in codes:
        emb, srv = medians(got[(label, "embedded")]), medians(got[(label, "served")])
        issue = size in ISSUE_SIZES
        target = ">= 10,000 records/s" if size >= 100_000 else "10,000 records/s from 100,000 on"
        report.line(
            "export",
            size,
            label,
            "embedded export",
            f"{emb['records/s']:,.0f} rec/s, run {emb['seconds']:.2f} s",
            target,
            emb["records/s"] >= 10_000 if issue and size >= 100_000 else None,
            **emb,
        )
        report.line(
            "export",
            size,
            label,
            "served /crm export",
            f"{srv['records/s']:,.0f} rec/s, run {srv['seconds']:.2f} s",
            "reference",
            None,
            **srv,
        )
        report.cost("export, embedded CRM: µs per record", size, label, 1e6 / emb["records/s"])
        report.cost("export, served /crm: µs per record", size, label, 1e6 / srv["records/s"])
        worst = 0.0
        for phase in PHASES:
            if phase in emb and phase in srv:
                ratio = emb[phase] / srv[phase]
                worst = max(worst, ratio)
                report.line(
                    "export",
                    size,
                    label,
                    f"  {phase} per call",
                    f"{emb[phase]:.2f} vs {srv[phase]:.2f} ms ({ratio:.2f}x)",
                    "embedded <= 1.5 x served",
                    ratio <= 1.5,
                    embedded_ms=emb[phase],
                    served_ms=srv[phase],
                )
        report.cost("export, embedded / served per call, worst phase (x)", size, label, worst)


# -- filters -----------------------------------------------------------------------------------


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def timed(call: Callable[[], httpx.Response]) -> float:
    began = time.perf_counter()
    response = call()
    elapsed = (time.perf_counter() - began) * 1000
    if response.status_code != 200:
        raise SystemExit(f"bench_scale: {response.request.url} answered {response.status_code}")
    return elapsed


def queries(
    fixtures: Path, samples: int
) -> dict[str, list[Callable[[httpx.Client], httpx.Response]]]:
    """Per filter, `samples` calls, each a query not asked before (so none is cached)."""
    rng = random.Random(7)
    contacts = json.loads((fixtures / "contacts.json").read_bytes())
    companies = json.loads((fixtures / "companies.json").read_bytes())
    lists = json.loads((fixtures / "lists.json").read_bytes())
    people = rng.sample(contacts, min(len(contacts), samples * 4))
    terms: list[str] = []
    for c in people:  # a piece of a last name, of "first last", of an e-mail
        text = rng.choice(
            [
                c.get("lastName"),
                f"{c.get('firstName')} {c.get('lastName')}",
                c.get("professionalEmail"),
            ]
        )
        if text and len(text) >= 4:
            start = rng.randrange(0, len(text) - 3)
            term = text[start : start + rng.randint(3, 6)].strip()
            if len(term) >= 3 and term not in terms:  # as the API trims it
                terms.append(term)
    stamps = sorted(c["updatedAt"] for c in contacts)
    del contacts  # ~1 GB of objects at 1,000,000 contacts: not kept through the calls
    company_ids = [c["id"] for c in rng.sample(companies, min(len(companies), samples))]
    contact_lists = [x["id"] for x in lists if x["type"] == "CONTACTS"] or [1]
    industries = sorted({c.get("industry") for c in companies if c.get("industry")})

    def get(params: dict[str, Any]) -> Callable[[httpx.Client], httpx.Response]:
        return lambda client: client.get("/v1/contacts", params=params)

    def search_companies(body: dict[str, Any]) -> Callable[[httpx.Client], httpx.Response]:
        return lambda client: client.post("/v1/companies/search", json=body)

    return {
        "contacts ?search=": [get({"search": t}) for t in terms[:samples]],
        # shorter than a trigram: no index can narrow these, every contact is read
        "contacts ?search= (2 characters)": [
            get({"search": t[:2]}) for t in list(dict.fromkeys(terms))[: max(1, samples // 5)]
        ],
        "contacts ?updatedAtFrom=": [
            get({"updatedAtFrom": rng.choice(stamps)}) for _ in range(samples)
        ],
        "contacts ?updatedAtTo=": [
            get({"updatedAtTo": rng.choice(stamps)}) for _ in range(samples)
        ],
        "contacts ?companyId=": [get({"companyId": i}) for i in company_ids],
        # few lists: each call a different page size, so each is a query not asked before
        "contacts ?listId=": [
            get({"listId": contact_lists[i % len(contact_lists)], "pageSize": 1 + i % 100})
            for i in range(samples)
        ],
        "POST /v1/companies/search": [
            search_companies(
                {
                    "include": {
                        "industry": [rng.choice(industries)] if industries else [],
                        "numberOfEmployees": [str(rng.randint(1, 5000)), ""],
                    },
                    "pageSize": 100,
                }
            )
            for _ in range(samples)
        ],
    }


def measure_filters(code: Path, fixtures: Path, samples: int) -> dict[str, tuple[float, float]]:
    """(first-call p99, after-a-write p99) per filter, plus the index lines."""
    proc, port, started = serve(code, fixtures)
    spawned = time.perf_counter() - started
    out: dict[str, tuple[float, float]] = {}
    try:
        with api_client(port) as client:
            first_search = timed(lambda: client.get("/v1/contacts", params={"search": "zzq"}))
            out["first search after start (ms)"] = (first_search, first_search)
            out["search index ready after (s)"] = (index_ready(client, spawned, INDEX_WAIT),) * 2
            n = 0
            for name, calls in queries(fixtures, samples).items():
                fresh = [timed(partial(call, client)) for call in calls]
                after = []
                for call in calls:
                    n += 1
                    client.post("/v1/contact", json={"firstName": "Scale", "lastName": f"W{n}"})
                    after.append(timed(partial(call, client)))
                out[name] = (p99(fresh), p99(after))
    finally:
        stop(proc)
    return out


def index_ready(client: httpx.Client, spawned: float, cap: float = 600) -> float:
    """Seconds from the server's spawn (perf_counter `spawned`) until searches are fast (its
    index is built in the background once it listens): three searches in a row under 25 ms,
    polled every 50 ms."""
    fast, n = 0, 0
    while fast < 3 and time.perf_counter() - spawned < cap:
        n += 1
        ms = timed(partial(client.get, "/v1/contacts", params={"search": f"zq{n}x"}))
        fast = fast + 1 if ms < 25 else 0
        time.sleep(0.05)
    return time.perf_counter() - spawned


def bench_filters(
    report: Report, codes: dict[str, Path], fixtures: Path, size: int, samples: int
) -> None:
    results = {label: measure_filters(code, fixtures, samples) for label, code in codes.items()}
    print(f"filters, {size:,} contacts (p99 ms: first call / right after a write)", flush=True)
    for label, figures in results.items():
        for name, (fresh, after) in figures.items():
            if name.startswith("first search"):
                report.line(
                    "filters",
                    size,
                    label,
                    "first search after start",
                    f"{fresh:.1f} ms",
                    "information",
                    None,
                    ms=fresh,
                )
            elif name.startswith("search index"):
                report.line(
                    "filters",
                    size,
                    label,
                    "search index ready",
                    f"{fresh:.2f} s after spawn",
                    "information",
                    None,
                    seconds=fresh,
                )
            else:
                scan = name.endswith("(2 characters)")
                report.line(
                    "filters",
                    size,
                    label,
                    name,
                    f"{fresh:.1f} / {after:.1f} ms",
                    "no index: a scan" if scan else "<= 25 ms p99",
                    None if scan else fresh <= 25 and after <= 25,
                    first_ms=fresh,
                    after_write_ms=after,
                )
                row = name.removeprefix("contacts ")
                report.cost(f"filter {row}: p99 ms, first call", size, label, fresh)
                report.cost(f"filter {row}: p99 ms, after a write", size, label, after)


# -- mixed load --------------------------------------------------------------------------------


def bench_mixed(
    report: Report,
    codes: dict[str, Path],
    fixtures: Path,
    size: int,
    seconds: int,
    connections: int,
) -> None:
    """Each code's server, started and left to build its search index, then the ceiling
    and that server's load one right after the other."""
    wrk = ensure_wrk()
    print(f"mixed load, {size:,} contacts (wrk -c{connections}, {seconds} s)", flush=True)
    for label, code in codes.items():
        proc, port, started = serve(code, fixtures)
        try:
            # the steady state: once the search index is built (~45 s after the spawn at
            # 1,000,000), as the filters part waits for it (code without one: 90 s on)
            with api_client(port) as client:
                ready = index_ready(client, time.perf_counter() - started, cap=INDEX_WAIT)
            report.line(
                "mixed",
                size,
                label,
                "search index ready before the load",
                f"{ready:.2f} s after spawn",
                "information",
                None,
                seconds=ready,
            )
            pages = max(1, min(1000, size // 100))
            filled = read_every_page_twice(port, pages)
            report.line(
                "mixed",
                size,
                label,
                "every page of the load read twice first",
                f"{pages:,} pages in {filled:.1f} s",
                "information",
                None,
                seconds=filled,
            )
            # Measured here, not once before the servers: at 1,000,000 a cold start and its
            # index took 2-3 minutes on a loaded machine, over which the ceiling alone moved
            # 4,575 -> 2,596 req/s (a load measured against the earlier one: 1.40x).
            ceiling = ceiling_load(wrk, fixtures, seconds, connections)
            report.line(
                "mixed",
                size,
                label,
                "ceiling (bare Starlette), just before",
                f"{ceiling['rps']:,.0f} req/s",
                "reference",
                None,
                **ceiling,
            )
            script = MIXED_SCRIPT % {"pages": pages}
            run_wrk(wrk, port, script, WARM_UP_SECONDS, connections)
            mixed = cpu_measured(
                proc.pid, partial(run_wrk, wrk, port, script, seconds, connections)
            )
        finally:
            stop(proc)
        ratio = mixed["rps"] / ceiling["rps"]
        report.line(
            "mixed",
            size,
            label,
            "pages + 1 in 10 new contacts",
            f"{mixed['rps']:,.0f} req/s {ratio:.2f}x p99 {mixed['p99']:.1f} ms",
            ">= 0.55 x ceiling, p99 <= 10 ms",
            ratio >= 0.55 and mixed["p99"] <= 10 and not mixed["non2xx"],
            ratio=ratio,
            **mixed,
        )
        report.line(
            "mixed",
            size,
            label,
            "server CPU a request (the ceiling's)",
            f"{mixed['cpu_us']:,.0f} us ({ceiling['cpu_us']:,.0f} us)",
            "information",
            None,
            cpu_us=mixed["cpu_us"],
            ceiling_cpu_us=ceiling["cpu_us"],
        )
        report.cost("mixed load: ratio to the ceiling (x)", size, label, ratio)
        report.cost("mixed load: p99 ms", size, label, mixed["p99"])
        report.cost("mixed load: server CPU us a request", size, label, mixed["cpu_us"])


def read_every_page_twice(port: int, pages: int) -> float:
    """Seconds to read each page the load reads twice, one after the other: a server keeps a
    page from its second read on, and at 1,000,000 contacts the 2,000 first reads took more
    than the load's 3 s warm-up (500-1,700 req/s, p99 35-126 ms, in its first seconds), so
    the load's figure was not yet the steady state it stands for."""
    started = time.perf_counter()
    with api_client(port) as client:
        for page in range(1, pages + 1):
            for _ in range(2):
                response = client.get(f"/v1/contacts?page={page}&pageSize=100")
                response.raise_for_status()
    return time.perf_counter() - started


def ceiling_load(wrk: str, fixtures: Path, seconds: int, connections: int) -> dict[str, float]:
    """wrk's figures of the bare Starlette ceiling (scripts/bench_ceiling.py), after the
    same warm-up as a load."""
    port = free_port()
    ceiling_cmd = [sys.executable, str(ROOT / "scripts" / "bench_ceiling.py"), str(port)]
    proc, _ = start_server(fixtures, port, command=ceiling_cmd)
    try:
        run_wrk(wrk, port, CEILING_SCRIPT, WARM_UP_SECONDS, connections)
        return cpu_measured(
            proc.pid, partial(run_wrk, wrk, port, CEILING_SCRIPT, seconds, connections)
        )
    finally:
        stop(proc)


def cpu_measured(pid: int, load: Callable[[], dict[str, float]]) -> dict[str, float]:
    """wrk's figures of `load`, with the server's CPU per request in us (`cpu_us`): what a
    change to the server moves, where req/s also moves with the machine's other load."""
    before = cpu_seconds(pid)
    figures = load()
    spent = cpu_seconds(pid) - before
    return {**figures, "cpu_us": spent / max(figures["requests"], 1) * 1e6}


# -- start and memory --------------------------------------------------------------------------


def touched_memory(proc: subprocess.Popen[bytes], port: int, spawned: float) -> tuple[float, float]:
    """(peak RSS, RSS) in MB of the server process once its search index is whole (60 s after
    the spawn at most: code without one never is) and after a page read and a search."""
    with api_client(port) as client:
        index_ready(client, spawned, cap=60)
        for params in ({"page": 1, "pageSize": 100}, {"search": "smith"}):
            timed(partial(client.get, "/v1/contacts", params=params))
    return proc_kb(proc.pid, "status", "VmHWM") / 1024, proc_kb(proc.pid, "status", "VmRSS") / 1024


def image_mb(cache: Path) -> float:
    """The seeded image's size: the largest file the start wrote into its seed cache."""
    sizes = [f.stat().st_size for f in cache.rglob("*") if f.is_file()]
    return max(sizes, default=0) / 2**20


def start_once(code: Path, fixtures: Path, cache: Path, *extra: str) -> dict[str, float]:
    proc, port, seconds = serve(code, fixtures, cache, *extra)
    try:
        peak, rss = touched_memory(proc, port, time.perf_counter() - seconds)
    finally:
        stop(proc)
    return {"seconds": seconds, "peak_mb": peak, "rss_mb": rss}


def bench_start(report: Report, codes: dict[str, Path], fixtures: Path, size: int) -> None:
    print(f"start and memory, {size:,} contacts (server process's peak RSS)", flush=True)
    per_100k = size / 100_000
    for label, code in codes.items():
        work = SEED_CACHES / f"start-{label}"
        shutil.rmtree(work, ignore_errors=True)
        cache = work / "cache"
        cold = start_once(code, fixtures, cache)
        image = image_mb(cache)
        if not image:
            raise SystemExit(f"bench_scale: the cold start wrote no seeded image into {cache}")
        warm = start_once(code, fixtures, cache)
        db = work / "state.db"
        db_first = start_once(code, fixtures, cache, "--db", str(db))
        db_again = start_once(code, fixtures, cache, "--db", str(db))
        db_mb = db.stat().st_size / 2**20 if db.exists() else 0.0
        shutil.rmtree(work, ignore_errors=True)
        cold_target = {1_000_000: 10.0, 100_000: 2.5}.get(size)
        warm_target = {1_000_000: 1.5, 100_000: 1.0}.get(size)
        report.line(
            "start",
            size,
            label,
            "cold start",
            f"{cold['seconds']:.2f} s",
            "<= 10 s at 1,000,000, <= 2.5 s at 100,000",
            cold["seconds"] <= cold_target if cold_target else None,
            **cold,
        )
        report.line(
            "start",
            size,
            label,
            "warm start (same --seed-cache)",
            f"{warm['seconds']:.2f} s",
            "<= 1.5 s at 1,000,000, <= 1.0 s at 100,000",
            warm["seconds"] <= warm_target if warm_target else None,
            **warm,
        )
        for name, run in (("cold", cold), ("warm", warm)):
            ratio = run["peak_mb"] / image
            report.line(
                "start",
                size,
                label,
                f"peak RSS in memory, {name}",
                f"{run['peak_mb']:,.0f} MB, {ratio:.2f}x image",
                f"<= 1.2 x the image ({image:,.0f} MB) at 1,000,000",
                ratio <= 1.2 if size == 1_000_000 else None,
                ratio=ratio,
                image_mb=image,
                **run,
            )
        for name, run in (("first start (a new file)", db_first), ("second start", db_again)):
            report.line(
                "start",
                size,
                label,
                f"--db {name}",
                f"{run['seconds']:.2f} s, peak {run['peak_mb']:,.0f} MB",
                "peak RSS <= 400 MB",
                run["peak_mb"] <= 400,
                db_file_mb=db_mb,
                **run,
            )
        report.cost("start, cold: s per 100,000 contacts", size, label, cold["seconds"] / per_100k)
        report.cost("start, warm: s per 100,000 contacts", size, label, warm["seconds"] / per_100k)
        report.cost("peak RSS in memory (warm) / image (x)", size, label, warm["peak_mb"] / image)
        report.cost("peak RSS with --db (second start): MB", size, label, db_again["peak_mb"])


# -- simulation --------------------------------------------------------------------------------


def advance_days(port: int, days: int) -> list[tuple[int, float]]:
    """(events, wall seconds) of each of `days` consecutive one-day advances."""
    out = []
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=3600) as client:
        for _ in range(days):
            began = time.perf_counter()
            response = client.post("/_emulator/clock/advance", json={"seconds": DAY})
            seconds = time.perf_counter() - began
            if response.status_code != 200:
                raise SystemExit(
                    f"bench_scale: advance answered {response.status_code}: {response.text[:300]}"
                )
            events = response.json()["events"]
            if not isinstance(events, int):
                raise SystemExit(f"bench_scale: advance answered events={events!r}")
            out.append((events, seconds))
    return out


def without_webhooks(fixtures: Path) -> Path:
    """The fixtures without their webhook subscriptions (links to every other file): the
    simulation's own cost, not that of deliveries to the generated fixtures' unreachable
    receivers (bench_simulation.py measures deliveries to a real one)."""
    out = SEED_CACHES / f"{fixtures.name}-without-webhooks"
    if not out.exists():
        out.mkdir()
        for path in fixtures.iterdir():
            if path.name != "webhooks.json":
                (out / path.name).symlink_to(path.resolve())
        (out / "webhooks.json").write_text("[]")
    return out


def db_peak_after_a_day(code: Path, fixtures: Path) -> tuple[float, int, float]:
    """A `--db` server (a new file) on the fixtures as generated, webhook subscriptions
    included, after a one-day advance: (its peak RSS in MB, the day's events, its seconds).
    The state on disk must keep the process's memory bounded while it simulates, not only at
    start, and so must the deliveries that follow each advance: the generated receivers
    refuse the connection, so every delivery of the day's events is attempted 4 times within
    the day (30 s, 5 min and 50 min apart), and the advance answers once they are made."""
    with tempfile.TemporaryDirectory(dir=ROOT / "build") as work:
        proc, port, seconds = serve(code, fixtures, None, "--db", str(Path(work) / "state.db"))
        try:
            with api_client(port) as client:
                index_ready(client, time.perf_counter() - seconds)
            ((events, took),) = advance_days(port, 1)
            return proc_kb(proc.pid, "status", "VmHWM") / 1024, events, took
        finally:
            stop(proc)


def bench_simulation(
    report: Report, codes: dict[str, Path], fixtures: Path, size: int, days: int
) -> None:
    got = {}
    db_peaks = {}
    quiet = without_webhooks(fixtures)
    for label, code in codes.items():
        proc, port, _ = serve(code, quiet)
        try:
            # the search index is built in the background once the server listens: let it
            # finish first, so the advances measure the simulation alone
            with api_client(port) as client:
                index_ready(client, time.perf_counter())
            got[label] = advance_days(port, days)
        finally:
            stop(proc)
        db_peaks[label] = db_peak_after_a_day(code, fixtures)
    print(f"simulation, {size:,} contacts ({days} consecutive one-day advances)", flush=True)
    rate_target = {10_000: 50_000, 1_000_000: 30_000}.get(size)  # 100,000: the day's seconds
    for label, runs in got.items():
        events = sum(e for e, _ in runs)
        seconds = sum(s for _, s in runs)
        rate = events / seconds if seconds else 0.0
        slowest = max(s for _, s in runs)
        report.line(
            "simulation",
            size,
            label,
            "one-day advances",
            f"{rate:,.0f} events/s ({events:,} in {seconds:.2f} s)",
            ">= 50,000 events/s at 10,000, >= 30,000 at 1,000,000",
            rate >= rate_target if rate_target else None,
            events_per_s=rate,
            events=events,
            seconds=seconds,
        )
        report.line(
            "simulation",
            size,
            label,
            "slowest one-day advance",
            f"{slowest:.2f} s ({max(e for e, _ in runs):,} events at most)",
            "<= 5 s at 100,000",
            slowest <= 5 if size == 100_000 else None,
            seconds=slowest,
        )
        if events:
            report.cost("simulation: µs per event", size, label, 1e6 * seconds / events)
        peak, day_events, day_seconds = db_peaks[label]
        report.line(
            "simulation",
            size,
            label,
            "--db peak RSS after a one-day advance, webhooks on",
            f"{peak:,.0f} MB ({day_events:,} events and their deliveries in {day_seconds:.0f} s)",
            "peak RSS <= 400 MB",
            peak <= 400,
            peak_mb=peak,
            events=day_events,
            seconds=day_seconds,
        )
        report.cost(
            "simulation: s per one-day advance (median)",
            size,
            label,
            statistics.median(s for _, s in runs),
        )


# -- the run -----------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max", type=int, default=100_000, help="largest size (1000000 adds it)")
    parser.add_argument("--min", type=int, default=10_000, help="smallest size")
    parser.add_argument(
        "--sizes", help="comma-separated sizes instead of --min/--max (e.g. 2000 for a quick look)"
    )
    parser.add_argument("--runs", type=int, default=3, help="export runs per side (median)")
    parser.add_argument("--samples", type=int, default=100, help="calls per filter")
    parser.add_argument("--seconds", type=int, default=10, help="wrk duration")
    parser.add_argument("--connections", type=int, default=16, help="wrk connections")
    parser.add_argument("--days", type=int, default=3, help="one-day advances per simulation")
    parser.add_argument(
        "--only", default=",".join(PARTS), help=f"comma-separated: {', '.join(PARTS)}"
    )
    parser.add_argument("--before", type=Path, help="a checkout to measure side by side")
    parser.add_argument(
        "--work",
        type=Path,
        default=ROOT / "build",
        help="where fixtures-N or scale-fixtures-N are found, else generated (build/)",
    )
    parser.add_argument("--json", type=Path, help="write every figure to this file")
    args = parser.parse_args()
    parts = [p for p in PARTS if p in set(args.only.split(","))]
    unknown = set(args.only.split(",")) - set(PARTS)
    if unknown:
        parser.error(f"--only: unknown part(s) {', '.join(sorted(unknown))}")
    if args.days < 1:
        parser.error("--days: at least 1")
    codes = {"now": ROOT}
    if args.before is not None:
        if not (args.before / "emulator" / "__init__.py").exists():
            parser.error(f"--before {args.before}: no emulator package there")
        codes["before"] = args.before.resolve()
    sizes = [s for s in ISSUE_SIZES if args.min <= s <= args.max]
    if args.sizes:
        try:
            sizes = [int(s) for s in args.sizes.split(",")]
        except ValueError:
            parser.error(f"--sizes: not a list of integers: {args.sizes}")
    if not sizes:
        parser.error("no size between --min and --max")
    for label, code in codes.items():
        codes[label] = runnable(code, SEED_CACHES / f"code-{label}")
    report = Report()
    for size, part in itertools.product(sizes, parts):
        fixtures = fixtures_for(size, args.work.resolve())
        try:
            if part == "export":
                bench_export(report, codes, fixtures, size, 1 if size >= 1_000_000 else args.runs)
            elif part == "filters":
                bench_filters(report, codes, fixtures, size, args.samples)
            elif part == "mixed":
                bench_mixed(report, codes, fixtures, size, args.seconds, args.connections)
            elif part == "start":
                bench_start(report, codes, fixtures, size)
            else:
                bench_simulation(report, codes, fixtures, size, args.days)
        except (SystemExit, subprocess.SubprocessError, httpx.HTTPError, OSError) as exc:
            # one part failing to run does not lose the others' figures; the exit status says it
            message = f"{part} at {size:,}: {exc}"
            report.failed.append(message)
            print(f"  FAILED to run: {message}", file=sys.stderr, flush=True)
    report.print_costs(sizes, list(codes))
    if args.json:
        report.write_json(args.json, sizes, list(codes))
    met, missed = report.counts()
    failed = f", {len(report.failed)} part(s) FAILED to run" if report.failed else ""
    print(f"targets: {met} met, {missed} MISSED{failed}", flush=True)
    return 1 if report.failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
