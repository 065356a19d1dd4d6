"""Import for its effect: httpcore's `import sniffio` fails fast when sniffio is absent.

httpcore tries `import sniffio` on every request and lock; when sniffio is not installed each
failed import walks sys.path again (a third of the exporter's CPU, and of a webhook
delivery's). A None entry in sys.modules makes that ImportError instant; it changes nothing
else, the module is absent. The package imports it, so every command and every module that
sends through httpx (exporter, deliveries, verify, scenarios) has it.
"""

from __future__ import annotations

import importlib.util
import sys

if importlib.util.find_spec("sniffio") is None:
    sys.modules.setdefault("sniffio", None)  # type: ignore[arg-type]
