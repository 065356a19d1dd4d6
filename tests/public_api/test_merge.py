"""Merge matching of POST /v1/contact and POST /v1/company (decisions.md §2), as properties.

Every example creates its own records (a fresh number in the e-mail, URL and domain), so one
app serves the whole module and examples never see each other's records. Hypothesis draws
only spellings (styles), never the records, so its data does not depend on that number.
"""

from __future__ import annotations

import itertools
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import ALL

pytestmark = pytest.mark.anyio

_numbers = itertools.count(1)
SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


async def post(client: httpx.AsyncClient, path: str, body: dict[str, Any]) -> tuple[int, int]:
    """(status, id) of a create-or-merge; "merged" exactly when the answer is 200."""
    response = await client.post(path, json=body, headers=ALL)
    assert response.status_code in (200, 201), response.text
    assert (response.json()["message"] == "merged") is (response.status_code == 200)
    return response.status_code, response.json()["data"]["id"]


# ---- spellings --------------------------------------------------------------------------

Cases = list[bool]
cases = st.lists(st.booleans(), min_size=1, max_size=8)


def recase(text: str, flips: Cases) -> str:
    """Upper-case the letters whose (cyclic) flip is set."""
    return "".join(ch.upper() if flips[i % len(flips)] else ch for i, ch in enumerate(text))


UrlStyle = tuple[str, str, str, str, Cases]
url_styles = st.tuples(
    st.sampled_from(["https://", "http://", ""]),  # scheme
    st.sampled_from(["www.", ""]),  # www.
    st.sampled_from(["", "/"]),  # trailing slash
    st.sampled_from(["", "?trk=profile", "?a=1&b=2", "#top"]),  # query or fragment
    cases,
)


def url(host_path: str, style: UrlStyle) -> str:
    scheme, www, slash, query, flips = style
    return recase(f"{scheme}{www}{host_path}{slash}{query}", flips)


DomainStyle = tuple[str, str, str, Cases]
domain_styles = st.tuples(
    st.sampled_from(["https://", "http://", ""]),
    st.sampled_from(["www.", ""]),
    st.sampled_from(["", "/", "/about", "/a/b?c=d", ":443/x"]),
    cases,
)


def domain(name: str, style: DomainStyle) -> str:
    scheme, www, path, flips = style
    return recase(f"{scheme}{www}{name}{path}", flips)


# ---- contacts ---------------------------------------------------------------------------


@SETTINGS
@given(
    flips=cases, other=st.sampled_from(["{n}x@example.com", "{n}@example.org", "x{n}@example.com"])
)
async def test_contact_email_case_variants_merge(
    shared_client: httpx.AsyncClient, flips: Cases, other: str
) -> None:
    n = next(_numbers)
    email = f"merge.user{n}@example.com"
    status, first = await post(shared_client, "/v1/contact", {"professionalEmail": email})
    assert status == 201
    variant = recase(email, flips)
    status, again = await post(
        shared_client, "/v1/contact", {"professionalEmail": variant, "jobTitle": f"T{n}"}
    )
    assert (status, again) == (200, first)
    different = "merge.user" + other.format(n=n)
    status, third = await post(shared_client, "/v1/contact", {"professionalEmail": different})
    assert status == 201
    assert third != first


@SETTINGS
@given(
    stored=url_styles,
    variant=url_styles,
    different=url_styles,
    other=st.sampled_from(
        [
            "/in/merge-person-{n}0",
            "/in/merge-person-{n}/more",
            "/company/merge-person-{n}",
            "/in/merge-person-{n}-b",
        ]
    ),
)
async def test_contact_profile_url_variants_merge(
    shared_client: httpx.AsyncClient,
    stored: UrlStyle,
    variant: UrlStyle,
    different: UrlStyle,
    other: str,
) -> None:
    n = next(_numbers)
    path = f"network.com/in/merge-person-{n}"
    status, first = await post(
        shared_client, "/v1/contact", {"networkProfileUrl": url(path, stored)}
    )
    assert status == 201
    # an unknown e-mail does not stop the URL from matching
    status, again = await post(
        shared_client,
        "/v1/contact",
        {"networkProfileUrl": url(path, variant), "professionalEmail": f"p{n}@m.example"},
    )
    assert (status, again) == (200, first)
    elsewhere = url("network.com" + other.format(n=n), different)
    status, third = await post(shared_client, "/v1/contact", {"networkProfileUrl": elsewhere})
    assert status == 201
    assert third != first


# ---- companies --------------------------------------------------------------------------


@SETTINGS
@given(
    stored=domain_styles,
    variant=domain_styles,
    key=st.sampled_from(["domain", "website"]),
    first_key=st.sampled_from(["domain", "website"]),
    different=domain_styles,
    other=st.sampled_from(
        [
            "merge-co{n}x.example",
            "merge-co{n}.example.org",
            "shop.merge-co{n}.example",
            "merge-co{n}.examples",
        ]
    ),
)
async def test_company_domain_variants_merge(
    shared_client: httpx.AsyncClient,
    stored: DomainStyle,
    variant: DomainStyle,
    key: str,
    first_key: str,
    different: DomainStyle,
    other: str,
) -> None:
    n = next(_numbers)
    name = f"merge-co{n}.example"
    status, first = await post(
        shared_client, "/v1/company", {"name": f"Merge Co {n}", first_key: domain(name, stored)}
    )
    assert status == 201
    status, again = await post(shared_client, "/v1/company", {key: domain(name, variant)})
    assert (status, again) == (200, first)
    status, third = await post(
        shared_client,
        "/v1/company",
        {"name": f"Other Co {n}", "domain": domain(other.format(n=n), different)},
    )
    assert status == 201
    assert third != first


@SETTINGS
@given(stored=url_styles, variant=url_styles, flips=cases)
async def test_company_network_url_and_name_variants_merge(
    shared_client: httpx.AsyncClient, stored: UrlStyle, variant: UrlStyle, flips: Cases
) -> None:
    n = next(_numbers)
    path = f"network.com/company/merge-org-{n}"
    status, first = await post(
        shared_client,
        "/v1/company",
        {"name": f"Merge Org {n}", "companyNetworkUrl": url(path, stored)},
    )
    assert status == 201
    status, again = await post(
        shared_client, "/v1/company", {"companyNetworkUrl": url(path, variant)}
    )
    assert (status, again) == (200, first)
    status, by_name = await post(
        shared_client, "/v1/company", {"name": f"  {recase(f'merge org {n}', flips)}  "}
    )
    assert (status, by_name) == (200, first)
    status, third = await post(shared_client, "/v1/company", {"name": f"Merge Org {n} B"})
    assert status == 201
    assert third != first
