-- tiercast warehouse, schema version 3 (applied by pipelines/warehouse.py, recorded in schema_version).
-- Typed core columns; result tables also take the extra columns a result file brings (ALTER TABLE
-- ADD COLUMN with the Parquet type), so a new per-interval metric loads without a migration.
-- Paths are relative to the data root (the directory holding this database file).

CREATE TABLE schema_version (
    version INTEGER NOT NULL,
    applied_at TIMESTAMP NOT NULL,
    description VARCHAR NOT NULL
);

-- what the loader saw last: data_mtime_ns (newest change in the data root), loaded_at
CREATE TABLE load_state (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL);

-- every unit loaded (a trace, a measured dataset, a run, a result file) and the fingerprint
-- (sizes and mtimes of its files) it had: an unchanged unit is skipped, a changed one replaced
CREATE TABLE loaded_units (
    unit VARCHAR PRIMARY KEY,
    kind VARCHAR NOT NULL,
    fingerprint VARCHAR NOT NULL,
    loaded_at TIMESTAMP NOT NULL
);

CREATE TABLE traces (
    trace_id VARCHAR PRIMARY KEY,
    format VARCHAR NOT NULL,
    source_path VARCHAR,
    sha256 VARCHAR,
    start_time VARCHAR,
    rows_read BIGINT,
    rows_accepted BIGINT,
    rows_rejected BIGINT,
    sorted_rows BIGINT,
    volumes INTEGER,
    span_ns BIGINT,
    lines_skipped JSON,
    validation_success BOOLEAN,
    reader_version VARCHAR,
    ingested_at TIMESTAMP,
    path VARCHAR NOT NULL
);

CREATE TABLE trace_volumes (
    trace_id VARCHAR NOT NULL,
    volume VARCHAR NOT NULL,
    requests BIGINT,
    reads BIGINT,
    writes BIGINT,
    bytes BIGINT,
    min_offset BIGINT,
    max_end BIGINT,
    first_ts_ns BIGINT,
    last_ts_ns BIGINT,
    span_ns BIGINT,
    capacity_bytes BIGINT,
    PRIMARY KEY (trace_id, volume)
);

-- the Parquet files of each trace: kind 'requests' (accepted rows) or 'rejects'
CREATE TABLE trace_files (
    path VARCHAR PRIMARY KEY,
    trace_id VARCHAR NOT NULL,
    kind VARCHAR NOT NULL,
    size_bytes BIGINT NOT NULL
);

CREATE TABLE measured (
    dataset_id VARCHAR PRIMARY KEY,
    format VARCHAR NOT NULL,
    tool VARCHAR,
    tool_version VARCHAR,
    hosts JSON,
    devices JSON,
    intervals BIGINT,
    source_path VARCHAR,
    source_bytes BIGINT,
    sha256 VARCHAR,
    rows_read BIGINT,
    rows_accepted BIGINT,
    rows_rejected BIGINT,
    tables JSON,
    validation_success BOOLEAN,
    reader_version VARCHAR,
    ingested_at TIMESTAMP,
    path VARCHAR NOT NULL
);

CREATE TABLE scenarios (
    scenario_hash VARCHAR PRIMARY KEY,
    name VARCHAR NOT NULL,
    toml VARCHAR,
    source VARCHAR
);

CREATE TABLE runs (
    run_id VARCHAR PRIMARY KEY,
    trace_id VARCHAR NOT NULL,
    scenario VARCHAR NOT NULL,
    scenario_hash VARCHAR NOT NULL,
    model_version VARCHAR NOT NULL,
    tiercast_version VARCHAR,
    mode VARCHAR,  -- open: the trace's own timing; closed: `outstanding` I/Os in flight
    outstanding BIGINT,
    status VARCHAR NOT NULL,
    started_at TIMESTAMP,
    finished_at TIMESTAMP,
    wall_seconds DOUBLE,
    requests BIGINT,
    requests_per_s DOUBLE,
    path VARCHAR NOT NULL
);

CREATE TABLE run_summary (
    run_id VARCHAR PRIMARY KEY,
    dram_mode VARCHAR,
    warmup_requests BIGINT,
    measured_requests BIGINT,
    measured_seconds DOUBLE,
    simulated_seconds DOUBLE,
    iops DOUBLE,
    mb_per_s DOUBLE,
    latency_mean_ms DOUBLE,
    latency_p50_ms DOUBLE,
    latency_p95_ms DOUBLE,
    latency_p99_ms DOUBLE,
    latency_max_ms DOUBLE,
    read_hit_ratio DOUBLE,
    write_hit_ratio DOUBLE,
    flush_mb_per_s DOUBLE,
    forced_flush_count BIGINT,
    forced_flush_stall_ms DOUBLE,
    throttle_delay_sum_ms DOUBLE,
    throttled_requests BIGINT,
    backend_ios_per_request DOUBLE,
    backend_iops_per_drive DOUBLE,
    -- per RAID group counters (raid_groups) and per tier shares (tiers) come typed from the summary file
    -- physics checks (pipelines/physics.py): model errors and caveats on the answer
    warnings STRUCT("check" VARCHAR, severity VARCHAR, message VARCHAR)[]
);

