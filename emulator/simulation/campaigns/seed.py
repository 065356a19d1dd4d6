"""Seeder: members of the fixtures' ACTIVE campaigns start their sequences at the clock start."""

from __future__ import annotations

import sqlite3

from emulator.clock import wall_now
from emulator.fixtures.models import FixtureSet
from emulator.simulation.campaigns.scheduling import load_plans, schedule
from emulator.simulation.campaigns.timeline import parse_ms, to_ms


def seed(conn: sqlite3.Connection, fx: FixtureSet) -> None:
    """Runs after the platform seeder (it reads the campaigns and members it wrote)."""
    anchor = parse_ms(fx.clockStart) if fx.clockStart else to_ms(wall_now())
    for plan in load_plans(conn, "WHERE status = 'ACTIVE'").values():
        schedule(conn, plan, anchor)
