"""Readers: every trace and log format -> canonical Arrow/Polars tables; synthetic workloads."""
