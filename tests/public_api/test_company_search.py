"""POST /v1/companies/search: the condition parser alone, and the endpoint against an oracle.

The oracle below evaluates conditions in plain Python over the fixtures, independently of
the SQL the emulator builds, so a Hypothesis run over random include/exclude mixes checks
every condition kind, NULL handling and the include/exclude combination at once.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emulator.app import create_app
from emulator.errors import BadRequest
from emulator.fixtures.loader import DEFAULT_FIXTURES
from emulator.fixtures.models import Company as CompanyFixture
from emulator.public_api.company_search import KEYS, parse_conditions
from tests.conftest import ALL, make_settings, open_client
from tests.public_api.paging import fixtures, walk

pytestmark = pytest.mark.anyio

URL = "/v1/companies/search"
TEXT = [
    "name",
    "domain",
    "website",
    "companyNetworkUrl",
    "industry",
    "rangeOfEmployees",
    "yearfounded",
    "description",
    "country",
    "city",
    "streetAddress",
    "phoneNumber",
    "companyEmail",
    "revenueRange",
    "companyCRMId",
]
NUMERIC = ["numberOfEmployees", "openJobPositions", "leadsCount"]
BOOLEAN = ["hiringOnNetwork", "isCompanyInCRM"]
TIME = ["createdAt", "updatedAt"]


# ---- the oracle -------------------------------------------------------------------------


@cache
def leads() -> Counter[int]:
    return Counter(c.companyId for c in fixtures().contacts if c.companyId is not None)


def in_campaigns(ids: list[int]) -> set[int]:
    return {
        c.companyId
        for c in fixtures().contacts
        if c.companyId is not None and set(c.campaignIds) & set(ids)
    }


def in_lists(ids: list[int]) -> set[int]:
    return {
        m for li in fixtures().lists if li.id in ids and li.type == "COMPANIES" for m in li.members
    }


def fold(text: str) -> str:
    return text.casefold()


def field(c: CompanyFixture, key: str) -> Any:
    if key == "leadsCount":
        return leads()[c.id]
    if key == "isCompanyInCRM":
        return c.companyCRMId is not None
    return getattr(c, key)


def constrains(key: str, value: Any) -> bool:
    if key in NUMERIC:
        return value != ["", ""]
    if key in TIME:
        return any(value.get(k) not in (None, "") for k in ("startDate", "endDate"))
    return value != []


def end_bound(text: str) -> str:
    return text + "T23:59:59.999Z" if len(text) == 10 else text


def meets(c: CompanyFixture, key: str, value: Any) -> bool:
    """Whether `c` meets one condition; a null field meets none."""
    if key == "id":
        return c.id in [int(v) for v in value]
    if key == "campaigns":
        return c.id in in_campaigns([int(v) for v in value])
    if key == "companyGroup":
        return c.id in in_lists([int(v) for v in value])
    v = field(c, key)
    if v is None:
        return False
    if key in TEXT:
        return fold(v) in {fold(str(x)) for x in value}
    if key in NUMERIC:
        low, high = value
        return (low == "" or v >= float(low)) and (high == "" or v <= float(high))
    if key in BOOLEAN:
        return bool(v) is value[0]
    start, end = value.get("startDate"), value.get("endDate")
    return (not start or v >= (start if len(start) > 10 else start + "T00:00:00.000Z")) and (
        not end or v <= end_bound(end)
    )


def expected(
    include: dict[str, Any], exclude: dict[str, Any], search: str | None = None
) -> list[int]:
    out = []
    for c in fixtures().companies:
        if search and not any(fold(search.strip()) in fold(x or "") for x in (c.name, c.domain)):
            continue
        if all(meets(c, k, v) for k, v in include.items() if constrains(k, v)) and not any(
            meets(c, k, v) for k, v in exclude.items() if constrains(k, v)
        ):
            out.append(c.id)
    return sorted(out)


# ---- strategies -------------------------------------------------------------------------


def cased(text: str) -> st.SearchStrategy[str]:
    return st.sampled_from([text, text.upper(), text.lower(), text.title()])


@st.composite
def condition(draw: st.DrawFn) -> tuple[str, Any]:
    fx = fixtures().companies
    key = draw(st.sampled_from(sorted(KEYS)))
    if key in TEXT:
        seen = sorted({getattr(c, key) for c in fx if getattr(c, key) is not None}) or ["none"]
        values = draw(
            st.lists(st.sampled_from(seen).flatmap(cased) | st.text(max_size=5), max_size=3)
        )
        return key, values
    if key in NUMERIC:
        seen = sorted({field(c, key) for c in fx if field(c, key) is not None})
        ends = st.just("") | st.integers(0, 3000).map(str) | st.sampled_from(seen).map(str)
        return key, [draw(ends), draw(ends)]
    if key in BOOLEAN:
        return key, [draw(st.booleans())]
    if key in TIME:
        stamps = sorted(getattr(c, key) for c in fx)
        moment = st.sampled_from(stamps) | st.sampled_from(stamps).map(lambda s: s[:10])
        bounds = draw(st.fixed_dictionaries({}, optional={"startDate": moment, "endDate": moment}))
        return key, bounds
    top = {"id": 60, "campaigns": 10, "companyGroup": 9}[key]
    return key, draw(st.lists(st.integers(1, top), max_size=4))


conditions = st.lists(condition(), max_size=3).map(dict)


async def search(client: httpx.AsyncClient, body: dict[str, Any]) -> httpx.Response:
    return await client.post(URL, json=body, headers=ALL)


# ---- through HTTP -----------------------------------------------------------------------


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(include=conditions, exclude=conditions)
async def test_search_agrees_with_the_oracle(
    shared_client: httpx.AsyncClient, include: dict[str, Any], exclude: dict[str, Any]
) -> None:
    response = await search(
        shared_client, {"include": include, "exclude": exclude, "pageSize": 100}
    )
    assert response.status_code == 200, response.text
    doc = response.json()
    want = expected(include, exclude)
    assert [c["id"] for c in doc["data"]] == want
    assert doc["meta"] == {"page": 1, "pageSize": 100, "total": len(want)}


SEARCHES: list[dict[str, Any]] = [
    {},
    {"search": "co"},
    {"include": {"industry": ["Travel", "MEDIA", "fintech"]}},
    {"exclude": {"isCompanyInCRM": [True]}, "search": "a"},
    {"include": {"leadsCount": ["3", ""]}, "exclude": {"numberOfEmployees": ["", "100"]}},
]


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(page_size=st.integers(1, 100), which=st.integers(0, len(SEARCHES) - 1))
async def test_walking_all_pages_yields_each_match_once_in_order(
    shared_client: httpx.AsyncClient, page_size: int, which: int
) -> None:
    body = SEARCHES[which]
    ids, total = await walk(shared_client, URL, page_size, body=body)
    want = expected(body.get("include", {}), body.get("exclude", {}), body.get("search"))
    assert ids == want
    assert total == len(want)


async def test_special_keys(shared_client: httpx.AsyncClient) -> None:
    cases: list[dict[str, Any]] = [
        {"id": [3, "4", 999]},
        {"campaigns": [1, 2]},
        {"companyGroup": [5, 6]},
        {"companyGroup": [1]},
        {"leadsCount": ["0", "0"]},
        {"leadsCount": ["0", ""]},
        {"leadsCount": ["", "-1"]},
        {"leadsCount": ["", "2"]},
        {"leadsCount": ["-3", "1.5"]},
        {"leadsCount": ["2", "4"]},
        {"isCompanyInCRM": [False]},
        {"city": ["MÁLAGA", "x"]},
        {"streetAddress": ["175 RUA DA CONSOLAÇÃO"]},
        {"numberOfEmployees": ["100", "1000"]},
        {"createdAt": {"startDate": "2026-03-01", "endDate": "2026-06-30"}},
    ]
    for include in cases:
        for side in ("include", "exclude"):
            response = await search(shared_client, {side: include, "pageSize": 100})
            assert response.status_code == 200
            ids = [c["id"] for c in response.json()["data"]]
            want = expected(include, {}) if side == "include" else expected({}, include)
            assert ids == want, (side, include)
    # the cases are not vacuous
    assert expected({"campaigns": [1]}, {}) and expected({"companyGroup": [5]}, {})
    assert expected({"leadsCount": ["0", "0"]}, {})
    assert expected({"city": ["MÁLAGA"]}, {})  # upper-case non-ASCII in the condition
    assert expected({"companyGroup": [1]}, {}) == []  # a CONTACTS list holds no companies


async def test_search_term_and_paging(shared_client: httpx.AsyncClient) -> None:
    response = await search(shared_client, {"search": "  CORAL ", "page": "1", "pageSize": "1"})
    assert response.status_code == 200
    doc = response.json()
    assert doc["meta"] == {"page": 1, "pageSize": 1, "total": len(expected({}, {}, "coral"))}
    assert len(doc["data"]) == 1


async def test_search_sees_new_companies(client: httpx.AsyncClient) -> None:
    created = await client.post("/v1/company", json={"name": "Zeta Search Co"}, headers=ALL)
    response = await search(client, {"include": {"name": ["zeta search co"]}})
    assert [c["id"] for c in response.json()["data"]] == [created.json()["data"]["id"]]


async def test_text_conditions_fold_non_ascii_case(client: httpx.AsyncClient) -> None:
    created = await client.post("/v1/company", json={"name": "ÉCOLE ÜBER STRASSE"}, headers=ALL)
    new_id = created.json()["data"]["id"]
    for name in ("école über straße", "ÉCOLE ÜBER STRASSE", "École Über Strasse"):
        response = await search(client, {"include": {"name": [name]}})
        assert [c["id"] for c in response.json()["data"]] == [new_id], name
        excluded = await search(client, {"exclude": {"name": [name]}, "pageSize": 100})
        assert new_id not in [c["id"] for c in excluded.json()["data"]]
    listed = await client.get("/v1/companies", params={"search": "ÜBER STRAßE"}, headers=ALL)
    assert [c["id"] for c in listed.json()["data"]] == [new_id]


async def test_an_indexed_text_condition_folds_non_ascii_case(tmp_path: Path) -> None:
    """industry is read through its index (its distinct spellings folded): the same rule."""
    shutil.copytree(DEFAULT_FIXTURES, tmp_path / "fx")
    companies = json.loads((tmp_path / "fx" / "companies.json").read_text())
    companies[0]["industry"] = "MÉDIAS GROẞ"
    companies[1]["industry"] = None
    (tmp_path / "fx" / "companies.json").write_text(json.dumps(companies))
    odd = companies[0]["id"]
    async with open_client(create_app(make_settings(fixtures=str(tmp_path / "fx")))) as client:
        for industry in ("médias gross", "Médias Groß", "MÉDIAS GROSS"):
            found = await search(client, {"include": {"industry": [industry, "Nothing"]}})
            assert [c["id"] for c in found.json()["data"]] == [odd], industry
            excluded = await search(client, {"exclude": {"industry": [industry]}, "pageSize": 100})
            # only that one: a company without an industry meets no condition on it
            assert excluded.json()["meta"]["total"] == len(companies) - 1
            assert odd not in [c["id"] for c in excluded.json()["data"]]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"page": 0}, "page"),
        ({"page": -5}, "page"),
        ({"page": "abc"}, "page"),
        ({"page": 1.5}, "page"),
        ({"page": True}, "page"),
        ({"page": None}, "page"),
        ({"page": 10**30}, "page"),
        ({"pageSize": 0}, "pageSize"),
        ({"pageSize": 101}, "pageSize"),
        ({"pageSize": [25]}, "pageSize"),
        ({"search": 5}, "search"),
        ({"include": []}, "include"),
        ({"exclude": "x"}, "exclude"),
        ({"include": {"nope": ["x"]}}, "include.nope"),
        ({"exclude": {"companyCRMUrl": ["x"]}}, "exclude.companyCRMUrl"),
        ({"include": {"smartFieldExplanations": {}}}, "include.smartFieldExplanations"),
        ({"include": {"industry": "Software"}}, "include.industry"),
        ({"include": {"industry": [None]}}, "include.industry"),
        ({"include": {"industry": [["Software"]]}}, "include.industry"),
        ({"include": {"industry": ["x"] * 1001}}, "include.industry"),
        ({"include": {"numberOfEmployees": ["1"]}}, "include.numberOfEmployees"),
        ({"include": {"numberOfEmployees": ["1", "2", "3"]}}, "include.numberOfEmployees"),
        ({"include": {"numberOfEmployees": ["one", "2"]}}, "include.numberOfEmployees"),
        ({"include": {"leadsCount": ["nan", ""]}}, "include.leadsCount"),
        ({"include": {"leadsCount": {"min": 1}}}, "include.leadsCount"),
        ({"include": {"openJobPositions": [True, ""]}}, "include.openJobPositions"),
        ({"include": {"hiringOnNetwork": True}}, "include.hiringOnNetwork"),
        ({"include": {"hiringOnNetwork": []}}, "include.hiringOnNetwork"),
        ({"include": {"isCompanyInCRM": ["true"]}}, "include.isCompanyInCRM"),
        ({"include": {"isCompanyInCRM": [True, False]}}, "include.isCompanyInCRM"),
        ({"include": {"createdAt": ["2024-01-01", ""]}}, "include.createdAt"),
        ({"include": {"createdAt": {"from": "2024-01-01"}}}, "include.createdAt"),
        ({"include": {"createdAt": {"startDate": "yesterday"}}}, "include.createdAt.startDate"),
        ({"include": {"updatedAt": {"endDate": 20240101}}}, "include.updatedAt.endDate"),
        (
            {"include": {"updatedAt": {"endDate": "0001-01-01T00:00:00+05:00"}}},
            "include.updatedAt.endDate",
        ),
        ({"include": {"id": ["a"]}}, "include.id"),
        ({"include": {"id": [1.5]}}, "include.id"),
        ({"include": {"campaigns": 1}}, "include.campaigns"),
        ({"include": {"companyGroup": [-1]}}, "include.companyGroup"),
        ({"include": {"id": [2**70]}}, "include.id"),
    ],
)
async def test_bad_search_bodies_are_400_naming_the_key(
    shared_client: httpx.AsyncClient, body: dict[str, Any], field: str
) -> None:
    response = await search(shared_client, body)
    assert response.status_code == 400, response.text
    error = response.json()
    assert error["status"] == "error"
    assert error["errors"][0]["field"] == field


@pytest.mark.parametrize("content", [b"", b"{", b"[]", b"\xff", b'{"search": "\\ud83d"}', b"1e999"])
async def test_malformed_search_bodies_are_400(
    shared_client: httpx.AsyncClient, content: bytes
) -> None:
    response = await shared_client.post(
        URL, content=content, headers={**ALL, "content-type": "application/json"}
    )
    assert response.status_code == 400


# ---- the parser alone -------------------------------------------------------------------


def test_empty_conditions_constrain_nothing() -> None:
    conds = parse_conditions(
        {"industry": [], "leadsCount": ["", ""], "createdAt": {}, "id": []},
        {"industry": [], "numberOfEmployees": ["", ""], "updatedAt": {"endDate": ""}},
    )
    assert (conds.sql, conds.params) == ("", [])


def test_exclude_treats_null_as_not_met() -> None:
    conds = parse_conditions({}, {"country": ["Software"]})
    assert conds.sql == (
        "NOT IFNULL((lower(country) IN (?) OR (length(CAST((country) AS BLOB))"
        " != length(country) AND casefold(country) IN (?))), 0)"
    )
    assert conds.folds
    assert conds.params == ["software", "software"]


def test_date_only_end_covers_the_day() -> None:
    conds = parse_conditions(
        {"updatedAt": {"startDate": "2024-01-01", "endDate": "2024-01-31"}}, {}
    )
    assert conds.params == ["2024-01-01T00:00:00.000Z", "2024-01-31T23:59:59.999Z"]


def test_unknown_key_names_side_and_key() -> None:
    with pytest.raises(BadRequest) as caught:
        parse_conditions({}, {"bogus": []})
    assert caught.value.errors is not None
    assert caught.value.errors[0].field == "exclude.bogus"


@given(
    values=st.lists(st.text(max_size=20), min_size=1, max_size=5),
    key=st.sampled_from(TEXT),
    ends=st.lists(st.integers(-(10**6), 10**6).map(str), min_size=2, max_size=2),
)
def test_values_are_bound_never_interpolated(values: list[str], key: str, ends: list[str]) -> None:
    """The SQL depends only on the shape of the conditions, never on the values."""
    conds = parse_conditions({key: values, "numberOfEmployees": ends}, {key: values})
    same_shape = parse_conditions(
        {key: ["x"] * len(values), "numberOfEmployees": ["0", "0"]}, {key: ["x"] * len(values)}
    )
    assert conds.sql == same_shape.sql
    assert conds.sql.count("?") == len(conds.params) == 4 * len(values) + 2
