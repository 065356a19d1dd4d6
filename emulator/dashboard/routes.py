"""The dashboard's route table: pages at the root, their assets and the API docs' assets."""

from __future__ import annotations

from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from emulator.asgi_guards import TOKEN_FORM
from emulator.dashboard import activity, calls, crm_pages, docs, overview, records, runs, token
from emulator.dashboard.render import STATIC

routes: list[BaseRoute] = [
    Route("/", overview.overview, methods=["GET", "POST"]),  # POST: check the CRM's health
    Route(TOKEN_FORM, token.form, methods=["GET", "POST"]),
    Route("/contacts", records.contacts, methods=["GET"]),
    Route("/contacts/{recordId}", records.contact, methods=["GET"]),
    Route("/companies", records.companies, methods=["GET"]),
    Route("/companies/{recordId}", records.company, methods=["GET"]),
    Route("/crm-ui", crm_pages.crm_home, methods=["GET"]),
    Route("/crm-ui/{kind}", crm_pages.crm_list, methods=["GET"]),
    Route("/crm-ui/{kind}/{recordId}", crm_pages.crm_record, methods=["GET"]),
    Route("/journal", activity.journal, methods=["GET"]),
    Route("/events", activity.events, methods=["GET"]),
    Route("/requests", calls.requests, methods=["GET"]),
    Route("/faults", calls.faults, methods=["GET"]),
    Route("/webhooks", activity.webhooks, methods=["GET"]),
    Route("/webhooks/{webhookId}", activity.webhook, methods=["GET"]),
    Route("/runs", runs.runs, methods=["GET"]),
    Route("/runs/exports/{exportId}", runs.export_run, methods=["GET"]),
    Route("/runs/verify/{verifyId}", runs.verify_run, methods=["GET"]),
    Route("/scenarios", runs.scenarios, methods=["GET", "POST"]),
    Route("/docs", docs.docs, methods=["GET"]),
    Mount("/docs/assets", app=StaticFiles(directory=docs.SWAGGER_STATIC), name="docs-assets"),
    Mount("/dashboard-assets", app=StaticFiles(directory=STATIC), name="dashboard-assets"),
]
