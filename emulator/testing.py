"""pytest plugin (entry point `pytest11`): a real emulator for a test suite.

    def test_contacts_are_listed(emulator):
        r = emulator.client.get("/v1/contacts", headers={"x-api-key": "demo-all"})
        assert r.status_code == 200

`emulator_server` (session scope) starts `emulator serve` once, as a process on a free
loopback port, and stops it at the end; `emulator` (function scope) gives the test a
workspace of its own on it (`--emulator-isolation=workspace`, the default: tests may run in
parallel, `pytest -n 4`) or resets the whole emulator before the test (`reset`), and hands out
its URL, an httpx client and helpers. Nothing is autouse: a suite that never asks for these
fixtures never starts a server.

Under pytest-xdist every worker is a session of its own: the first worker to need the server
starts it and notes its URL in the run's shared temp directory (under a file lock); the
others use it, and the last one to finish stops it. One server for the whole run: one
start-up (about a second) instead of one per worker, and workspaces keep the tests apart.

Options: `--emulator-fixtures DIR` (or ini `emulator_fixtures`), `--emulator-url URL` (or env
EMULATOR_URL: use an emulator that is already running, e.g. a CI background step) and
`--emulator-serve-args "..."` (more `emulator serve` flags, e.g. "--clock realtime") and
`--emulator-control-token TOKEN` (or env EMULATOR_CONTROL_TOKEN: the server started here
requires it, and every control call of the plugin sends it as `Authorization: Bearer`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # httpx loads only when a test asks for the emulator
    import httpx

START_TIMEOUT = 30.0


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("emulator", "outreach platform emulator")
    group.addoption(
        "--emulator-fixtures",
        default=None,
        metavar="DIR",
        help="fixture directory the emulator serves (default: its bundled fixtures/default)",
    )
    group.addoption(
        "--emulator-url",
        default=None,
        metavar="URL",
        help="use the emulator already running at URL instead of starting one "
        "(default: $EMULATOR_URL if set)",
    )
    group.addoption(
        "--emulator-serve-args",
        default="",
        metavar="ARGS",
        help='more flags for `emulator serve`, e.g. "--clock realtime --journal-size 1000"',
    )
    group.addoption(
        "--emulator-control-token",
        default=None,
        metavar="TOKEN",
        help="control token of the emulator (default: $EMULATOR_CONTROL_TOKEN if set)",
    )
    group.addoption(
        "--emulator-isolation",
        default="workspace",
        choices=("workspace", "reset"),
        help="workspace (default): each test gets a workspace of its own on the shared server, "
        "so tests may run in parallel; reset: each test resets the whole emulator first",
    )
    parser.addini(
        "emulator_fixtures", "fixture directory the emulator serves (relative: to rootdir)"
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class EmulatorServer:
    """One `emulator serve` process (or an emulator somebody else runs, when `process` is None)."""

    def __init__(
        self, url: str, process: subprocess.Popen[bytes] | None = None, token: str | None = None
    ) -> None:
        self.url = url.rstrip("/")
        self.process = process
        self.token = token

    @property
    def headers(self) -> dict[str, str]:
        """What every control call sends: the control token, when there is one."""
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    @classmethod
    def start(
        cls, args: list[str], timeout: float = START_TIMEOUT, token: str | None = None
    ) -> EmulatorServer:
        """`emulator serve ARGS` on a free port; answers once /_emulator/health says 200."""
        import httpx  # deferred: pytest loads this plugin in every project; httpx only when used

        port = free_port()
        command = [sys.executable, "-m", "emulator", "serve", "--port", str(port), *args]
        if token:
            command += ["--control-token", token]
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + timeout
        # The output is read only if start-up fails; the process keeps its own handle after.
        with tempfile.TemporaryFile() as log:
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
            try:
                while True:
                    if process.poll() is not None:
                        log.seek(0)
                        output = log.read().decode(errors="replace")
                        raise RuntimeError(f"emulator serve exited {process.returncode}:\n{output}")
                    try:
                        if httpx.get(f"{url}/_emulator/health", timeout=1).status_code == 200:
                            return cls(url, process, token)
                    except httpx.TransportError:
                        pass
                    if time.monotonic() > deadline:
                        raise RuntimeError(
                            f"emulator serve did not answer on {url} in {timeout:.0f} s"
                        )
                    time.sleep(0.05)
            except BaseException:
                cls(url, process, token).stop()
                raise

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _checked(response: httpx.Response) -> httpx.Response:
    if response.status_code >= 400:
        raise AssertionError(
            f"{response.request.method} {response.request.url.path} answered "
            f"{response.status_code}: {response.text}"
        )
    return response


class Emulator:
    """What a test gets: the URL of its workspace (or of the whole emulator), an httpx client
    on it, and helpers for the control API; every helper works on that workspace."""

    def __init__(
        self, server: EmulatorServer, client: httpx.Client, url: str | None = None
    ) -> None:
        self.server = server
        self.url = (url or server.url).rstrip("/")
        self.client = client
        self.workspace_id: str | None = None  # set when the test has a workspace of its own
        self._v1: dict[str, httpx.Client] = {}

    def _ok(self, response: httpx.Response) -> Any:
        """The JSON body of a control call; an error answer fails the test with its body."""
        return _checked(response).json()

    def v1(self, api_key: str = "demo-all") -> httpx.Client:
        """A client of /v1 with an API key (the default fixtures' demo-all key by default);
        one per key, closed after the test."""
        import httpx  # deferred: pytest loads this plugin in every project; httpx only when used

        if api_key not in self._v1:
            self._v1[api_key] = httpx.Client(
                base_url=f"{self.url}/v1", headers={"x-api-key": api_key}, timeout=30
            )
        return self._v1[api_key]

    def close(self) -> None:
        for client in self._v1.values():
            client.close()
        self._v1.clear()

    def reset(self) -> None:
        self._ok(self.client.post("/_emulator/reset"))

    def now(self) -> str:
        """The emulator's (virtual) time."""
        return str(self._ok(self.client.get("/_emulator/health"))["now"])

    def advance(self, seconds: float | None = None, *, until: str | None = None) -> Any:
        """Move the virtual clock (and the simulation) forward; answers the new events."""
        body = {"until": until} if until is not None else {"seconds": seconds}
        return self._ok(self.client.post("/_emulator/clock/advance", json=body))

    def snapshot(self, label: str | None = None) -> str:
        """Save the whole state; answers the snapshot id."""
        return str(self._ok(self.client.post("/_emulator/snapshots", json={"label": label}))["id"])

    def restore(self, snapshot_id: str) -> None:
        self._ok(self.client.post(f"/_emulator/snapshots/{snapshot_id}/restore"))

    def journal(self, **filters: str) -> list[dict[str, Any]]:
        """Every CRM exchange of the exporter, oldest first (filters: method, path, exportId)."""
        r = _checked(self.client.get("/_emulator/journal.jsonl", params=filters))
        return [json.loads(line) for line in r.text.splitlines()]

    # -- incoming calls: the journal of /v1 and /crm calls, assertions, /v1 faults ------------

    def requests(
        self, method: str | None = None, route: str | None = None, path: str | None = None
    ) -> list[dict[str, Any]]:
        """Every recorded /v1 and /crm call since the reset, oldest first (filters: method,
        route template such as /v1/contact/{contactId}, exact path)."""
        filters = {"method": method, "route": route, "path": path}
        params: dict[str, Any] = {k: v for k, v in filters.items() if v is not None}
        calls: list[dict[str, Any]] = []
        page = 1
        while True:
            params.update(limit=1000, page=page)
            body = self._ok(self.client.get("/_emulator/requests", params=params))
            calls.extend(body["data"])
            if page * 1000 >= body["meta"]["total"] or not body["data"]:
                break
            page += 1
        calls.reverse()
        return calls

    def assert_called(
        self, method: str | None, route: str | None, times: int | None = None, json: Any = None
    ) -> list[dict[str, Any]]:
        """Fail unless `method route` (a template or an exact path) was called (exactly
        `times` times, if given) with a JSON body containing `json`; answers those calls.
        The failure lists the closest calls that were made."""
        from emulator.calls.assertions import called_failure, matches

        calls = self.requests()
        failure = called_failure(calls, method, route, times, json)
        if failure is not None:
            raise AssertionError(failure)
        return [c for c in calls if matches(c, method, route, json)]

    def assert_not_called(self, method: str | None, route: str | None) -> None:
        """Fail if `method route` (a template or an exact path) was called."""
        from emulator.calls.assertions import not_called_failure

        failure = not_called_failure(self.requests(), method, route)
        if failure is not None:
            raise AssertionError(failure)

    def clear_requests(self) -> None:
        self._ok(self.client.delete("/_emulator/requests"))

    def fault(self, method: str | None = None, route: str | None = None, **fault: Any) -> str:
        """Make matching /v1 calls fail or slow down; answers the fault's id. Keyword
        arguments are the API's fields: status, body, headers, latencyMs, drop, malformed,
        times, probability, seed, path, keyId, query, json. E.g.
        `emulator.fault("GET", "/v1/contact/{contactId}", status=500, times=1)`."""
        body = {"method": method, "route": route, **fault}
        body = {k: v for k, v in body.items() if v is not None}
        return str(self._ok(self.client.post("/_emulator/v1-faults", json=body))["id"])

    def faults(self) -> list[dict[str, Any]]:
        """The /v1 faults, with how often each matched and fired."""
        return list(self._ok(self.client.get("/_emulator/v1-faults"))["data"])

    def clear_faults(self, fault_id: str | None = None) -> None:
        """Remove one fault, or every one."""
        path = "/_emulator/v1-faults" + (f"/{fault_id}" if fault_id else "")
        self._ok(self.client.delete(path))

    def export(self, timeout: float = 60.0) -> dict[str, Any]:
        """Run an export to the configured CRM and answer its finished report."""
        started = self._ok(self.client.post("/_emulator/exports"))
        deadline = time.monotonic() + timeout
        while True:
            report: dict[str, Any] = self._ok(
                self.client.get(f"/_emulator/exports/{started['id']}")
            )
            if report["status"] != "running":
                return report
            if time.monotonic() > deadline:
                raise AssertionError(f"export {started['id']} still running after {timeout:.0f} s")
            time.sleep(0.02)


def _fixtures(config: pytest.Config) -> str | None:
    option = config.getoption("emulator_fixtures")
    if option:
        return str(Path(config.invocation_params.dir, option).resolve())
    ini = config.getini("emulator_fixtures")
    return str(Path(config.rootpath, ini).resolve()) if ini else None


def _reachable_or_exit(url: str) -> None:
    """Stop the whole session with one line when nothing answers at --emulator-url: otherwise
    every test errors with the same connection traceback."""
    import httpx  # deferred, as above

    try:
        httpx.get(f"{url.rstrip('/')}/_emulator/health", timeout=5)
    except httpx.TransportError as exc:
        pytest.exit(f"no emulator answers at {url} (--emulator-url / EMULATOR_URL): {exc}", 3)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on `path` between the processes of one run (xdist workers)."""
    import fcntl

    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextlib.contextmanager
def _shared_server(shared: Path, args: list[str], token: str | None) -> Iterator[EmulatorServer]:
    """The run's one server, shared by its xdist workers through `shared` (their common temp
    directory): the first starts it, the last one out stops it."""
    state, lock = shared / "emulator-server.json", shared / "emulator-server.lock"
    with _locked(lock):
        if state.is_file():
            known = json.loads(state.read_text())
            known["users"] += 1
            server = EmulatorServer(known["url"], token=token)
        else:
            server = EmulatorServer.start(args, token=token)
            assert server.process is not None
            known = {"url": server.url, "pid": server.process.pid, "users": 1}
        state.write_text(json.dumps(known))
    try:
        yield server
    finally:
        with _locked(lock):
            known = json.loads(state.read_text())
            known["users"] -= 1
            if known["users"] > 0:
                state.write_text(json.dumps(known))
            else:
                state.unlink()
                if server.process is not None:
                    server.stop()
                else:  # started by a worker that finished first
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(known["pid"], signal.SIGTERM)


@pytest.fixture(scope="session")
def emulator_server(
    pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[EmulatorServer]:
    """A running emulator for the whole session: started here unless --emulator-url is given
    (under pytest-xdist: one for the whole run, see the module's docstring)."""
    url = pytestconfig.getoption("emulator_url") or os.environ.get("EMULATOR_URL")
    token = (
        pytestconfig.getoption("emulator_control_token")
        or os.environ.get("EMULATOR_CONTROL_TOKEN")
        or None
    )
    if url:
        _reachable_or_exit(url)
        yield EmulatorServer(url, token=token)
        return
    args = shlex.split(pytestconfig.getoption("emulator_serve_args") or "")
    fixtures = _fixtures(pytestconfig)
    if fixtures:
        args = ["--fixtures", fixtures, *args]
    # pytest-xdist's own mark of its workers (an inherited PYTEST_XDIST_WORKER is not one: a
    # pytest run from inside a worker's test is a session of its own)
    worker = getattr(pytestconfig, "workerinput", None)
    if worker is not None and sys.platform != "win32":
        # the run's common temp directory, and the run's id: no other run meets this server
        shared = tmp_path_factory.getbasetemp().parent / f"emulator-{worker['testrunuid']}"
        shared.mkdir(exist_ok=True)
        with _shared_server(shared, args, token) as server:
            yield server
        return
    server = EmulatorServer.start(args, token=token)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def emulator(emulator_server: EmulatorServer, pytestconfig: pytest.Config) -> Iterator[Emulator]:
    """The test's own workspace on the session's emulator (removed after the test), or with
    --emulator-isolation=reset the whole emulator, reset to its fixtures before the test."""
    import httpx  # deferred, as above

    isolation = pytestconfig.getoption("emulator_isolation")
    with httpx.Client(
        base_url=emulator_server.url, timeout=30, headers=emulator_server.headers
    ) as control:
        if isolation == "reset":
            handle = Emulator(emulator_server, control)
            try:
                handle.reset()
                yield handle
            finally:
                handle.close()
            return
        created = _checked(control.post("/_emulator/workspaces")).json()
        try:
            with httpx.Client(
                base_url=created["baseUrl"], timeout=30, headers=emulator_server.headers
            ) as client:
                handle = Emulator(emulator_server, client, created["baseUrl"])
                handle.workspace_id = created["id"]
                try:
                    yield handle
                finally:
                    handle.close()
        finally:
            control.delete(f"/_emulator/workspaces/{created['id']}")
