"""The phases of an export run, in the order run.py calls them: probes, record_batches,
associations, activities, tasks, engagement."""
