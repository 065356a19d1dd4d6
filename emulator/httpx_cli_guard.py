"""Import for its effect: `import httpx` leaves its command-line client unimported.

httpx's package imports its `httpx` command (`httpx._main`) whenever rich, pygments and click
are installed, and with them rich's console, progress bars and syntax highlighting: ~0.06 s of
CPU at every start of `emulator serve` (an eighth of a start on the default fixtures), for a
command the emulator never runs. A stand-in module named `httpx._main` gives httpx a `main`
that imports the real one when called, so `httpx.main` still runs the client; everything
else of httpx is untouched. Set only when httpx is not imported yet.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

_NAME = "httpx._main"


def _main(*args: Any, **kwargs: Any) -> Any:
    """httpx's command-line client, imported now."""
    if sys.modules.get(_NAME) is _stand_in:
        del sys.modules[_NAME]
    return importlib.import_module(_NAME).main(*args, **kwargs)


_stand_in = types.ModuleType(_NAME, "imports httpx's command-line client when it is run")
_stand_in.main = _main  # type: ignore[attr-defined]

if "httpx" not in sys.modules:
    sys.modules.setdefault(_NAME, _stand_in)
