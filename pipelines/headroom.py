"""Headroom: how much more load a configuration carries before it stops meeting its targets.

The trace is replayed in its own timing, time-compressed (``[replay] load_factor``: the same
requests, their timestamps divided by the factor) at 1.25x, 1.5x, 2x, 3x ... until a target is
missed, then bisected between the last factor that met every target and the first that missed.
Each step is a normal replay, stored and keyed like any other (a re-run reuses it). With a growth
rate (``--growth 30%/year``) the headroom becomes a date: ``log(headroom) / log(1 + growth)`` years
from today. Capacity planners get this number from Live Optics or Mitrend as a rule of thumb; here
it comes from replaying the workload's own bursts at a higher rate.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pipelines.catalog import TraceRef
from replay.scenario import Scenario

#: the load factors tried in turn until one misses a target
STEPS = (1.25, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0)
#: halvings of the interval between the last factor met and the first missed (2.0 -> 3.0: 1/8 of it)
BISECTIONS = 3


@dataclass
class Headroom:
    """``load_factor``: the highest factor found that meets every target (1.0: the trace itself
    only just, None: not measured); ``fails_at``: the lowest that misses (None: none up to the last
    step); ``tried``: each replay (load_factor, meets, the target metrics, run_id)."""

    load_factor: float | None
    fails_at: float | None
    tried: list[dict] = field(default_factory=list)
    growth_pct_per_year: float | None = None
    years: float | None = None
    runs_out: str | None = None  # YYYY-MM at that growth
    note: str | None = None  # why it was not measured

    def as_dict(self) -> dict:
        return {"load_factor": self.load_factor, "fails_at": self.fails_at, "growth_pct_per_year": self.growth_pct_per_year,
                "years": self.years, "runs_out": self.runs_out, "note": self.note, "tried": self.tried}


def parse_growth(text: str) -> float:
    """``30%/year`` (or ``30%``) -> 30.0; a ValueError naming the expected form."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*%\s*(?:/\s*(?:year|yr|y))?\s*", text or "")
    if not m or float(m.group(1)) <= 0:
        raise ValueError(f"growth {text!r}: expected a yearly rate such as 30%/year")
    return float(m.group(1))


def lasts(load_factor: float, growth_pct: float, today: dt.date) -> tuple[float, str]:
    """(years, YYYY-MM) until a load growing ``growth_pct`` a year reaches ``load_factor``."""
    years = math.log(load_factor) / math.log1p(growth_pct / 100.0) if load_factor > 1.0 else 0.0
    month = today.year * 12 + today.month - 1 + int(round(years * 12))
    return years, f"{month // 12:04d}-{month % 12 + 1:02d}"


def headroom(trace: TraceRef, data_dir: str | Path, sc: Scenario, targets: Sequence,
             replay: Callable[[Scenario, str], dict], growth_pct: float | None = None,
             today: dt.date | None = None) -> Headroom:
    """The load factor at which ``sc`` stops meeting ``targets`` on ``trace`` (module docstring).
    ``replay(scenario, label)`` returns the metrics row of one replay (``pipelines.whatif``'s)."""
    if sc.replay.mode != "open":
        return Headroom(None, None, note="closed loop: headroom is measured on the trace's own timing (open loop)")
    tried: list[dict] = []

    def meets(f: float) -> bool:
        label = f"{sc.name} at {f:g}x load"
        row = replay(sc.with_replay(load_factor=f), label)
        ok = all(t.met(row) for t in targets)
        tried.append({"load_factor": f, "meets": ok, "run_id": row.get("run_id"),
                      **{t.metric: row.get(t.metric) for t in targets}})
        return ok

    lo, hi = 1.0, None
    for f in STEPS:
        if meets(f):
            lo = f
        else:
            hi = f
            break
    if hi is not None:
        for _ in range(BISECTIONS):
            mid = round((lo + hi) / 2, 4)
            if meets(mid):
                lo = mid
            else:
                hi = mid
    h = Headroom(lo, hi, sorted(tried, key=lambda r: r["load_factor"]))
    if growth_pct is not None:
        h.growth_pct_per_year = growth_pct
        h.years, h.runs_out = lasts(lo, growth_pct, today or dt.date.today())
    return h


def headroom_line(h: dict) -> str:
    """One line for the terminal and the report."""
    if h.get("note"):
        return f"headroom: not measured ({h['note']})"
    lf, fails = h["load_factor"], h["fails_at"]
    head = (f"headroom: meets the targets up to {lf:g}x the trace's load"
            + (f", misses at {fails:g}x" if fails is not None else f" (the highest tried; {STEPS[-1]:g}x still meets)"))
    if h.get("growth_pct_per_year") is not None:
        head += (f"; at {h['growth_pct_per_year']:g} %/year growth that lasts {h['years']:.1f} years "
                 f"(to {h['runs_out']})")
    return head
