"""docs/scenario-format.md and docs/fixture-format.md stay in step with the JSON Schemas:
every struct of every schema has its table, each table lists exactly the struct's fields with
the schema's type and default, and no table documents a struct or field the schemas lack."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from emulator import file_schemas

ROOT = Path(__file__).resolve().parents[1]
DOCS = {
    "scenario": ROOT / "docs" / "scenario-format.md",
    "fixture": ROOT / "docs" / "fixture-format.md",
}
HEADING = re.compile(r"^### `(\w+)`$")
ROW = re.compile(r"^\| `([^`]+)` \| (.*?) \| (.*?) \| (.*) \|$")

Table = list[tuple[str, str, str, str]]


def tables(path: Path) -> dict[str, Table]:
    """Struct name -> its table's rows (field, type, default, meaning), as the doc has them."""
    found: dict[str, Table] = {}
    current: str | None = None
    for line in path.read_text().splitlines():
        heading = HEADING.match(line)
        if heading:
            current = heading.group(1)
            assert current not in found, f"{path.name}: {current} documented twice"
            found[current] = []
        elif line.startswith("#"):
            current = None
        elif current is not None and (row := ROW.match(line)):
            field, kind, default, meaning = row.groups()
            found[current].append((field, kind.replace("\\|", "|"), default, meaning))
    return found


DOC_TABLES = {name: tables(path) for name, path in DOCS.items()}
DEFINITIONS = file_schemas.definitions()
DOCUMENTED = {struct: rows for doc in DOC_TABLES.values() for struct, rows in doc.items()}
STRUCTS = sorted(n for n in DEFINITIONS if not n.startswith("Inline"))


def test_no_struct_is_documented_in_both_files() -> None:
    assert not DOC_TABLES["scenario"].keys() & DOC_TABLES["fixture"].keys()


@pytest.mark.parametrize("struct", STRUCTS)
def test_each_struct_has_a_table_with_exactly_its_fields(struct: str) -> None:
    assert struct in DOCUMENTED, f"{struct} has no `### {struct}` table in docs/"
    rows = DOCUMENTED[struct]
    assert [(f, t, d) for f, t, d, _ in rows] == file_schemas.field_rows(DEFINITIONS[struct])
    assert all(meaning.strip() for *_, meaning in rows), f"{struct}: a field without meaning"


def test_no_table_documents_what_the_schemas_lack() -> None:
    assert sorted(DOCUMENTED) == STRUCTS


def test_inline_records_are_the_fixture_records_with_every_field_optional() -> None:
    text = DOCS["scenario"].read_text()
    for name, definition in DEFINITIONS.items():
        if not name.startswith("Inline"):
            continue
        base = name.removeprefix("Inline")
        assert f"`{name}`" in text and f"(fixture-format.md#{base.lower()})" in text, name
        assert list(definition["properties"]) == [f for f, *_ in DOCUMENTED[base]]
        assert "required" not in definition


def test_the_fixture_doc_names_every_file_and_its_schema() -> None:
    text = DOCS["fixture"].read_text()
    for name in file_schemas.fixture_names():
        assert f"| `{name}.json` |" in text and f"| `{name}` |" in text, name


def test_a_field_missing_from_a_table_is_noticed(tmp_path: Path) -> None:
    """The comparison can fail: a doc without one row no longer matches."""
    doc = tmp_path / "doc.md"
    text = DOCS["fixture"].read_text()
    doc.write_text(text.replace("| `messageSync` |", "| `messageSynch` |"))
    assert [(f, t, d) for f, t, d, _ in tables(doc)["Campaign"]] != file_schemas.field_rows(
        DEFINITIONS["Campaign"]
    )
