"""Calibrate a ``[device]`` (``replay.mech.device``) from several fio captures, and its out-of-sample error.

Each parameter comes from the captures that identify it (``calibrate --measured A --measured B ...``):

* **host stack time** (``host_us`` for reads, ``write_host_us``): a queue-depth-1 capture's fio mean
  latency minus the device's own time from iostat (``pipelines.calibrate``, the single-capture
  estimator), per direction;
* **service time per direction** (``read_latency_us``, ``write_latency_us``) and **media rate**
  (``read_mib_per_s``, ``write_mib_per_s``): the queue-depth-1 runs' fio latency minus the host time,
  against the request size: a line through two or more sizes (a random 4 KiB run and a sequential run
  of 128 KiB or more) gives rate (slope) and fixed latency (intercept); one size keeps the default rate;
* **queue behaviour** (``parallel_exponent``, ``write_parallel_exponent``, ``parallelism``): the
  deep-queue runs of small requests, the exponent whose simulated IOPS best match theirs (least
  squares of the log ratios); read runs at two depths (QD4 and QD32) also place the knee N; with
  reads at depth 2 as well, the law comes from the deeper ones and the gain of two requests over one
  (``read_gain_at_2``) from depth 2 (a virtual disk gains less at its first step than the law through
  QD4 and QD32 gives: the host's time, hidden in the model from two requests on, is not all hidden);
* **throughput cap** (``max_mib_per_s``): a deep sequential run whose bandwidth the queue law alone
  overshoots by more than 5 %: the cap that reproduces it;
* **write cache** (``write_cache_bytes``): when writes are faster than reads (depth-1 service or
  deep-queue IOPS), writes are acknowledged from a cache; it is at least as large as the most any
  write run wrote without slowing down, and it drains at the reads' media rate (not identified: no
  run filled it). What the drain costs the reads (``drain_latency_us``: media time per drained write,
  which reads wait behind) comes from the deep read/write mixes, which the cache-path writes alone
  make too fast (a virtual disk: 4 KiB writes at QD32 1.5-1.8x the reads, a 50/50 mix at QD16 no
  faster than the reads alone).

A capture's workload is rebuilt for the model as fio ran it: a closed loop at fio's iodepth of its
block size, reads with fio's read share (the device model looks at op and size only, not offsets).
What the captures do not identify keeps the schema's default, and the result says so.

``--holdout`` leaves each capture out in turn, calibrates on the rest and predicts it: the per-capture
and mean absolute error of IOPS and of the mean latency, the model's error on a workload it was not
fitted to. A capture that alone identifies a parameter (the only depth-1 write run, say) is predicted
with that parameter's default, so its error is the default's: ``lost`` names those parameters, and
the ``covered_*`` means leave such captures out (the error on workloads the rest of the suite spans).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from pipelines.capture import find_capture
from pipelines.ingest_logs import find_measured
from pipelines.progress import Progress
from replay.mech.device.schema import DEVICE, TRANSFER_REF_BYTES

MIB = float(1 << 20)
#: requests simulated per workload when fitting (after WARMUP_SHARE of them)
FIT_REQUESTS = 10_000
WARMUP_SHARE = 0.1
#: a deep sequential run whose bandwidth the queue law overshoots by more than this is cap-bound
CAP_MARGIN = 0.05
#: a deep-queue run of requests at most this large identifies the queue law
SMALL_BYTES = 64 << 10
#: knees (``parallelism``) tried when read runs at two depths place it
KNEES = (2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 128, 256)
#: sequential runs at least this large identify the media rate and the cap
LARGE_BYTES = 128 << 10
#: deep runs of requests from this size up to LARGE_BYTES tell how much transfers overlap
#: (``transfer_overlap``: 0 one link, 1 in parallel) apart from a cap
TRANSFER_BYTES = 16 << 10
#: rounds of (queue law at the overlap, overlap and cap at the law): the second corrects the first law's
#: bias from fitting at full overlap
OVERLAP_ROUNDS = 2
#: read size exponents searched (``read_size_exponent``, depth-1 reads at three or more sizes)
SIZE_EXPONENTS = (0.3, 1.0)
#: the drain of a cached write is searched up to this many 4 KiB reads' service time
DRAIN_MAX_READS = 10
DEFAULTS = {p.name: p.default for p in DEVICE.params}


@dataclass
class Workload:
    """What fio ran in one capture, and what it measured (fio's totals)."""

    capture_id: str
    label: str
    rw: str
    bs_bytes: int
    iodepth: int
    read_share: float
    sequential: bool
    iops: float
    lat_mean_ms: float
    read_lat_mean_ms: float | None
    write_lat_mean_ms: float | None
    read_iops: float
    write_iops: float
    mb_per_s: float
    write_bytes: int
    host_us: float | None = None
    host_note: str = ""

    @property
    def dirs(self) -> tuple[str, ...]:
        return tuple(d for d, n in (("read", self.read_iops), ("write", self.write_iops)) if n > 0)


@dataclass
class DeviceFit:
    """The fitted ``[device]`` parameters, where each came from, and what fell back to a default."""

    params: dict
    sources: dict[str, str]
    not_identified: list[dict]
    workloads: list[dict]
    fitted: list[dict] = field(default_factory=list)  # every capture predicted by the fit (in-sample)
    holdout: dict | None = None
    scenario_toml: str = ""
    calibration_id: str = ""
    stored: str = ""

    def summary(self) -> dict:
        return asdict(self)


# --------------------------------------------------------------------------------------------
# captures -> workloads
# --------------------------------------------------------------------------------------------
def workload_of(data_dir: str | Path, ref: str, with_host: bool = True) -> Workload:
    """A capture's fio job and totals (``fio_job``), and at queue depth 1 its host stack time."""
    cap = find_capture(data_dir, ref)
    if "fio" not in cap.get("datasets", {}):
        raise ValueError(f"capture {cap['capture_id']} has no fio dataset: calibration needs fio's totals")
    jobs = find_measured(data_dir, cap["datasets"]["fio"]).scan("fio_job") \
        .filter((pl.col("error") == 0) & (pl.col("total_ios") > 0)).collect()
    if jobs.height == 0:
        raise ValueError(f"capture {cap['capture_id']}: no successful fio job with I/O")
    if jobs.select("doc", "job_index").unique().height > 1:
        raise ValueError(f"capture {cap['capture_id']}: {jobs.select('doc', 'job_index').unique().height} fio jobs; "
                         "device calibration takes one job per capture (as calibrate-suite writes them)")
    rw = str(jobs["rw"][0] or "read")
    per = {}
    for d in ("read", "write"):
        j = jobs.filter(pl.col("dir") == d)
        per[d] = (float(j["iops"].sum()), float(j["lat_mean_ns"][0]) / 1e6 if j.height else None,
                  int(j["io_bytes"].sum()) if j.height else 0)
    r_iops, w_iops = per["read"][0], per["write"][0]
    iops = r_iops + w_iops
    lat = ((per["read"][1] or 0.0) * r_iops + (per["write"][1] or 0.0) * w_iops) / iops
    bs = int(jobs["bs_bytes"].drop_nulls()[0]) if jobs["bs_bytes"].drop_nulls().len() else 4096
    depth = int(jobs["iodepth"].fill_null(1).max())
    w = Workload(
        capture_id=cap["capture_id"], label=f"{rw} {bs // 1024} KiB QD{depth}", rw=rw, bs_bytes=bs, iodepth=depth,
        read_share=r_iops / iops, sequential=rw in ("read", "write", "rw", "readwrite"), iops=iops,
        lat_mean_ms=lat, read_lat_mean_ms=per["read"][1], write_lat_mean_ms=per["write"][1], read_iops=r_iops,
        write_iops=w_iops, mb_per_s=float(jobs["bw_bytes_per_s"].sum()) / 1e6, write_bytes=per["write"][2])
    if with_host and depth == 1:
        from pipelines.calibrate import calibrate as single

        try:
            c = single(data_dir, cap["capture_id"], min_intervals=2)
            w.host_us, w.host_note = c.host_overhead_us, c.host_note
        except (ValueError, LookupError) as e:
            w.host_note = f"no iostat split: {e}"
    return w


# --------------------------------------------------------------------------------------------
# the model on a workload
# --------------------------------------------------------------------------------------------
def scenario_toml(params: dict, name: str = "device", description: str = "", outstanding: int = 1,
                  comments: list[str] | None = None) -> str:
    """A complete scenario of the device alone (``[device]`` on; the RAID group and pool the format
    needs are not used by it), closed loop at ``outstanding``."""
    lines = [f"# {c}" for c in comments or []]
    lines += [f'name = "{name}"', f'description = "{description}"', "",
              "[controller]", "overhead_us = 0.0  # the host stack time is [device] host_us", "",
              "[dram]", 'mode = "mcx"', 'cache_bytes = "4KiB"  # unused: a device has no array cache',
              'page_bytes = "4KiB"', 'flush_unit_bytes = "4KiB"', "",
              "[drive_classes.device]", 'kind = "ssd"  # unused: [device] replaces the RAID back end', "",
              "[[raid_groups]]", 'name = "device"', "level = 0", "width = 1", 'drive_class = "device"',
              'stripe_element_bytes = "256KiB"', "", "[[pools]]", 'name = "device"', 'raid_groups = ["device"]', "",
              "[device]"]
    for p in DEVICE.params:
        if p.name == "enabled" or params.get(p.name) is None:
            continue
        v = params[p.name]
        g = f"{v:.6g}" if p.kind == "float" else ""
        val = (("true" if v else "false") if p.kind == "bool" else str(int(v)) if p.kind in ("int", "size") else
               g if "." in g or "e" in g else g + ".0")
        note = params.get("_notes", {}).get(p.name)
        lines.append(f"{p.name} = {val}" + (f"  # {note}" if note else ""))
    lines += ["", "[replay]", 'mode = "closed"', f"outstanding = {int(outstanding)}", ""]
    return "\n".join(lines)


def _frame(w: Workload, n: int, seed: int = 7) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    op = np.where(rng.random(n) < w.read_share, 0, 1).astype(np.uint8)
    span = max(1, (1 << 30) // w.bs_bytes)
    off = (np.arange(n) % span if w.sequential else rng.integers(0, span, n)).astype(np.int64) * w.bs_bytes
    return pl.DataFrame({"ts_ns": np.arange(n, dtype=np.int64), "volume": ["device"] * n, "op": op,
                         "offset": off, "size": np.full(n, w.bs_bytes, dtype=np.int64)})


#: the synthetic request stream of each workload predicted, built once (a fit predicts each hundreds of
#: times); at most SEGMENTS_MAX of them (~1 MB each) in a long-lived process
_SEGMENTS: dict = {}
SEGMENTS_MAX = 256


_BASES: dict = {}


def _scenario(params: dict, outstanding: int):
    """The device scenario of ``params`` at ``outstanding``: a scenario parsed once per depth (the
    defaults) with its ``[device]`` replaced, each value checked as the file's would be. A fit builds
    thousands; parsing each from TOML took a quarter of a prediction."""
    from dataclasses import replace

    from replay.scenario import loads

    base = _BASES.get(outstanding)
    if base is None:
        base = _BASES[outstanding] = loads(scenario_toml({}, outstanding=outstanding), "<device fit>")
    values = {p.name: params[p.name] for p in DEVICE.params if p.name != "enabled" and params.get(p.name) is not None}
    DEVICE.read(values, lambda key, msg: ValueError(f"[device] {key}: {msg}"))
    return replace(base, sections={**base.sections, "device": replace(base.sections["device"], **values)})


def predict(params: dict, w: Workload, n: int = FIT_REQUESTS) -> dict:
    """The model's IOPS and mean latency (ms) for workload ``w`` (closed loop at its iodepth),
    over the requests after the first WARMUP_SHARE."""
    from replay.array import ArrayModel
    from replay.pages import SegmentBuilder

    sc = _scenario(params, w.iodepth)
    key = (w.capture_id, w.bs_bytes, w.read_share, w.sequential, n, sc.dram.page_bytes)
    if key not in _SEGMENTS:
        if len(_SEGMENTS) >= SEGMENTS_MAX:
            _SEGMENTS.clear()
        _SEGMENTS[key] = SegmentBuilder(sc.dram.page_bytes).build(_frame(w, n))
    seg = _SEGMENTS[key]
    model = ArrayModel(sc)
    state = model.new_state()
    state.volume_names = ["device"]
    out = model.replay(state, seg)
    arr, done = out["arrival_ns"].copy(), out["done_ns"].copy()
    k = int(n * WARMUP_SHARE)
    span = done[k:].max() - arr[k]
    iops = (n - k) / span * 1e9 if span > 0 else float("inf")
    return {"iops": float(iops), "lat_mean_ms": float((done[k:] - arr[k:]).mean() / 1e6)}


def _err(model: float, measured: float) -> float:
    return 100.0 * (model - measured) / measured


# --------------------------------------------------------------------------------------------
# the fit
# --------------------------------------------------------------------------------------------
def _transfer_units(b: np.ndarray, e: float) -> np.ndarray:
    """Bytes a read of ``b`` bytes transfers as, at size exponent ``e`` (``replay.mech.device.kernel.read_transfer_ns``)."""
    return np.where(b >= TRANSFER_REF_BYTES, b, TRANSFER_REF_BYTES * (b / TRANSFER_REF_BYTES) ** e)


def read_transfer_us(p: dict, size_bytes: int) -> float:
    """A read's transfer time (us) under ``p``'s rate and size exponent."""
    units = float(_transfer_units(np.array([float(size_bytes)]), p.get("read_size_exponent", 1.0))[0])
    return units / (p["read_mib_per_s"] * MIB) * 1e6


def _size_law(pts: list) -> tuple[float, float, float] | None:
    """(size exponent, MiB/s, fixed latency us) of the curve ``latency = a + b x units(size, e)`` that
    fits the depth-1 read points ``(bytes, ms, workload)`` best (least squares, e on a grid of 0.01)."""
    x = np.array([b for b, _, _ in pts], dtype=float)
    y = np.array([ms for _, ms, _ in pts])
    best = None
    for e in np.round(np.arange(SIZE_EXPONENTS[0], SIZE_EXPONENTS[1] + 1e-9, 0.01), 2):
        u = _transfer_units(x, e)
        slope, icpt = np.polyfit(u, y, 1)
        if slope <= 0 or icpt <= 0:
            continue
        sse = float(((icpt + slope * u - y) ** 2).sum())
        if best is None or sse < best[0] - 1e-15:
            best = (sse, float(e), 1e3 / (slope * MIB), icpt * 1e3)
    return best[1:] if best else None


def _minimize(f, lo: float, hi: float, grid: int = 17, iters: int = 16, log: bool = False) -> float:
    """The minimum of ``f`` on [lo, hi]: the best point of a grid (plateaus, such as a cap that does
    not bind, defeat a pure golden-section search), then golden-section between its neighbours."""
    xs = np.geomspace(lo, hi, grid) if log else np.linspace(lo, hi, grid)
    fs = [f(float(x)) for x in xs]
    i = int(np.argmin(fs))
    a, b = float(xs[max(i - 1, 0)]), float(xs[min(i + 1, grid - 1)])
    g = (math.sqrt(5) - 1) / 2
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(iters):
        if fc <= fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = f(d)
    best = min(((fs[i], float(xs[i])), (fc, c), (fd, d)))
    return best[1]


def _fallback(p: dict, src: dict, missing: list, name: str, why: str, value=None) -> None:
    """Parameter ``name`` keeps its default (or ``value``), and the fit says why."""
    if value is not None:
        p[name] = value
    missing.append({"parameter": name, "default": p[name], "why": why})
    src[name] = f"default ({why})"


def _iops_loss(p: dict, runs: list[Workload]) -> float:
    """Sum of squared log ratios of the model's IOPS to the measured ones."""
    return sum(math.log(predict(p, w)["iops"] / w.iops) ** 2 for w in runs)


def _queue_law(p: dict, src: dict, missing: list, deep: list[Workload]) -> None:
    """The queue law (exponent per direction, the knee) from the deep runs of small requests, into
    ``p`` (its ``transfer_overlap`` as given), with their sources and what fell back."""
    def fallback(name: str, why: str, value=None) -> None:
        _fallback(p, src, missing, name, why, value)

    # queue behaviour: deep runs of small requests of one direction (the exponent per direction);
    # read runs at two or more depths also place the knee N, where the gain stops growing
    # (requests under TRANSFER_BYTES when there are some: their transfer is too short to confound it)
    small = ([w for w in deep if w.bs_bytes < TRANSFER_BYTES] or [w for w in deep if w.bs_bytes <= SMALL_BYTES])
    reads = [w for w in small if w.dirs == ("read",)]
    depths = sorted({w.iodepth for w in reads})
    for d, key in (("read", "parallel_exponent"), ("write", "write_parallel_exponent")):
        runs = [w for w in small if w.dirs == (d,)]
        if not runs:
            continue

        def loss(e: float, key=key, runs=runs, n=None) -> float:
            q = dict(p, **{key: e}, **({"parallelism": n} if n else {}))
            return _iops_loss(q, runs)

        if d == "read" and len(depths) >= 2:
            # depth 2 and two deeper depths: the law from the deeper ones, g(2) from depth 2
            first = [w for w in runs if w.iodepth == 2] if len([x for x in depths if x > 2]) >= 2 else []
            if first:
                runs = [w for w in runs if w.iodepth != 2]
            best = None
            for n in [k for k in KNEES if k <= depths[-1]]:
                e = _minimize(lambda x, n=n, runs=runs: loss(x, runs=runs, n=n), 0.0, 1.0, grid=11, iters=10)
                v = loss(e, runs=runs, n=n)
                if best is None or v < best[0] - 1e-9:
                    best = (v, n, e)
            _, p["parallelism"], p[key] = best
            p[key] = round(p[key], 4)
            if first:
                p["read_gain_at_2"] = round(_minimize(
                    lambda g, first=first: _iops_loss(dict(p, read_gain_at_2=g), first), 1.0, 2.0, grid=11, iters=10), 4)
                src["read_gain_at_2"] = "fitted to the IOPS of " + ", ".join(f"{w.label} ({w.iops:,.0f})" for w in first)
            src["parallelism"] = ("the knee that, with its exponent, best fits the IOPS of "
                                  + ", ".join(f"{w.label} ({w.iops:,.0f})" for w in runs))
        else:
            p[key] = round(_minimize(loss, 0.0, 1.0), 4)
        src[key] = "fitted to the IOPS of " + ", ".join(f"{w.label} ({w.iops:,.0f})" for w in runs)
    if "parallel_exponent" not in src and "write_parallel_exponent" in src:
        fallback("parallel_exponent", "no deep read run of requests <= 64 KiB: the writes' exponent",
                 p.pop("write_parallel_exponent"))
        src.pop("write_parallel_exponent")
    elif "parallel_exponent" not in src:
        fallback("parallel_exponent", "no deep-queue capture of one direction with requests <= 64 KiB")
    elif "write_parallel_exponent" not in src:
        missing.append({"parameter": "write_parallel_exponent", "default": None,
                        "why": "no deep write run of requests <= 64 KiB: writes share the reads' exponent"})
    if "read_gain_at_2" not in src:
        missing.append({"parameter": "read_gain_at_2", "default": None,
                        "why": "no depth-2 read run beside reads at two deeper depths: g(2) follows the law"})
    if "parallelism" not in src:
        why = (f"read runs at one depth only ({depths[0]}): the knee is not placed" if depths else
               "no deep-queue read run of requests <= 64 KiB")
        fallback("parallelism", why)


def _cap(p: dict, src: dict, missing: list, deep: list[Workload]) -> None:
    """The throughput cap from the deep sequential runs the queue law overshoots, into ``p``."""
    def fallback(name: str, why: str, value=None) -> None:
        _fallback(p, src, missing, name, why, value)

    # throughput cap: deep sequential runs the queue law overshoots
    big = [w for w in deep if w.bs_bytes >= LARGE_BYTES]
    capped = []
    for w in big:
        free = predict(p, w)
        if free["iops"] > w.iops * (1 + CAP_MARGIN):
            capped.append(w)
    if capped:
        def cap_loss(mib: float) -> float:
            q = dict(p, max_mib_per_s=mib)
            return _iops_loss(q, capped)

        hi = max(w.iops * w.bs_bytes for w in capped) / MIB * 2
        p["max_mib_per_s"] = round(_minimize(cap_loss, hi / 20, hi, log=True), 1)
        src["max_mib_per_s"] = "fitted to the bandwidth of " + ", ".join(f"{w.label} ({w.mb_per_s:,.0f} MB/s)"
                                                                          for w in capped)
    elif big:
        fallback("max_mib_per_s", "the deep sequential runs reach what the queue law gives: no cap seen", 0.0)
    else:
        fallback("max_mib_per_s", "no deep sequential capture of 128 KiB or more", 0.0)


def _drain(p: dict, src: dict, missing: list, mixes: list[Workload]) -> None:
    """The media time of a cached write's drain (``drain_latency_us``) from the deep read/write mixes,
    into ``p``: with a write cache, the writes alone are fast, and a mix shows what they cost the reads."""
    if not p.get("write_cache_bytes"):
        return
    if not mixes:
        _fallback(p, src, missing, "drain_latency_us", "no deep read/write mix: the drain costs reads nothing")
        return
    hi = DRAIN_MAX_READS * (p["read_latency_us"] + read_transfer_us(p, 4096))
    p["drain_latency_us"] = round(_minimize(lambda x: _iops_loss(dict(p, drain_latency_us=x), mixes), 0.0, hi,
                                            grid=17, iters=12), 2)
    src["drain_latency_us"] = "fitted to the IOPS of " + ", ".join(f"{w.label} ({w.iops:,.0f})" for w in mixes)


def fit(workloads: list[Workload]) -> DeviceFit:
    """``[device]`` parameters from the workloads that identify each (module doc)."""
    if not workloads:
        raise ValueError("no captures to calibrate from")
    p: dict = {k: v for k, v in DEFAULTS.items() if k != "enabled" and v is not None}
    src: dict[str, str] = {}
    notes: dict[str, str] = {}
    missing: list[dict] = []

    def fallback(name: str, why: str, value=None) -> None:
        _fallback(p, src, missing, name, why, value)

    qd1 = [w for w in workloads if w.iodepth == 1]
    deep = [w for w in workloads if w.iodepth > 1]
    # host stack time per direction: queue-depth-1 captures of one direction with an iostat split
    host_ms = {}
    for d, key in (("read", "host_us"), ("write", "write_host_us")):
        hosts = [w for w in qd1 if w.host_us is not None and w.dirs == (d,)]
        if hosts:  # I/O-weighted over the runs (each one's fio latency - iostat device time)
            p[key] = sum(w.host_us * w.iops for w in hosts) / sum(w.iops for w in hosts)
            src[key] = "; ".join(f"{w.label} ({w.capture_id}): {w.host_note}" for w in hosts)
        elif d == "write" and "host_us" in src:
            p[key] = p["host_us"]
            src[key] = "the reads' host_us (no depth-1 write capture with iostat device time)"
        else:
            fallback(key, f"no depth-1 {d} capture with iostat device time", 0.0)
        host_ms[d] = p[key] / 1e3
    # service time and media rate per direction, from queue depth 1: a line over sizes where there
    # are two or more; with one size, the other direction's rate (a small request: mostly fixed
    # latency) or its fixed latency (a large one: mostly transfer) is borrowed
    single = {}
    for d in ("read", "write"):
        pts = [(w.bs_bytes, getattr(w, f"{d}_lat_mean_ms") - host_ms[d], w) for w in qd1 if d in w.dirs]
        lat_k, rate_k = f"{d}_latency_us", f"{d}_mib_per_s"
        if not pts:
            fallback(lat_k, f"no queue-depth-1 capture with {d}s")
            fallback(rate_k, f"no queue-depth-1 capture with {d}s")
            continue
        sizes = sorted({b for b, _, _ in pts})
        if d == "read" and len(sizes) >= 3:
            law = _size_law(pts)
            if law is not None:
                p["read_size_exponent"], p[rate_k], p[lat_k] = law
                labels = ", ".join(w.label for _, _, w in pts)
                src["read_size_exponent"] = f"the curve of depth-1 read latency over request size ({labels})"
                src[rate_k] = f"the same curve's slope at {TRANSFER_REF_BYTES >> 10} KiB and up ({labels})"
                src[lat_k] = f"the same curve's intercept, less the host time ({labels})"
                continue
        if d == "read":
            _fallback(p, src, missing, "read_size_exponent",
                      (f"depth-1 reads at {len(sizes)} size(s), a curve needs three" if len(sizes) < 3 else
                       "no curve over the depth-1 read sizes has a positive slope and intercept")
                      + ": the transfer is size / rate")
        if len(sizes) >= 2:
            x = np.array([b for b, _, _ in pts], dtype=float)
            y = np.array([s for _, s, _ in pts])
            slope, icpt = np.polyfit(x, y, 1)  # ms per byte, ms
            if slope > 0 and icpt > 0:
                p[rate_k] = 1e3 / (slope * MIB)
                p[lat_k] = icpt * 1e3
                labels = ", ".join(w.label for _, _, w in pts)
                src[rate_k] = f"slope of depth-1 {d} latency over request size ({labels})"
                src[lat_k] = f"intercept of the same line, less the host time ({labels})"
                continue
            single[d] = (min(pts, key=lambda t: t[0]), f"depth-1 {d} latency does not grow with size "
                                                        f"(slope {slope * 1e3 * MIB:.3g} ms/MiB)")
        else:
            single[d] = (pts[0], f"one {d} request size at depth 1 ({sizes[0]} B)")
    for d, ((b, s, w), why) in single.items():
        lat_k, rate_k = f"{d}_latency_us", f"{d}_mib_per_s"
        o = "write" if d == "read" else "read"
        lined = src.get(f"{o}_mib_per_s", "").startswith("slope")
        if lined and b >= SMALL_BYTES and s * 1e3 > p[f"{o}_latency_us"]:
            fallback(lat_k, f"{why}: the {o}s' fixed latency", p[f"{o}_latency_us"])
            p[rate_k] = b / MIB / ((s * 1e3 - p[lat_k]) / 1e6)
            src[rate_k] = f"{w.label} ({w.capture_id}): its latency less the host time and the {o}s' fixed latency"
            continue
        fallback(rate_k, f"{why}: the {o}s' media rate" if lined else why,
                 p[f"{o}_mib_per_s"] if lined else None)
        p[lat_k] = max(1.0, (s - b / (p[rate_k] * MIB) * 1e3) * 1e3)
        src[lat_k] = f"{w.label} ({w.capture_id}): fio {d} latency less the host time and the transfer"
    # write cache: writes faster than reads
    faster = []
    if "read_latency_us" in src and "write_latency_us" in src and not src["write_latency_us"].startswith("default"):
        r4 = p["read_latency_us"] + read_transfer_us(p, 4096)
        w4 = p["write_latency_us"] + 4096 / (p["write_mib_per_s"] * MIB) * 1e6
        if w4 < r4:
            faster.append(f"a 4 KiB write at depth 1 takes {w4:.1f} us, a read {r4:.1f} us")
    pairs = {(w.bs_bytes, w.iodepth): w for w in deep if w.read_share == 1.0}
    for w in deep:
        r = pairs.get((w.bs_bytes, w.iodepth))
        if w.read_share == 0.0 and r is not None and w.iops > r.iops:
            faster.append(f"{w.label} {w.iops:,.0f} IOPS > {r.label} {r.iops:,.0f}")
    writers = [w for w in workloads if w.write_bytes]
    if faster and writers:
        top = max(writers, key=lambda w: w.write_bytes)
        p["write_cache_bytes"] = int(top.write_bytes)
        src["write_cache_bytes"] = (f"writes faster than reads ({'; '.join(faster)}): a write cache at least as large "
                                    f"as the {top.write_bytes / MIB:,.0f} MiB {top.label} wrote without filling it")
        missing.append({"parameter": "drain_mib_per_s", "default": 0.0,
                        "why": "no run filled the write cache: it drains at the reads' media rate"})
        src["drain_mib_per_s"] = "default: the reads' media rate (no run filled the cache)"
    else:
        fallback("write_cache_bytes", "writes are not faster than reads" if writers else "no write capture", 0)
    # queue law and cap, and how much the transfers overlap: the deep runs choose. The queue law
    # comes from small requests (little transfer), so it is fitted at full overlap, the overlap and
    # cap chosen with it, the law refitted at that overlap, and the overlap chosen again (OVERLAP_ROUNDS);
    # then the law is fitted once more at the overlap it is used with (fitted one round before it, it
    # left the small reads' IOPS 2-5 % low at every depth)
    mid = [w for w in deep if TRANSFER_BYTES <= w.bs_bytes < LARGE_BYTES]
    if mid:
        def trial(o: float, law: tuple) -> tuple:
            tp, ts, tm = dict(law[0], transfer_overlap=o), dict(law[1]), list(law[2])
            _cap(tp, ts, tm, deep)
            return _iops_loss(tp, deep), tp, ts, tm

        o = 1.0
        for _ in range(OVERLAP_ROUNDS):
            law = (dict(p, transfer_overlap=o), dict(src), list(missing))
            _queue_law(*law, deep)
            trials: dict[float, tuple] = {}
            o = round(_minimize(lambda x, law=law, trials=trials: trials.setdefault(
                round(x, 3), trial(round(x, 3), law))[0], 0.0, 1.0, grid=5, iters=6), 3)
        law = (dict(p, transfer_overlap=o), dict(src), list(missing))
        _queue_law(*law, deep)
        loss, p, src, missing = trial(o, law)
        ends = ", ".join(f"{x:g}: {trials[x][0]:.3g}" for x in (0.0, 1.0))
        src["transfer_overlap"] = (f"the overlap whose queue law and cap fit the deep runs' IOPS best (loss {loss:.3g}; "
                                   f"{ends}), decided by " + ", ".join(f"{w.label} ({w.iops:,.0f})" for w in mid))
    else:
        _queue_law(p, src, missing, deep)
        _cap(p, src, missing, deep)
        _fallback(p, src, missing, "transfer_overlap", f"no deep-queue run of {TRANSFER_BYTES >> 10}-"
                                                       f"{(LARGE_BYTES >> 10) - 1} KiB requests: transfer and cap "
                                                       "cannot be told apart")
    _drain(p, src, missing, [w for w in deep if w.dirs == ("read", "write")])
    for k in list(p):
        if isinstance(p[k], float):
            p[k] = float(f"{p[k]:.6g}")
    notes.update({k: v[:150] for k, v in src.items()})
    fitted = []
    for w in workloads:
        m = predict(p, w)
        fitted.append({"capture_id": w.capture_id, "workload": w.label, "iops_measured": w.iops,
                       "iops_model": m["iops"], "iops_error_pct": _err(m["iops"], w.iops),
                       "lat_mean_ms_measured": w.lat_mean_ms, "lat_mean_ms_model": m["lat_mean_ms"],
                       "lat_error_pct": _err(m["lat_mean_ms"], w.lat_mean_ms)})
    return DeviceFit(params=dict(p, _notes=notes), sources=src, not_identified=missing,
                     workloads=[asdict(w) for w in workloads], fitted=fitted)


def holdout(workloads: list[Workload], full_fit: DeviceFit | None = None, progress: Progress | None = None) -> dict:
    """Leave each capture out, fit on the rest, predict it: per capture and the mean absolute
    errors of IOPS and mean latency (%). ``full_fit``: the fit on all of them, when made already;
    ``progress(fits done, fits)``."""
    if len(workloads) < 2:
        raise ValueError("--holdout needs at least 2 captures (one to leave out, one to fit on)")
    rows = []
    for i, w in enumerate(workloads):
        if progress:
            progress(i, len(workloads))
        rest = workloads[:i] + workloads[i + 1:]
        f = fit(rest)
        m = predict(f.params, w)
        rows.append({"capture_id": w.capture_id, "workload": w.label, "iops_measured": w.iops,
                     "iops_model": m["iops"], "iops_error_pct": _err(m["iops"], w.iops),
                     "lat_mean_ms_measured": w.lat_mean_ms, "lat_mean_ms_model": m["lat_mean_ms"],
                     "lat_error_pct": _err(m["lat_mean_ms"], w.lat_mean_ms),
                     "fell_back": [x["parameter"] for x in f.not_identified]})
    if progress:
        progress(len(workloads), len(workloads))
    full = {x["parameter"] for x in (full_fit or fit(workloads)).not_identified}
    covered = [r for r in rows if not set(r["fell_back"]) - full]
    for r in rows:
        r["lost"] = sorted(set(r["fell_back"]) - full)  # identified only by this capture
    return {"captures": rows,
            "mean_abs_iops_error_pct": float(np.mean([abs(r["iops_error_pct"]) for r in rows])),
            "mean_abs_lat_error_pct": float(np.mean([abs(r["lat_error_pct"]) for r in rows])),
            "covered_captures": len(covered),
            "covered_mean_abs_iops_error_pct": float(np.mean([abs(r["iops_error_pct"]) for r in covered]))
            if covered else None,
            "covered_mean_abs_lat_error_pct": float(np.mean([abs(r["lat_error_pct"]) for r in covered]))
            if covered else None}


def calibrate_device(data_dir: str | Path, refs: list[str], *, with_holdout: bool = False,
                     name: str = "device", progress: Progress | None = None) -> DeviceFit:
    """Fit ``[device]`` from the captures ``refs``; with ``with_holdout`` its out-of-sample error too,
    written into the scenario (comments and ``holdout_*_error_pct``). ``progress(fits done, fits)``:
    one fit, and one per capture with ``with_holdout`` (~8 s each for a 24-capture suite here)."""
    if len(set(refs)) != len(refs):
        raise ValueError("a capture is given twice with --measured")
    workloads = [workload_of(data_dir, r) for r in refs]
    fits = 1 + (len(workloads) if with_holdout else 0)
    if progress:
        progress(0, fits)
    f = fit(workloads)
    if progress:
        progress(1, fits)
    comments = [f"tiercast calibrate: [device] from {len(workloads)} captures: "
                + ", ".join(f"{w.label} ({w.capture_id})" for w in workloads)]
    for m in f.not_identified:
        comments.append(f"not identified: {m['parameter']} = default {m['default']} ({m['why']})")
    if with_holdout:
        f.holdout = holdout(workloads, full_fit=f,
                            progress=(lambda done, _n: progress(1 + done, fits)) if progress else None)
        h = f.holdout
        f.params["holdout_iops_error_pct"] = round(h["mean_abs_iops_error_pct"], 2)
        f.params["holdout_latency_error_pct"] = round(h["mean_abs_lat_error_pct"], 2)
        comments.append(f"calibration.holdout_error_pct: IOPS {h['mean_abs_iops_error_pct']:.1f} %, mean latency "
                        f"{h['mean_abs_lat_error_pct']:.1f} % (mean absolute, each capture predicted from the others)")
        for r in h["captures"]:
            comments.append(f"  holdout {r['workload']}: IOPS {r['iops_model']:,.0f} vs {r['iops_measured']:,.0f} "
                            f"({r['iops_error_pct']:+.1f} %), latency {r['lat_mean_ms_model']:.4f} vs "
                            f"{r['lat_mean_ms_measured']:.4f} ms ({r['lat_error_pct']:+.1f} %)")
    first = next((w for w in workloads if w.iodepth == 1), workloads[0])
    f.scenario_toml = scenario_toml(f.params, name=f"measured-{name}",
                                    description=f"device calibrated from {len(workloads)} fio captures",
                                    outstanding=first.iodepth, comments=comments)
    return f
