"""The landing folder's steps without Airflow (``pipelines.orchestrate``): a copy that stalls longer
than ``stable_seconds`` is ingested half, and when the file lands whole (sent again, resumed, or
still written into its archived copy) the half trace is withdrawn with everything computed from
it, so one file is one trace; other content under a landed name is a trace of its own; with
``require_marker`` only files with a ``.done`` marker are taken; with ``split_by`` "volume" a
landed multi-volume trace is validated and replayed as its volumes."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from conftest import shared_path

from pipelines.catalog import list_traces
from pipelines.load import load
from pipelines.orchestrate import (
    DONE_SUFFIX,
    discover,
    ingest_landed,
    ready_names,
    replay_config,
    replay_pair,
    replay_plan,
    split_inputs,
    split_landed,
    under_root,
    validate_batch,
    validate_inputs,
)
from pipelines.warehouse import connect, db_path

T0 = 128166372003061629
LINES = [f"{T0 + i * 1000},usr,0,{'Read' if i % 3 else 'Write'},{(i * 7919 % 5000) * 4096},4096,100\n"
         for i in range(4000)]
SCENARIO = "vnx2-mcx"


def _root(tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    root = tmp_path / "data"
    landing = root / "landing"
    landing.mkdir(parents=True)
    return root, landing, under_root(root, "", "quarantine", "quarantine"), under_root(root, "", "archive", "archive")


def _landed_long_ago(path: Path) -> None:
    old = time.time() - 3600
    os.utime(path, (old, old))


def _ingest(root: Path, name: str) -> dict:
    r = ingest_landed(root / "landing" / name, root, root / "quarantine", root / "archive")
    assert validate_batch(root, [r], root / "quarantine")["invalid"] == []
    return r


def _rows_by_trace(root: Path) -> dict[str, int]:
    return {t.trace_id: t.manifest["rows_read"] for t in list_traces(root)}


def _warehouse(root: Path, sql: str) -> list[tuple]:
    con = connect(db_path(root), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _archived(root: Path) -> list[tuple[str, int]]:
    return sorted((p.name, len(p.read_text().splitlines())) for p in (root / "archive").rglob("*") if p.is_file())


def test_a_copy_sent_again_whole_withdraws_the_partial_trace_and_its_results(tmp_path):
    """The copy stalled past stable_seconds: 1,500 of 4,000 lines were ingested, replayed and
    loaded. Sent again whole under the same name, the file begins with those bytes: the partial
    trace, its run and its archived copy go to quarantine/superseded/<id>/, the warehouse drops
    them at the next load, and the whole file is the one trace."""
    root, landing, _, _ = _root(tmp_path)
    (landing / "usr_1.csv").write_text("".join(LINES[:1500]))
    _landed_long_ago(landing / "usr_1.csv")
    assert discover(root, "", 60, 10) == (["landing/usr_1.csv"], [])
    half = _ingest(root, "usr_1.csv")
    run = replay_pair(root, {"trace_id": half["id"], "scenario": SCENARIO})
    load(root)
    assert _warehouse(root, "select trace_id, rows_read from traces") == [(half["id"], 1500)]

    (landing / "usr_1.csv").write_text("".join(LINES))  # sent again, whole
    whole = _ingest(root, "usr_1.csv")
    assert whole["superseded"]["id"] == half["id"] and whole["id"] != half["id"]
    assert _rows_by_trace(root) == {whole["id"]: 4000}
    held = root / "quarantine" / "superseded" / half["id"]
    record = json.loads((held / "withdrawn.json").read_text())
    assert record["superseded_by"] == whole["id"] and record["landed_as"] == "landing/usr_1.csv"
    assert (held / "traces" / half["id"] / "manifest.json").is_file()
    assert (held / "results" / "array_runs" / run["run_id"] / "summary.json").is_file()
    assert (held / "results" / "array_volume_intervals" / f"{run['run_id']}.parquet").is_file()
    assert f"results/array_runs/{run['run_id']}" in record["moved"]
    assert not (root / "results" / "array_runs" / run["run_id"]).exists()
    assert _archived(root) == [("usr_1.csv.1", 4000)]  # the partial copy left the archive with its trace
    assert len(list(held.glob("archive/*/usr_1.csv"))) == 1

    report = load(root)
    assert report.removed == {"trace": 1, "run": 1}
    assert _warehouse(root, "select trace_id, rows_read from traces") == [(whole["id"], 4000)]
    assert _warehouse(root, "select count(*) from runs") == [(0,)]
    assert _warehouse(root, "select count(*) from interval_metrics") == [(0,)]
    from pipelines.report import write_report

    page = write_report(root, tmp_path / "report.html").read_text()
    assert whole["id"] in page and half["id"] not in page and run["run_id"] not in page


def test_a_copy_that_went_on_writing_into_its_archived_file_is_taken_again(tmp_path):
    """A copier that keeps its file open writes on into the archived file after the move (same
    file system, same inode). The next discover puts the grown file back into the landing folder;
    it waits while it is still written, then is ingested whole and withdraws the partial trace."""
    root, landing, _, _ = _root(tmp_path)
    (landing / "usr_2.csv").write_text("".join(LINES[:1000]))
    _landed_long_ago(landing / "usr_2.csv")
    half = _ingest(root, "usr_2.csv")
    [archived] = (root / "archive").rglob("usr_2.csv")
    assert discover(root, "", 60, 10) == ([], [])  # unchanged in the archive: nothing to do

    with open(archived, "a") as f:  # the copy goes on through its open descriptor
        f.write("".join(LINES[1000:3000]))
    assert discover(root, "", 60, 10) == ([], ["landing/usr_2.csv"])  # back, still being written
    assert not archived.exists()
    with open(landing / "usr_2.csv", "a") as f:
        f.write("".join(LINES[3000:]))
    _landed_long_ago(landing / "usr_2.csv")
    assert discover(root, "", 60, 10) == (["landing/usr_2.csv"], [])
    whole = _ingest(root, "usr_2.csv")
    assert whole["superseded"]["id"] == half["id"]
    assert _rows_by_trace(root) == {whole["id"]: 4000}
    assert _archived(root) == [("usr_2.csv", 4000)]  # archived once, whole
    assert discover(root, "", 60, 10) == ([], [])


def test_a_file_written_on_while_it_is_ingested_stays_in_the_landing_folder(tmp_path, monkeypatch):
    """The copy resumes while its partial file is being ingested: what was read is no trace (the
    dataset is withdrawn at once), the file stays in the landing folder and, once unchanged, is
    ingested whole."""
    import pipelines.steps as steps

    root, landing, _, _ = _root(tmp_path)
    (landing / "usr_4.csv").write_text("".join(LINES[:1000]))
    _landed_long_ago(landing / "usr_4.csv")
    ingest_any = steps.ingest_any

    def resumed_meanwhile(path, *args, **kw):
        r = ingest_any(path, *args, **kw)
        with open(path, "a") as f:
            f.write("".join(LINES[1000:]))
        return r

    monkeypatch.setattr(steps, "ingest_any", resumed_meanwhile)
    r = _ingest(root, "usr_4.csv")
    monkeypatch.undo()
    assert r == {"kind": "trace", "source": "usr_4.csv", "still_landing": True}
    assert list_traces(root) == [] and _archived(root) == []
    assert len(list((root / "quarantine" / "superseded").glob("*/traces/*/manifest.json"))) == 1
    assert discover(root, "", 60, 10) == ([], ["landing/usr_4.csv"])  # written a moment ago: waits
    _landed_long_ago(landing / "usr_4.csv")
    whole = _ingest(root, "usr_4.csv")
    assert "superseded" not in whole and _rows_by_trace(root) == {whole["id"]: 4000}
    assert _archived(root) == [("usr_4.csv", 4000)]


def test_other_content_under_a_landed_name_is_a_trace_of_its_own(tmp_path):
    """A name reused for other data (a log rotated under a fixed name) supersedes nothing, and
    the same file landed twice is one trace."""
    root, landing, _, _ = _root(tmp_path)
    (landing / "usr.csv").write_text("".join(LINES[:2000]))
    first = _ingest(root, "usr.csv")
    (landing / "usr.csv").write_text("".join(LINES[2000:]))
    second = _ingest(root, "usr.csv")
    (landing / "usr.csv").write_text("".join(LINES[2000:]))
    again = _ingest(root, "usr.csv")
    assert "superseded" not in second and "superseded" not in again and again["already_ingested"]
    assert _rows_by_trace(root) == {first["id"]: 2000, second["id"]: 2000}
    assert not (root / "quarantine" / "superseded").exists()


def test_an_object_store_root_records_nothing(tmp_path):
    """Objects land whole (one PUT): the ingest on an object store's scratch copy writes no record
    of landed files (``supersede=False``), and a name landing again supersedes nothing."""
    root, landing, quarantine, archive = _root(tmp_path)
    for part in (LINES[:1500], LINES):
        (landing / "usr.csv").write_text("".join(part))
        r = ingest_landed(landing / "usr.csv", root, quarantine, archive, supersede=False)
        assert "superseded" not in r
    assert sorted(_rows_by_trace(root).values()) == [1500, 4000]
    assert not (root / "landed").exists()


@pytest.mark.parametrize("require_marker, ready", [(False, ["old.csv", "marked.csv"]), (True, ["marked.csv"])])
def test_require_marker_takes_only_files_with_a_done_marker(require_marker, ready):
    now = 10_000.0
    entries = {"old.csv": now - 3600, "marked.csv": now - 1, "marked.csv" + DONE_SUFFIX: now, "fresh.csv": now}
    got, waiting = ready_names(entries, stable_s=60, now_s=now, require_marker=require_marker)
    assert got == ready
    assert sorted(waiting) == sorted({"old.csv", "fresh.csv"} - set(ready))


def test_a_landed_trace_split_by_volume_is_validated_and_replayed_as_its_volumes(tmp_path):
    root, landing, quarantine, archive = _root(tmp_path)
    shutil.copy(shared_path("traces", "disksim", "tpcc-small.trace"), landing / "tpcc.trace")
    whole = ingest_landed(landing / "tpcc.trace", root, quarantine, archive)
    assert split_landed(root, whole, "") == whole and "parts" not in whole
    assert split_inputs(whole) == [f"traces/{whole['id']}/", "traces/_sources.json", "traces/*/manifest.json"]
    r = split_landed(root, whole, "volume")
    parts = r["parts"]
    assert len(parts) == 16 and sum(p["rows_accepted"] for p in parts) == whole["rows_accepted"] == 6999
    assert {p["split_from"] for p in parts} == {whole["id"]} and {p["archived_as"] for p in parts} == {r["archived_as"]}
    # the run validates and publishes the whole trace and its 16 volumes; the archived file is staged once
    inputs = validate_inputs([r])
    assert len(inputs) == 1 + 17 and inputs.count(r["archived_as"]) == 1
    checked = validate_batch(root, [r], quarantine)
    assert checked["invalid"] == [] and len(checked["valid"]) == 17
    # the replay plan takes the volumes, not the whole trace
    (root / "replay.toml").write_text(f"scenarios = ['{SCENARIO}']\n")
    pairs, _, _ = replay_plan(root, replay_config(root))
    assert sorted(p["trace_id"] for p in pairs) == sorted(p["id"] for p in parts)
    # selected as the whole trace is: by its format and its source file's name
    (root / "replay.toml").write_text(f"scenarios = ['{SCENARIO}']\nformats = ['disksim']\ntraces = ['tpcc.*']\n")
    assert sorted(p["trace_id"] for p in replay_plan(root, replay_config(root))[0]) == sorted(p["id"] for p in parts)
    assert replay_plan(root, replay_config(root, traces=["usr*"]))[0] == []
    # landed again: nothing new to validate
    assert split_landed(root, {**whole, "already_ingested": True}, "volume")["parts"] == [
        {**p, "already_ingested": True} for p in parts]
    with pytest.raises(ValueError, match="split_by 'lun'"):
        split_landed(root, whole, "lun")
