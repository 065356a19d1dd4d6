"""Scenario files: a fixture set, a CRM, ordered steps and expectations, replayed in isolation."""
