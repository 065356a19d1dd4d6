"""JSON Schemas of the scenario file and of each fixture file, generated from the very structs
that decode them (msgspec.json.schema), so an editor flags what the emulator would refuse.

The package ships them as emulator/schemas/NAME.json (`python -m emulator.file_schemas`
writes them; a test keeps them equal to what the structs generate) and the control API
serves them at /_emulator/schemas/NAME.json.
"""

from __future__ import annotations

import copy
import inspect
import json
import sys
from pathlib import Path
from typing import Any

import msgspec

from emulator.fixtures.loader import FILES

SCHEMA_DIR = Path(__file__).resolve().parent / "schemas"
DIALECT = "https://json-schema.org/draft/2020-12/schema"


def fixture_names() -> list[str]:
    """The schema name of each fixture file: its file name without `.json`."""
    return [name.removesuffix(".json") for name in FILES]


def names() -> list[str]:
    return ["scenario", *fixture_names()]


def fixture_schema(name: str) -> dict[str, Any]:
    """The schema of the fixture file `name`.json."""
    _, typ = FILES[f"{name}.json"]
    schema = msgspec.json.schema(typ)
    head = {"$schema": DIALECT, "title": f"{name}.json", "description": _FILE_NOTES[name]}
    return {**head, **schema}


_FILE_NOTES = {
    "api_keys": "The /v1 API keys and their scopes.",
    "users": "Platform users: the createdBy of campaigns, lists and saved views.",
    "identities": "Sender identities of campaigns.",
    "campaigns": "Campaigns, their sequences and the outcome rates of the simulation.",
    "companies": "Companies.",
    "contacts": "Contacts (streamed a block at a time: the file may be large).",
    "lists": "Contact and company lists.",
    "saved_views": "Saved views.",
    "conversations": "Conversations of a contact in a campaign, with their messages.",
    "webhooks": "Webhook subscriptions.",
    "actions_runs": "Runs of the actions API.",
    "tasks": "Platform tasks of campaigns' TASK steps (completed on the platform, or already in the CRM).",
    "connection": "The exporter's CRM connection.",
    "crm": "The reference CRM's settings, users and the records it already holds.",
    "clock": "The virtual clock's start (without this file: the wall time at start-up).",
}


def scenario_schema() -> dict[str, Any]:
    """The scenario file's schema. Inline fixture records overlay records by id: every field
    is optional there (`InlineContact` and so on), but no unknown one is allowed."""
    from emulator.scenarios import models as sm  # the scenario runner's models, on demand

    kinds = {attr: typ.__args__[0] for attr, typ in FILES.values() if attr in _INLINE}
    (top, *_), defs = msgspec.json.schema_components([sm.Scenario, *kinds.values()])
    fixtures = defs["ScenarioFixtures"]["properties"]
    for attr, typ in kinds.items():
        inline = copy.deepcopy(defs.pop(typ.__name__))
        inline.pop("required", None)
        inline["title"] = f"Inline{typ.__name__}"
        inline["description"] = (
            f"A record of {attr} laid over the fixture directory's record with the same "
            f"{'key' if attr == 'apiKeys' else 'id'} (only the fields given change), or added."
        )
        defs[inline["title"]] = inline
        fixtures[attr] = {
            "type": "array",
            "items": {"$ref": f"#/$defs/{inline['title']}"},
            "default": [],
        }
    for name in [n for n in defs if not _referenced(n, top, defs)]:
        del defs[name]
    head = {
        "$schema": DIALECT,
        "title": "scenario",
        "description": inspect.cleandoc(sm.Scenario.__doc__ or ""),
    }
    return {**head, **top, "$defs": dict(sorted(defs.items()))}


_INLINE = (
    "apiKeys",
    "users",
    "identities",
    "campaigns",
    "companies",
    "contacts",
    "lists",
    "savedViews",
    "conversations",
    "webhooks",
    "actionsRuns",
)


def _referenced(name: str, top: dict[str, Any], defs: dict[str, Any]) -> bool:
    ref = json.dumps(f"#/$defs/{name}")
    return ref in json.dumps(top) or any(
        ref in json.dumps(d) for other, d in defs.items() if other != name
    )


def schema(name: str) -> dict[str, Any]:
    """The schema named `name` (KeyError for no such schema)."""
    if name == "scenario":
        return scenario_schema()
    if name not in fixture_names():
        raise KeyError(name)
    return fixture_schema(name)


# ---- the field tables of docs/scenario-format.md and docs/fixture-format.md ----------------

INT64 = (-(2**63), 2**63 - 1)


def type_text(prop: dict[str, Any]) -> str:
    """A property's type in words: `string or null`, `array of Contact`, `integer 0..10`."""
    if "$ref" in prop:
        return f"`{prop['$ref'].rsplit('/', 1)[-1]}`"
    if "anyOf" in prop:
        return " or ".join(type_text(p) for p in prop["anyOf"])
    if "enum" in prop:
        return "one of " + ", ".join(f"`{json.dumps(v)}`" for v in prop["enum"])
    kind = prop.get("type")
    if kind == "array":
        return f"array of {type_text(prop.get('items', {}))}"
    if kind == "object":
        values = prop.get("additionalProperties")
        return "object" if not values else f"object of {type_text(values)}"
    if kind == "integer":
        low, high = prop.get("minimum"), prop.get("maximum")
        if (low, high) == INT64:
            return "integer (64-bit)"
        if low is not None and high == INT64[1]:
            return f"integer >= {low}"
        if low is not None or high is not None:
            return f"integer {'' if low is None else low}..{'' if high is None else high}"
        return "integer"
    if kind == "number" and "exclusiveMinimum" in prop:
        return f"number > {prop['exclusiveMinimum']}"
    if kind == "string" and "pattern" in prop:
        return "string (pattern)"
    if kind is None:
        return "any JSON"
    return str(kind)


def field_rows(definition: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(field, type, default) of each property of a struct's schema, in declaration order;
    the default is `required` for a required field."""
    required = set(definition.get("required", []))
    rows = []
    for name, prop in definition.get("properties", {}).items():
        if name in required:
            default = "required"
        elif "default" in prop:
            default = f"`{json.dumps(prop['default'])}`"
        else:
            default = "—"
        rows.append((name, type_text(prop), default))
    return rows


def definitions() -> dict[str, dict[str, Any]]:
    """Every struct of every schema by name (a fixture struct and its inline twin apart)."""
    found: dict[str, dict[str, Any]] = {}
    for name in names():
        found.update(schema(name).get("$defs", {}))
    return found


def render(value: dict[str, Any]) -> bytes:
    return json.dumps(_tidy(value), indent=2, ensure_ascii=False).encode() + b"\n"


def _tidy(value: Any) -> Any:
    """Descriptions without the docstrings' indentation."""
    if isinstance(value, dict):
        return {
            k: inspect.cleandoc(v) if k == "description" and isinstance(v, str) else _tidy(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_tidy(v) for v in value]
    return value


def shipped(name: str) -> bytes | None:
    """The shipped schema file `name`, None when there is none."""
    if name not in names():
        return None
    try:
        return (SCHEMA_DIR / f"{name}.json").read_bytes()
    except OSError:
        return None


def write(directory: Path = SCHEMA_DIR) -> list[Path]:
    """Write every schema into `directory`; answers the files written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name in names():
        path = directory / f"{name}.json"
        path.write_bytes(render(schema(name)))
        written.append(path)
    return written


if __name__ == "__main__":
    for path in write(Path(sys.argv[1]) if len(sys.argv) > 1 else SCHEMA_DIR):
        print(path)