CREATE TABLE interval_metrics (
    run_id VARCHAR NOT NULL,
    trace_id VARCHAR NOT NULL,
    scenario VARCHAR NOT NULL,
    volume VARCHAR,
    interval_start_ns BIGINT NOT NULL,
    interval_end_ns BIGINT NOT NULL,
    requests BIGINT,
    reads BIGINT,
    writes BIGINT,
    bytes BIGINT,
    iops DOUBLE,
    mb_per_s DOUBLE,
    read_hit_ratio DOUBLE,
    write_hit_ratio DOUBLE,
    latency_mean_ms DOUBLE,
    latency_p50_ms DOUBLE,
    latency_p95_ms DOUBLE,
    latency_p99_ms DOUBLE,
    latency_max_ms DOUBLE,
    dirty_pct_mean DOUBLE,
    dirty_pct_max DOUBLE,
    flush_mb_per_s DOUBLE,
    backend_ios BIGINT,
    forced_flushes BIGINT
);

CREATE TABLE rg_intervals (
    run_id VARCHAR NOT NULL,
    trace_id VARCHAR NOT NULL,
    scenario VARCHAR NOT NULL,
    rg VARCHAR NOT NULL,
    interval_start_ns BIGINT NOT NULL,
    interval_end_ns BIGINT NOT NULL,
    requests BIGINT,
    iops DOUBLE,
    latency_mean_ms DOUBLE,
    backend_ios BIGINT,
    rg_dirty_pct_max DOUBLE,
    pre_cleaning_age_ms DOUBLE,
    utilization DOUBLE
);

CREATE TABLE sweeps (
    sweep_id VARCHAR NOT NULL,
    trace_id VARCHAR NOT NULL,
    scenario VARCHAR NOT NULL,
    outstanding INTEGER NOT NULL,
    iops DOUBLE,
    mb_per_s DOUBLE,
    latency_mean_ms DOUBLE,
    latency_p95_ms DOUBLE,
    latency_p99_ms DOUBLE,
    model_version VARCHAR,
    finished_at TIMESTAMP,
    source_file VARCHAR NOT NULL
);

CREATE TABLE mrc (
    trace_id VARCHAR NOT NULL,
    method VARCHAR NOT NULL,
    page_size BIGINT NOT NULL,
    sample_rate DOUBLE,
    cache_bytes BIGINT NOT NULL,
    hit_ratio DOUBLE,
    byte_hit_ratio DOUBLE,
    model_version VARCHAR,
    footprint_bytes BIGINT,  -- distinct pages x page size (SHARDS: estimated)
    source_file VARCHAR NOT NULL
);

-- cache-policy simulations (tiercast simulate): one summary row per (trace, policy, size, page)
CREATE TABLE simulations (
    trace_id VARCHAR NOT NULL,
    policy VARCHAR NOT NULL,
    cache_bytes BIGINT NOT NULL,
    page_size BIGINT NOT NULL,
    model_version VARCHAR,
    source_file VARCHAR NOT NULL
);

-- I/O skew (tiercast skew): one row per (trace, slice size)
CREATE TABLE skew (
    trace_id VARCHAR NOT NULL,
    slice_bytes BIGINT NOT NULL,
    slices BIGINT NOT NULL,
    ios BIGINT NOT NULL,
    skew_capacity_share DOUBLE,
    skew_io_share DOUBLE,
    flash_bytes_80pct BIGINT,
    flash_bytes_90pct BIGINT,
    flash_bytes_95pct BIGINT,
    source_file VARCHAR NOT NULL
);

-- the newest run of each (trace, scenario name): a newer model version or scenario edit wins
CREATE VIEW latest_runs AS
SELECT r.*, s.* EXCLUDE (run_id)
FROM runs r JOIN run_summary s USING (run_id)
QUALIFY row_number() OVER (PARTITION BY r.trace_id, r.scenario
                           ORDER BY r.finished_at DESC NULLS LAST, r.run_id) = 1;

-- scenarios side by side on each trace (latest runs), with each metric against the trace's best
CREATE VIEW whatif AS
SELECT trace_id, scenario, mode, outstanding, run_id, model_version, finished_at, iops, mb_per_s, latency_mean_ms,
       latency_p95_ms, latency_p99_ms, read_hit_ratio, write_hit_ratio, forced_flush_count,
       throttle_delay_sum_ms, backend_ios_per_request,
       iops / nullif(max(iops) OVER (PARTITION BY trace_id), 0) AS iops_vs_best,
       latency_mean_ms / nullif(min(latency_mean_ms) OVER (PARTITION BY trace_id), 0) AS latency_vs_best
FROM latest_runs
ORDER BY trace_id, iops DESC;

-- schema 2: seed experiments (tiercast experiments; pipelines/experiments.py). Everything from
-- this line to schema 3's is also what the migration from schema 1 runs (pipelines/warehouse.py).

