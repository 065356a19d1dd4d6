"""A workspace's emulator state with the fixtures' seeders, and nothing of the web server: a
cold start seeds its image with it before the server's modules are imported (meanwhile, where
the seeding lets go of the GIL), and the seeding process never imports them."""

from __future__ import annotations

from emulator.crm.seed import seed as seed_crm
from emulator.fixtures.models import FixtureSet
from emulator.platform.seed import MemberHistories, seed_contacts, seed_records
from emulator.settings import Settings
from emulator.simulation.campaigns.seed import seed as seed_simulation
from emulator.state import Emulator, Seeding


def emulator_with_seeders(settings: Settings, fixtures: FixtureSet | None = None) -> Emulator:
    """The state of one workspace, its store not open yet, seeded (when it is) by every
    seeder in order."""
    histories = MemberHistories()  # the memberships' histories: prepared, then written
    return Emulator(
        settings,
        seeders=Seeding(
            before=[seed_records, histories.prepare, seed_crm],
            after=[seed_contacts, histories.write, seed_simulation],
        ),
        fixtures=fixtures,
    )
