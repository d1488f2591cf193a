"""The Great Expectations contract run once for many datasets.

``tiercast ingest`` (``--validate auto``) publishes a trace only when the exact counts of every
contract rule are zero (``schemas.trace_suite``); the GX suite itself costs ~9 s to import, so
it runs here, in one process for a whole batch: ``tiercast validate`` (every dataset whose GX
run is pending, or the ones named) and the ingest DAG's validate task (the run's new datasets).
A dataset GX fails is withdrawn from the catalog into ``<quarantine>/datasets/<id>`` with its
report.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

from pipelines.catalog import write_json_atomic

#: a ``validation.gx`` value: the exact checks passed, the GX suite has not run yet
PENDING = "pending"


def pending_traces(data_dir: Path) -> list[str]:
    """Ids of the traces whose GX run is pending."""
    from pipelines.catalog import list_traces

    return [t.trace_id for t in list_traces(data_dir) if (t.manifest.get("validation") or {}).get("gx") == PENDING]


def validate_datasets(data_dir: Path, datasets: list[tuple[str, str]], quarantine_dir: Path) -> dict:
    """Run the GX suite on each ``(kind, id)`` dataset (``kind`` ``trace`` or ``measured``), GX
    imported once. Returns {"valid": [(kind, id)], "invalid": [(kind, id, summary)]}."""
    out: dict[str, list] = {"valid": [], "invalid": []}
    if not datasets:
        return out
    for name in ("great_expectations", "great_expectations.expectations.registry"):
        logging.getLogger(name).setLevel(logging.ERROR)  # ~216 "Skipping registering function" lines otherwise
    from schemas.measured_suite import validate_measured_dir
    from schemas.trace_suite import validate_trace_dir

    for kind, dataset_id in datasets:
        d = Path(data_dir) / ("traces" if kind == "trace" else "measured") / dataset_id
        manifest = json.loads((d / "manifest.json").read_text())
        check = validate_trace_dir if kind == "trace" else validate_measured_dir
        report = check(d, manifest, mode="auto")
        write_json_atomic(d / "validation.json", report)
        if report["success"]:
            manifest["validation"] = {k: report[k] for k in ("success", "mode", "rows_validated") if k in report}
            manifest["validation"]["gx"] = "passed"
            write_json_atomic(d / "manifest.json", manifest)
            out["valid"].append((kind, dataset_id))
            continue
        held = Path(quarantine_dir) / "datasets"
        held.mkdir(parents=True, exist_ok=True)
        shutil.move(str(d), held / dataset_id)
        out["invalid"].append((kind, dataset_id, report["summary"]))
    return out
