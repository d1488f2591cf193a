"""The event loop's own state and its record logs, shared by every mechanism of the array model.

``EVENTS`` (one record, :class:`replay.array.ArrayState`'s ``events``): ``now``, the time the
background work has been run to (flushers, adaptation ticks); ``next_ev``, a lower bound of the
next background event (the catch-up is skipped before it; a mechanism that schedules earlier work
lowers it).

Records: what happens at its own time rather than per request (a flush, a forced flush, a throttled
tick, an SSD cache promotion, a FAST VP relocation) goes to a *log* of its kind: a structured array
whose named fields a mechanism declares in its ``outputs.py`` (``RECORDS``: kind -> columns, all
int64) and a count of the rows written since the last drain. :data:`LOG_COLUMNS` gathers every
mechanism's kinds; :class:`Logs` holds one :class:`Log` of each (numba sees a NamedTuple of
NamedTuples). The kernel appends with :func:`append` and stops before a request when a log could
overflow (:func:`room`); ``replay.array`` then copies the rows out and, when needed, grows the log.
"""

from __future__ import annotations

from collections import namedtuple
from typing import NamedTuple

import numpy as np

from replay.jit import kernel, njit
from replay.layout import record
from replay.mech import MECHANISMS

INF = np.int64(1 << 62)

EVENTS = record([("now", np.int64), ("next_ev", np.int64)])

#: record kind -> its columns (``replay.outputs.Column``), from every mechanism's ``outputs.RECORDS``
LOG_COLUMNS = {kind: cols for m in MECHANISMS for kind, cols in m.module("outputs").RECORDS.items()}
#: the structured dtype of each kind's rows
LOG_DTYPES = {kind: record([(c.name, np.int64) for c in cols]) for kind, cols in LOG_COLUMNS.items()}
#: rows a new log holds
LOG_ROWS = 1 << 14


class Log(NamedTuple):
    """One kind's records: ``rows`` (its structured dtype) and ``n`` (int64[1]: rows written)."""

    rows: np.ndarray
    n: np.ndarray


Logs = namedtuple("Logs", list(LOG_COLUMNS))


def new_log(kind: str, rows: int = LOG_ROWS) -> Log:
    return Log(np.zeros(rows, dtype=LOG_DTYPES[kind]), np.zeros(1, dtype=np.int64))


def new_logs() -> Logs:
    return Logs(**{k: new_log(k) for k in LOG_COLUMNS})


def new_events() -> np.ndarray:
    ev = np.zeros(1, EVENTS)
    ev["next_ev"] = 0
    return ev


@kernel
def append(log):
    """The index of a new row at the end of ``log`` (the caller checked its room)."""
    i = log.n[0]
    log.n[0] = i + 1
    return i


@kernel
def room(log, k):
    """Whether ``k`` more rows fit in ``log``."""
    return log.n[0] + k <= log.rows.shape[0]


@njit
def _transpose(flat, r, out):
    for i in range(r):
        for k in range(out.shape[0]):
            out[k, i] = flat[i, k]


def columns(log: Log) -> dict[str, np.ndarray]:
    """The rows written to ``log`` as one array per field (new arrays: one compiled pass; numpy's
    transposing copy walks the rows once per field), and the log emptied."""
    r = int(log.n[0])
    names = log.rows.dtype.names
    out = np.empty((len(names), r), dtype=np.int64)
    if r:
        _transpose(log.rows[:r].view(np.int64).reshape(r, len(names)), r, out)
    log.n[0] = 0
    return {name: out[k] for k, name in enumerate(names)}
