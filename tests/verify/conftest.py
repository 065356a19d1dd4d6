"""Run `verify` in-process against an ASGI CRM (the strange CRM or the reference one)."""

from __future__ import annotations

from typing import Any

import httpx

from emulator.verify.deep_report import DeepOptions
from emulator.verify.report import Report
from emulator.verify.runner import Prober, verify
from tests.verify.strange_crm import HEADER, KEY, StrangeCrm


async def verify_app(
    app: Any,
    base: str,
    key: str,
    header: str = "X-API-Key",
    run_id: str | None = None,
    deep: DeepOptions | None = None,
) -> Report:
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    return await verify(Prober(base, key, header, transport=transport), run_id=run_id, deep=deep)


async def verify_strange(
    breaks: set[str] | frozenset[str] = frozenset(), deep: DeepOptions | None = None
) -> Report:
    return await verify_app(StrangeCrm(breaks).app, "http://strange", KEY, HEADER, deep=deep)


def failing(report: Report) -> set[tuple[str, str]]:
    """(check id, endpoint) of every failing check."""
    return {(c.id, c.endpoint) for c in report.checks if c.outcome == "fail"}


def outcomes(report: Report) -> dict[str, str]:
    return {c.id: c.outcome for c in report.checks}
