"""What every command's ``--help`` ends with: an example and the docs page of its task.

Plain data, imported by each command module to build its ``epilog`` (no other imports: ``--help``
stays fast, ``tests/test_cli_startup.py``). ``tests/test_docs.py`` checks that every command has an
entry, that the page exists, and that the page shows the command.
"""

from __future__ import annotations

#: command -> (example command lines, docs page under docs/)
EXAMPLES: dict[str, tuple[tuple[str, ...], str]] = {
    "calibrate": (("tiercast calibrate --measured C --scenario-out vda.toml",
                   "tiercast calibrate --measured 3c1e --device sdb --kind hdd --rpm 10000 --out sdb.toml"),
                  "guide/calibrating.md"),
    "capture": (("tiercast capture --fio randread.fio --iostat-interval 1",), "guide/measured.md"),
    "captures": (("tiercast captures --json",), "guide/measured.md"),
    "compare": (("tiercast compare 5be1 -s vnx5400 -s vnx5400-fastcache --out cmp.html",), "guide/array.md"),
    "compare-measured": (("tiercast compare-measured RUN CAPTURE --device job1=vda",), "guide/calibrating.md"),
    "demo": (("tiercast demo",), "getting-started.md"),
    "experiments": (("tiercast experiments --only seed002 --quick",), "models/seed-figures.md"),
    "ingest": (("tiercast ingest usr_0.csv.gz",
                "tiercast ingest --format generic -o mapping=FILE io.csv   # any CSV/Parquet, a TOML mapping",
                "tiercast ingest iostat-txk.log -o tz=Europe/Paris"), "guide/ingest.md"),
    "load": (("tiercast load",), "guide/sql.md"),
    "measured": (("tiercast measured --json",), "guide/measured.md"),
    "mrc": (("tiercast mrc 3f2a --sizes 1GiB,2GiB,4GiB,8GiB",
             "tiercast mrc 3f2a --method shards --rate 0.01"), "guide/cache.md"),
    "replay": (("tiercast replay 5be1 --scenario vnx5400",
                "tiercast replay 5be1 --scenario vnx2-mcx --outstanding 16 --json"), "guide/array.md"),
    "report": (("tiercast report --out reports/report.html",), "guide/reports.md"),
    "scenarios": (("tiercast scenarios vnx2-mcx",), "guide/array.md"),
    "simulate": (("tiercast simulate 3f2a --policy arc --cache-size 8GiB --page-size 4KiB",), "guide/cache.md"),
    "size": (("tiercast size 5be1 --base vnx5400 --vary dram.cache_bytes=64MiB,512MiB,4GiB --target 'p99_ms<=15'",),
             "guide/array.md"),
    "skew": (("tiercast skew 5be1 --slice 1GiB",), "guide/array.md"),
    "snapshots": (("tiercast snapshots 5be1 --every 1h --keep 4d",), "guide/array.md"),
    "sql": (("tiercast sql \"select * from whatif\"",), "guide/sql.md"),
    "sweep": (("tiercast sweep 5be1 --scenario vnx5400 --outstanding 12,24,48,96",), "guide/array.md"),
    "synth": (("tiercast synth --pattern database --region 15GiB --requests 1000000 --out db15.parquet",),
              "guide/ingest.md"),
    "traces": (("tiercast traces --du",), "guide/ingest.md"),
    "validate": (("tiercast validate",), "guide/ingest.md"),
    "warm": (("tiercast warm",), "getting-started.md"),
}


def epilog(command: str) -> str:
    """The end of ``tiercast COMMAND --help``: the example lines (kept as written: click's ``\\b``)
    and the docs page."""
    lines, page = EXAMPLES[command]
    return "\b\nExample:\n" + "\n".join(f"  {ln}" for ln in lines) + f"\n\nDocs: docs/{page} (make docs-serve)"
