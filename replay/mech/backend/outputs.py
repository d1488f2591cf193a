"""The back end's per-request outcomes."""

from replay.outputs import Column, Line

OUTCOMES = (
    Column("rg", "", "RAID group of the request's first page (-1: none)"),
    Column("backend_ios", "I/Os", "drive operations the request waited for: its read misses' and its FLARE "
                                  "write-aside writes'"),
    Column("backend_busy_ns", "ns", "drive time of those operations (and of page writes the cache could not hold)"),
)

RECORDS: dict = {}

#: counters (``replay.array.ArrayModel.counters``): summary name -> field of the back end's record
#: (``replay.mech.backend.kernel.BACKEND``)
COUNTERS = {"backend_read_ios": "read_ios", "backend_write_ios": "write_ios", "backend_read_bytes": "read_bytes"}

#: ``tiercast replay`` prints no line of its own for the back end (its per-group counters are in the
#: summary's ``raid_groups`` and the RAID-group intervals).
LINES: tuple[Line, ...] = ()
