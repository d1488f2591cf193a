"""``tiercast warm``: compile every kernel once (or load it from numba's cache) and say where the
compiled code lives, so a new install or worker's first command compiles nothing."""

from __future__ import annotations

from pipelines.cli.common import DataDirOpt, JsonOpt, app, console, out, print_json, progress_bar
from pipelines.cli.examples import epilog


@app.command(epilog=epilog("warm"))
def warm(data_dir: DataDirOpt = None, as_json: JsonOpt = False) -> None:
    """Compile every kernel the commands use (or load it from the cache) by running tiny replays
    through every preset, every cache policy and the curves in a temporary directory; print where
    the compiled code is and how long it took. --data-dir is accepted like on every command and
    not used."""
    from pipelines.warm import warm as run
    from replay.numba_cache import ENV, locate

    where = locate()
    with progress_bar("warm", "steps") as cb:
        res = run(progress=cb)
    if as_json:
        print_json({"cache_dir": res.cache_dir, "seconds": round(res.seconds, 1), "kernels": res.kernels})
        return
    if where.passed_over:
        console.print(f"note: {', '.join(map(str, where.passed_over))} cannot be written", highlight=False)
    out.print(f"{res.kernels} compiled kernels ready in {res.seconds:.1f} s", highlight=False)
    how = "set by NUMBA_CACHE_DIR" if where.rule == ENV else f"{where.rule}; NUMBA_CACHE_DIR overrides"
    out.print(f"compiled code in {res.cache_dir} ({how})", soft_wrap=True, highlight=False)
