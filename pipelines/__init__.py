"""The steps (ingest, replay, load, report) as plain functions, shared by the CLI, DAGs and tests."""
