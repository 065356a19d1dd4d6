"""Actions runs on the virtual clock: the documented action types (types), each record's
processing times (timeline), what an action changes on its record (effects), a run's progress
and completion callbacks (runs) and its EXPORT_TO_CRM calls (export)."""
