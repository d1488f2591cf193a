"""Running a Great Expectations 1.x suite on a Polars frame, the way every tiercast table does.

GX has no Polars support (GX issue #8023) and its DuckDB path fails on DuckDB 2.0, so frames go
to pandas (Arrow-backed) and an ephemeral context; GX is imported lazily because the import
alone costs seconds and ~200 MB.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import polars as pl

os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")

#: Builds a suite: receives the ``great_expectations`` module, returns expectation objects.
SuiteSpec = Callable[[Any], list]


def run_suite(name: str, spec: SuiteSpec, df: pl.DataFrame) -> dict:
    """Validate ``df`` with the expectations ``spec`` builds; returns GX's result as a dict."""
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    ctx = gx.get_context(mode="ephemeral")
    ctx.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
    asset = ctx.data_sources.add_pandas("tiercast").add_dataframe_asset(name)
    batch_def = asset.add_batch_definition_whole_dataframe("all")
    suite = gx.ExpectationSuite(name=name)
    for e in spec(gx):
        suite.add_expectation(e)
    suite = ctx.suites.add(suite)
    casts = [pl.col(c).cast(pl.String) for c, t in df.schema.items() if isinstance(t, pl.Enum | pl.Categorical)]
    pdf = df.with_columns(casts).to_pandas(use_pyarrow_extension_array=True)
    result = batch_def.get_batch(batch_parameters={"dataframe": pdf}).validate(suite)
    return result.to_json_dict()


def summarize(result: dict) -> tuple[bool, list[dict], str]:
    """Success flag, one line per expectation, and a message naming what failed."""
    rows, failed = [], []
    for r in result["results"]:
        cfg = r["expectation_config"]
        kw = {k: v for k, v in cfg["kwargs"].items() if k != "batch_id"}
        res = r.get("result", {})
        row = {
            "expectation": cfg["type"],
            "kwargs": kw,
            "success": r["success"],
            "unexpected_count": res.get("unexpected_count"),
            "partial_unexpected_list": res.get("partial_unexpected_list", [])[:5],
        }
        rows.append(row)
        if not r["success"]:
            failed.append(f"{cfg['type']}({kw}) unexpected={res.get('unexpected_count')}")
    return bool(result["success"]), rows, "; ".join(failed) or "all expectations met"
