"""Full-stack emulator of an outreach platform: public API, reference CRM and exporter."""

import emulator.httpx_cli_guard  # for its effect, before any module imports httpx
import emulator.sniffio_guard  # noqa: F401 (for its effect, before any module sends through httpx)

__version__ = "0.1.0"
