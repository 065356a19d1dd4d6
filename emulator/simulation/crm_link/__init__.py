"""The platform's link to the customer's CRM: auto-sync after each advance (autosync) and
the periodic CRM health checks (health)."""
