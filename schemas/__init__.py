"""Arrow schemas of every tiercast table, their Great Expectations suites and DuckDB DDL."""
