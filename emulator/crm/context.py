"""The CRM's in-memory state beside the store: cached settings and fault counters."""

from __future__ import annotations

from typing import TYPE_CHECKING

from emulator.crm import service
from emulator.crm.faults import FaultCounter
from emulator.fixtures.models import CrmSettings
from emulator.state import SnapshotPart
from emulator.store.db import Store

if TYPE_CHECKING:
    from emulator.state import Emulator


class CrmContext:
    """Settings are read from the store once and kept until replaced or reset."""

    def __init__(self, emulator: Emulator) -> None:
        self.emulator = emulator
        self.faults = FaultCounter()
        self._settings: CrmSettings | None = None
        emulator.on_reset.append(self.forget)
        emulator.snapshot_parts["crm.faults"] = SnapshotPart(self.faults.counts, self.faults.load)

    @property
    def db(self) -> Store:
        return self.emulator.db

    def now(self) -> str:
        return self.emulator.clock.now_iso()

    async def settings(self) -> CrmSettings:
        if self._settings is None:
            self._settings = await service.load_settings(self.db)
        return self._settings

    def cached_settings(self) -> CrmSettings | None:
        """The settings if already read (no store access: for the journal of calls)."""
        return self._settings

    async def replace_settings(self, settings: CrmSettings) -> None:
        await service.save_settings(self.db, settings)
        self._settings = settings
        self.faults.clear()

    def forget(self) -> None:
        """After a reset the store holds other settings, and every call counts from 1 again."""
        self._settings = None
        self.faults.clear()
