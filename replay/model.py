"""The interface of the replay models: the page-cache kernels (``replay.kernels``) and the array model.

The array model (``replay.array``) is one ``Model``; its mechanisms (DRAM cache, SSD cache, FAST
VP, snapshots, all-flash) are not models of their own but steps of its compiled loop.

Three things are kept apart, as scikit-learn keeps constructor parameters apart from fitted
state and libCacheSim gives every eviction policy the same operations:

* **Parameters** are the model object itself: immutable, validated in ``__init__``, built from
  a scenario section with ``Model.from_section({...})`` (keys are constructor arguments; an
  argument named ``*_bytes`` also accepts a size string such as ``"8GiB"``; unknown keys are an
  error naming them). ``model.params()`` gives them back as a plain dict (for scenario hashes).
* **State** is an explicit object returned by ``model.new_state()``: plain numpy arrays indexed by
  dense page id plus scalar counters, nothing else. It is picklable and ``copy.deepcopy``-able,
  so a replay can be checkpointed, forked into what-if branches, or sent to another worker.
* **Replay** is ``model.replay(state, segment) -> outcomes``: it mutates ``state`` and returns a
  dict of per-request numpy arrays (each of length ``segment.n_requests``). Feeding a trace in any
  number of segments gives bit-identical outcomes and counters to one pass, which is how traces
  larger than memory replay. ``model.counters(state)`` gives the cumulative totals as a dict
  of plain ints and floats.

A :class:`Segment` carries a slice of the trace at two granularities, as contiguous numpy arrays:
requests (time, op, volume, offset, size) and the cache pages they touch (dense page id, page
number, bytes of the request inside the page, and which request each page belongs to).
``replay.pages.SegmentBuilder`` makes segments from canonical request frames; dense page ids are
given in first-appearance order across the whole trace, so ``segment.n_ids`` (distinct pages seen
up to and including this segment) tells a model how large its per-page arrays must be.

Typical use::

    model = LRU.from_section({"cache_bytes": "8GiB", "page_size_bytes": "4KiB"})
    state = model.new_state()
    for segment in segments:                 # any segmenting, same answer
        out = model.replay(state, segment) # out["hit_pages"][i]: pages of request i that hit
    model.counters(state)                # {"requests": ..., "pages": ..., "hits": ..., ...}
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from schemas.units import parse_size

Outcomes = dict[str, np.ndarray]


@dataclass(frozen=True, eq=False)
class Segment:
    """A slice of a trace: ``n_requests`` requests and the ``n_pages`` page accesses they make.

    Request arrays (length ``n_requests``), in global time order:
      ``ts_ns`` int64, ``op`` uint8 (``schemas.trace.OP_READ`` / ``OP_WRITE`` / ``OP_TRIM`` /
      ``OP_FLUSH``), ``volume`` int32 (dense volume id, first-appearance order), ``offset``
      int64 bytes, ``size_bytes`` int64.
    Page arrays (length ``n_pages``), request by request, pages of a request in address order:
      ``page_id`` int64 dense id of (volume, page number), ``page_no`` int64 page number within
      the volume (``offset // page_size``), ``page_req`` int64 index of the owning request
      within this segment (non-decreasing), ``page_bytes`` int64 bytes of the request inside the
      page (sums to ``size_bytes`` per request).
    A request of size 0 (e.g. a flush) touches no page.
    """

    ts_ns: np.ndarray
    op: np.ndarray
    volume: np.ndarray
    offset: np.ndarray
    size_bytes: np.ndarray
    page_id: np.ndarray
    page_no: np.ndarray
    page_req: np.ndarray
    page_bytes: np.ndarray
    page_size: int
    first_request: int  # global index of this segment's first request in the trace
    n_ids: int  # distinct page ids seen in the trace up to and including this segment

    @property
    def n_requests(self) -> int:
        return len(self.ts_ns)

    @property
    def n_pages(self) -> int:
        return len(self.page_id)

    def pages_per_request(self) -> np.ndarray:
        """int64 count of pages each request touches."""
        return np.bincount(self.page_req, minlength=self.n_requests).astype(np.int64)


class Model(ABC):
    """Base of every replay model. Subclasses set ``name``, validate in ``__init__`` and implement
    ``new_state``, ``replay`` and ``counters`` (see the module docstring for the contract)."""

    name: ClassVar[str]

    @classmethod
    def from_section(cls, section: Mapping[str, Any]) -> Model:
        """Build from a scenario/dict section; ``*_bytes`` values may be size strings."""
        sig = inspect.signature(cls.__init__)
        allowed = [p for p in sig.parameters if p != "self"]
        unknown = sorted(set(section) - set(allowed))
        if unknown:
            raise ValueError(f"{cls.name}: unknown parameter(s) {', '.join(unknown)}; "
                             f"allowed: {', '.join(allowed)}")
        kwargs = {k: (parse_size(v) if k.endswith("_bytes") and isinstance(v, str) else v)
                  for k, v in section.items()}
        return cls(**kwargs)

    def params(self) -> dict[str, Any]:
        """Constructor parameters as given (read back from attributes of the same name)."""
        sig = inspect.signature(type(self).__init__)
        return {p: getattr(self, p) for p in sig.parameters if p != "self"}

    @abstractmethod
    def new_state(self) -> Any:
        """A fresh, empty state (picklable; deep-copyable)."""

    @abstractmethod
    def replay(self, state: Any, segment: Segment) -> Outcomes:
        """Run one segment: mutate ``state``, return per-request numpy arrays."""

    @abstractmethod
    def counters(self, state: Any) -> dict[str, int | float]:
        """Cumulative totals since ``new_state()``."""

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{type(self).__name__}({args})"


MODELS: dict[str, type[Model]] = {}


def register(cls: type[Model]) -> type[Model]:
    """Class decorator: make a model available by its ``name`` (for scenarios and the CLI)."""
    if cls.name in MODELS and MODELS[cls.name] is not cls:
        raise ValueError(f"model name {cls.name!r} registered twice")
    MODELS[cls.name] = cls
    return cls


def model_from_section(kind: str, section: Mapping[str, Any]) -> Model:
    """The registered model ``kind`` built from ``section``."""
    if kind not in MODELS:
        raise LookupError(f"unknown model {kind!r}; known: {', '.join(sorted(MODELS))}")
    return MODELS[kind].from_section(section)
