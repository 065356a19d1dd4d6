"""Every shell and Python block of the README and the docs, run as a user would paste it.

Each block runs in a fresh temporary directory laid out like a checkout (links to the
repository's Makefile, package, fixtures and virtual environment), with its own HOME, under
`bash -e`. A comment on the line before a block's fence says how it runs:

- `<!-- example: server -->`: an `emulator serve` is started first;
- `<!-- example: continue -->`: the block runs after the page's previous block, in the same
  shell (variables and the server it started carry over);
- `<!-- example: pytest -->` (Python): the block is a test module, and must pass.

Port 8400 in a block is a free port the test picked (also as `PORT` for `make run`), so no
test depends on 8400 being free: a block names the port it uses. A command whose
line ends in `# -> TEXT` must print TEXT (`...` stands for anything), and a ```text block
marked `<!-- example: output -->` lists lines the block before it must print, in order.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.processes import ROOT, USER_PYTEST, free_port

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
RUN_LANGUAGES = {"sh", "bash", "python"}
FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[\w-]*)\s*$")
ANNOTATION = re.compile(r"^\s*<!-- example: (?P<mode>[\w ]+?) -->\s*$")
CHECK = re.compile(r"\s# -> (?P<text>.+)$")
# what a sandbox links to: enough of a checkout for `make` and the commands the docs show
CHECKOUT = ("Makefile", "pyproject.toml", "emulator", "fixtures", "scripts", "README.md", "docs")
# copied, not linked: blocks write there (the generator's --out fixtures/default)
COPIED = ("fixtures",)


@dataclass
class Block:
    page: Path
    line: int
    language: str
    text: str
    mode: str = ""
    output: str | None = None  # the ```text block marked as this block's output
    before: list[Block] = field(default_factory=list)  # blocks it continues

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def parse(page: Path) -> list[Block]:
    """The page's runnable blocks, with their modes, outputs and the blocks they continue."""
    lines = page.read_text().splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence or not fence["lang"]:
            i += 1
            continue
        indent = len(fence["indent"])
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
        body = "\n".join(line[indent:] for line in lines[i + 1 : end]) + "\n"
        previous = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        annotation = ANNOTATION.match(previous)
        mode = annotation["mode"] if annotation else ""
        if fence["lang"] == "text" and mode == "output":
            assert blocks, f"{page}:{i + 1}: an output block with no block before it"
            blocks[-1].output = body
        elif fence["lang"] in RUN_LANGUAGES:
            block = Block(page, i + 1, fence["lang"], body, mode)
            if mode == "continue":
                assert blocks, f"{page}:{i + 1}: a block that continues nothing"
                block.before = [*blocks[-1].before, blocks[-1]]
            blocks.append(block)
        i = end + 1
    return blocks


PARSED = [block for page in PAGES for block in parse(page)]
# a block that a later one continues runs as part of that one
LAST = [b for b in PARSED if not any(b in later.before for later in PARSED)]


def words(line: str) -> object:
    """A shell line as it runs: its words without a comment, and its check if it has one."""
    check = CHECK.search(line)
    try:
        return shlex.split(line, comments=True), check and check["text"]
    except ValueError:  # a quote that a later line closes
        return line


def what_runs(block: Block) -> tuple[object, ...]:
    """What running the block does: two blocks alike but for their comments (the README's
    install block and the Install page's) run once, under the first one's name."""
    chain = [*block.before, block]
    lines = tuple(words(line) for b in chain for line in [*b.text.splitlines(), "\n"])
    return (block.language, chain[0].mode, block.mode, lines, block.output)


BLOCKS: list[Block] = []
ALIKE: dict[str, list[str]] = {}  # a block run -> the later blocks it stands for
RUNS = [(block, what_runs(block)) for block in LAST]  # once each: this runs at collection
for block, runs in RUNS:
    first = next((b for b, r in RUNS if b in BLOCKS and r == runs), None)
    if first is None:
        BLOCKS.append(block)
    else:
        ALIKE.setdefault(first.name, []).append(block.name)


def instrument(text: str, checks: list[str]) -> str:
    """The shell text with markers around each command that ends in `# -> TEXT`."""
    out: list[str] = []
    logical = ""
    for line in text.splitlines():
        logical += line + "\n"
        if line.rstrip().endswith("\\"):
            continue
        check = CHECK.search(line)  # a check ends the last line of a command
        if check:
            n = len(checks)
            checks.append(check["text"].strip())
            out.append(f"echo '<<<check {n}'\n{logical}echo '>>>check {n}'\n")
        else:
            out.append(logical)
        logical = ""
    return "".join(out) + logical


def wildcard(shown: str) -> re.Pattern[str]:
    return re.compile(".*?".join(re.escape(part) for part in shown.split("...")), re.DOTALL)


