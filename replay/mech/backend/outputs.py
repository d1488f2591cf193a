"""The back end's per-request outcomes."""

from replay.outputs import Column

OUTCOMES = (
    Column("rg", "", "RAID group of the request's first page (-1: none)"),
    Column("backend_ios", "I/Os", "host-read drive operations the request caused"),
    Column("backend_busy_ns", "ns", "drive time of those operations"),
)

RECORDS: dict = {}

#: counters (``replay.array.ArrayModel.counters``): summary name -> field of the back end's record
#: (``replay.mech.backend.kernel.BACKEND``)
COUNTERS = {"backend_read_ios": "read_ios", "backend_write_ios": "write_ios", "backend_read_bytes": "read_bytes"}