-- every quantitative seed figure as one experiments run measured it (README "Seed figures"):
-- published vs model, keyed on the array model version and the mode (full or quick)
CREATE TABLE seed_figure_results (
    model_version VARCHAR NOT NULL,
    mode VARCHAR NOT NULL,
    seed VARCHAR NOT NULL,
    figure VARCHAR NOT NULL,
    label VARCHAR NOT NULL,
    published DOUBLE NOT NULL,
    model DOUBLE,
    error_pct DOUBLE,
    tolerance_pct DOUBLE NOT NULL,
    kind VARCHAR NOT NULL,
    ok BOOLEAN,
    measured_at TIMESTAMP WITH TIME ZONE,
    source_file VARCHAR NOT NULL
);

-- the qualitative seed findings (e.g. "MCx sustains more IOPS than FLARE") and whether the model shows them
CREATE TABLE seed_findings (
    model_version VARCHAR NOT NULL,
    mode VARCHAR NOT NULL,
    seed VARCHAR NOT NULL,
    finding VARCHAR NOT NULL,
    ok BOOLEAN,
    measured_at TIMESTAMP WITH TIME ZONE,
    source_file VARCHAR NOT NULL
);

-- the newest measurement of each figure per mode
CREATE VIEW seed_figures AS
SELECT * EXCLUDE (source_file) FROM seed_figure_results
QUALIFY row_number() OVER (PARTITION BY figure, mode ORDER BY measured_at DESC NULLS LAST) = 1
ORDER BY seed, figure, mode;

-- schema 3: skew curves and model vs measured. Everything below this line is also what the
-- migration from schema 2 runs (pipelines/warehouse.py).

-- a skew result is keyed on (trace, data version, slice size, skew code version): skew_key
ALTER TABLE skew ADD COLUMN IF NOT EXISTS skew_key VARCHAR;
ALTER TABLE skew ADD COLUMN IF NOT EXISTS data_version VARCHAR;
ALTER TABLE skew ADD COLUMN IF NOT EXISTS model_version VARCHAR;
ALTER TABLE skew ADD COLUMN IF NOT EXISTS computed_at TIMESTAMP WITH TIME ZONE;

-- the skew curve of a skew result (tiercast skew): after the k hottest slices of N,
-- (k / N, I/Os of those k / all I/Os); one point per slice up to 10,000 slices, else 10,000
-- evenly spaced ones plus the skew point
CREATE TABLE skew_curve (
    skew_key VARCHAR NOT NULL,
    trace_id VARCHAR NOT NULL,
    slice_bytes BIGINT NOT NULL,
    hottest_slices BIGINT NOT NULL,
    capacity_share DOUBLE NOT NULL,
    io_share DOUBLE NOT NULL,
    ios BIGINT NOT NULL,
    source_file VARCHAR NOT NULL
);

-- model vs measured (tiercast compare-measured, tiercast compare with a matching capture): one row
-- per comparison, keyed by comparison_id on (run, capture, measured datasets, devices, min
-- coverage, comparison code version)
CREATE TABLE measured_comparisons (
    comparison_id VARCHAR PRIMARY KEY,
    run_id VARCHAR NOT NULL,
    capture_id VARCHAR NOT NULL,
    measured_dataset_id VARCHAR NOT NULL,
    fio_dataset_id VARCHAR,
    trace_id VARCHAR NOT NULL,
    scenario VARCHAR,
    mode VARCHAR,
    model_version VARCHAR,
    compare_version VARCHAR NOT NULL,
    min_coverage DOUBLE NOT NULL,
    interval_s DOUBLE NOT NULL,
    trace_start TIMESTAMP WITH TIME ZONE NOT NULL,
    compared_at TIMESTAMP WITH TIME ZONE NOT NULL
);

-- per comparison, measured interval and device: model vs measured
CREATE TABLE model_vs_measured (
    comparison_id VARCHAR NOT NULL,
    device VARCHAR NOT NULL,
    interval_end TIMESTAMP WITH TIME ZONE NOT NULL,
    start_since_trace_ns BIGINT NOT NULL,
    coverage DOUBLE NOT NULL,
    scored BOOLEAN NOT NULL,
    model_iops DOUBLE,
    measured_iops DOUBLE,
    iops_error_pct DOUBLE,
    model_mb_per_s DOUBLE,
    measured_mb_per_s DOUBLE,
    mb_per_s_error_pct DOUBLE,
    model_latency_mean_ms DOUBLE,
    measured_latency_mean_ms DOUBLE,
    latency_mean_ms_error_pct DOUBLE,
    measured_util_pct DOUBLE
);

-- per comparison, device (NULL for fio's totals) and metric: MAPE, bias and the error of the
-- means over the scored intervals (source 'iostat'), or the run against fio's totals ('fio')
CREATE TABLE model_vs_measured_summary (
    comparison_id VARCHAR NOT NULL,
    source VARCHAR NOT NULL,
    device VARCHAR,
    metric VARCHAR NOT NULL,
    scored_intervals BIGINT,
    mape_pct DOUBLE,
    bias_pct DOUBLE,
    total_error_pct DOUBLE,
    model_mean DOUBLE,
    measured_mean DOUBLE
);
