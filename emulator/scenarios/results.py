"""A replay's results: the totals, the exit code and the lines people read."""

from __future__ import annotations

from emulator.scenarios.models import ReplayResult, ScenarioResult


def summarise(results: list[ScenarioResult], seconds: float) -> ReplayResult:
    return ReplayResult(
        results=results,
        passed=sum(r.outcome == "pass" for r in results),
        failed=sum(r.outcome == "fail" for r in results),
        errors=sum(r.outcome == "error" for r in results),
        seconds=round(seconds or sum(r.seconds for r in results), 3),
    )


def exit_code(result: ReplayResult) -> int:
    """0 all passed, 2 a file could not be read or built, else 1."""
    if result.errors:
        return 2
    return 1 if result.failed or not result.results else 0


def describe(res: ScenarioResult) -> str:
    """One line per scenario; a failure adds where, why and expected/actual side by side."""
    label = {"pass": "PASS", "fail": "FAIL", "error": "ERROR"}[res.outcome]
    line = f"{label:5} {res.name}  ({res.seconds:.2f} s)"
    f = res.failure
    if f is None:
        return line
    if res.outcome == "error":
        return f"{line}\n      {f.message}"
    lines = [line, f"      at {f.at}: {f.message}"]
    if f.expected or f.actual:
        lines += [f"      expected: {f.expected}", f"      actual:   {f.actual}"]
    return "\n".join(lines)


def summary(result: ReplayResult) -> str:
    total = len(result.results)
    extra = f", {result.errors} unreadable" if result.errors else ""
    return f"{result.passed}/{total} scenarios passed, {result.failed} failed{extra} in {result.seconds:.2f} s"