def sandbox(tmp_path: Path, port: int) -> tuple[Path, dict[str, str]]:
    # `make` in a sandbox must find the environment installed, or it would install the
    # package again from the sandbox's path into the real .venv
    venv = Path(sys.prefix)
    stamps = [venv / ".installed-serve", venv / ".installed"]
    built = (ROOT / "pyproject.toml").stat().st_mtime
    if not all(s.exists() and s.stat().st_mtime >= built for s in stamps):
        pytest.fail(f"run the docs' examples from the environment `make venv` built ({venv})")
    work = tmp_path / "checkout"
    work.mkdir()
    for name in CHECKOUT:
        if name in COPIED:
            shutil.copytree(ROOT / name, work / name, symlinks=True)
        else:
            (work / name).symlink_to(ROOT / name)
    (work / ".venv").symlink_to(Path(sys.prefix))
    home = tmp_path / "home"
    home.mkdir()
    env = {
        **os.environ,
        "HOME": str(home),
        "PATH": f"{Path(sys.prefix) / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "PORT": str(port),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    return work, env


def run_shell(script: str, work: Path, env: dict[str, str], timeout: float) -> str:
    """Run a script in its own process group; once it ends, stop what it left running (a
    server started with `&`). Its output goes to a file: a background child keeps a pipe open."""
    log = work.parent / "output.txt"
    with log.open("w") as out:
        proc = subprocess.Popen(
            ["bash", "-e", "-c", script],
            cwd=work,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise AssertionError(
                f"still running after {timeout:.0f} s:\n{log.read_text()}"
            ) from None
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
    output = log.read_text()
    assert proc.returncode == 0, f"exit {proc.returncode}:\n{output}"
    return output


@pytest.mark.parametrize(
    "block", BLOCKS, ids=[" = ".join([b.name, *ALIKE.get(b.name, [])]) for b in BLOCKS]
)
def test_the_example_works_when_pasted(block: Block, tmp_path: Path) -> None:
    port = free_port()
    work, env = sandbox(tmp_path, port)
    blocks = [*block.before, block]
    if block.language == "python":
        assert block.mode == "pytest", f"{block.name}: say how a Python block runs"
        (work / "test_example.py").write_text(block.text)
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", *USER_PYTEST, "test_example.py"],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return
    if block.mode == "entry":
        check_entry_commands(block, work, env, port)
        return
    checks: list[str] = []
    script = "".join(instrument(b.text, checks) for b in blocks).replace("8400", str(port))
    if blocks[0].mode == "server":
        script = (
            f"{sys.prefix}/bin/emulator serve --port {port} >/dev/null 2>&1 &\n"
            f"{sys.prefix}/bin/emulator wait --url http://127.0.0.1:{port} --timeout 60 >/dev/null\n"
            + script
        )
    output = run_shell(script, work, env, timeout=600)
    for n, shown in enumerate(checks):
        said = output.split(f"<<<check {n}\n", 1)[1].split(f">>>check {n}\n", 1)[0]
        assert wildcard(shown.replace("8400", str(port))).search(said), (
            f"{block.name}: expected {shown!r} in the output of its command, got:\n{said}"
        )
    if block.output is not None:
        expected = [line for line in block.output.splitlines() if line.strip()]
        position = 0
        for line in expected:
            if line.strip() == "...":
                continue
            found = wildcard(line.strip()).search(output, position)
            assert found, f"{block.name}: shown output line {line!r} not printed:\n{output}"
            position = found.end()


def check_entry_commands(block: Block, work: Path, env: dict[str, str], port: int) -> None:
    """The README's first block: `make run` serves (started here, on a free port, until it
    answers), and `make test` is what CI runs (this very suite)."""
    commands = [line.split("#")[0].strip() for line in block.text.splitlines()]
    assert commands == ["make run", "make test"], commands
    assert "make test" in (ROOT / ".ci" / "run").read_text().splitlines()
    run_shell(
        f"make run >/dev/null 2>&1 &\n{sys.prefix}/bin/emulator wait --url http://127.0.0.1:{port} --timeout 120\n",
        work,
        env,
        timeout=180,
    )


def test_every_block_of_the_docs_is_run_or_is_data() -> None:
    """A block in a language the runner does not run must be data (JSON, YAML) or text."""
    for page in PAGES:
        for number, line in enumerate(page.read_text().splitlines(), 1):
            fence = FENCE.match(line)
            if fence and fence["lang"]:
                assert fence["lang"] in {*RUN_LANGUAGES, "json", "yaml", "text", "toml"}, (
                    f"{page.relative_to(ROOT)}:{number}: a ```{fence['lang']} block"
                )
