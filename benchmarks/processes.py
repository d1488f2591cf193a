"""Whole processes, timed: wall time and peak RSS of one command, as the user runs it.

A child of a large benchmark process would report the benchmark's own peak (Linux keeps a
process's RSS high-water mark across fork and exec), so every command is started by a small
launcher process (``LAUNCHER``) that reports its child's wall time and ``ru_maxrss`` from
``os.wait4``. Children run with Python bytecode caching on (``PYTHONDONTWRITEBYTECODE`` removed
from their environment), as on a user's machine: without it every start compiles every module
it imports (~1-2 s more for numba and Polars).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIERCAST = [sys.executable, "-c", "from pipelines.cli import main; main()"]

LAUNCHER = """
import os, subprocess, sys, time
t = time.perf_counter()
p = subprocess.Popen(sys.argv[1:])
_, status, usage = os.wait4(p.pid, 0)
sys.stderr.write(f"\\nLAUNCHER {time.perf_counter() - t} {usage.ru_maxrss}\\n")
sys.exit(os.waitstatus_to_exitcode(status))
"""


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.setdefault("GX_ANALYTICS_ENABLED", "false")
    return env


def run_timed(argv: list[str]) -> tuple[float, int, str]:
    """(wall seconds, peak RSS bytes, stdout) of ``argv`` run as a fresh process; SystemExit
    naming the command if it fails."""
    p = subprocess.run([sys.executable, "-c", LAUNCHER, *argv], capture_output=True, text=True, cwd=ROOT,
                       env=child_env())
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({p.returncode}): {p.stdout[-2000:]} {p.stderr[-2000:]}")
    wall, maxrss_kib = p.stderr.rpartition("\nLAUNCHER ")[2].split()
    return float(wall), int(maxrss_kib) * 1024, p.stdout
