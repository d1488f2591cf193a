"""The generated parts of the docs site, made from the code at build time (never committed).

A page asks for a generated block with a marker line, which ``mkdocs build`` (``make docs``) replaces
through :func:`on_page_markdown` (this module is the site's hook, ``mkdocs.yml``):

* ``<!-- generated: cli-reference -->``: every command's ``--help``, exactly as ``tiercast CMD
  --help`` prints it (:func:`cli_reference`; ``tests/test_docs.py`` compares the two).
* ``<!-- generated: mechanism NAME -->``: the scenario tables of one mechanism of the array model
  (``replay/mech/NAME/schema.py``, or ``replay/schema.py``'s :class:`~replay.schema.Section` of the
  core tables): every parameter with its type, unit, default, range, source and reference
  (:func:`mechanism_params`).
* ``<!-- generated: seed-figures -->``: the seed figures table of ``pipelines.seed_figures``.
* ``<!-- generated: presets -->``: the preset scenarios and the mechanisms each models.
* ``<!-- generated: fitted-ranges -->``: every fitted preset value and its physical range.
* ``<!-- generated: seed-figure-counts -->``: the seed figures of each kind, and the validation ones in tolerance.

A marker that names nothing known fails the build. Nothing here is imported by the ``tiercast``
command; the models and the CLI are imported when a page needs them.
"""

from __future__ import annotations

import re

#: the width of ``--help`` in the reference: what click prints on any terminal of 80 columns or more
#: (it caps help at 80 columns less a margin of 2)
HELP_WIDTH = 78

MARKER = re.compile(r"^<!-- generated: ([a-z-]+)(?: ([A-Za-z_]+))? -->$", re.M)


def command_names() -> list[str]:
    """Every ``tiercast`` command, sorted."""
    from pipelines.cli import COMMANDS

    return sorted(COMMANDS)


def command_help(name: str | None, width: int = HELP_WIDTH) -> str:
    """``tiercast NAME --help`` (``None``: ``tiercast --help``) as the command prints it on a
    terminal ``width`` columns wide."""
    import click
    import typer

    from pipelines.cli import app

    group = typer.main.get_command(app)
    root = click.Context(group, info_name="tiercast", terminal_width=width, max_content_width=width)
    if name is None:
        return group.get_help(root)
    cmd = group.get_command(root, name)
    ctx = click.Context(cmd, info_name=name, parent=root, terminal_width=width, max_content_width=width)
    return cmd.get_help(ctx)


def cli_reference() -> str:
    """The whole CLI reference: ``tiercast --help``, then one section per command."""
    out = ["## tiercast", "", "```text", command_help(None), "```", ""]
    for name in command_names():
        out += [f"## tiercast {name}", "", "```text", command_help(name), "```", ""]
    return "\n".join(out)


def _size(v: int) -> str:
    for unit, n in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if v >= n and v % n == 0:
            return f"{v // n} {unit}"
    return f"{v:,} B"


def _duration(ns: int) -> str:
    for unit, n in (("h", 3_600_000_000_000), ("min", 60_000_000_000), ("s", 1_000_000_000), ("ms", 1_000_000),
                    ("us", 1_000)):
        if ns >= n and ns % n == 0:
            return f"{ns // n} {unit}"
    return f"{ns:,} ns"


def _default(p) -> str:
    if p.required:
        return "required"
    v = p.default
    if v is None:
        return "derived" if p.optional else "none"
    if isinstance(v, bool):
        return str(v).lower()
    if p.kind == "size" and isinstance(v, int):
        return _size(v)
    if p.kind == "duration" and isinstance(v, int):
        return _duration(v)
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, str):
        return f"`{v}`" if v else '`""`'
    if isinstance(v, (list, tuple)):
        return ", ".join(map(str, v)) or "(empty)"
    return str(v)


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def sections_of(name: str) -> list:
    """The :class:`~replay.schema.Section` objects a mechanism declares, in declaration order."""
    from replay.mech import BY_NAME
    from replay.schema import Section

    module = BY_NAME[name].module("schema")
    return [v for v in vars(module).values() if isinstance(v, Section)]


def section_table(sec) -> str:
    """One scenario table: a row per parameter with its type, default (with its unit), range,
    source, and what it means with the reference its default comes from."""
    unit_of = {"size": "B", "duration": "ns"}
    rows = [f"### `[{sec.path}]`", ""]
    if sec.doc:
        rows += [_cell(sec.doc), ""]
    rows += ["| parameter | default | range | source | meaning (reference) |", "|---|---|---|---|---|"]
    for p in sec.params:
        unit = p.unit or unit_of.get(p.kind, "")
        default = _default(p)
        if unit and p.kind not in ("size", "duration") and default not in ("required", "derived", "none"):
            default = f"{default} {unit}"
        meaning = _cell(p.doc) + (f" ({_cell(p.reference)})" if p.reference else "")
        if unit and p.kind in ("int", "float"):
            meaning += f" [{_cell(unit)}]"
        rows.append(f"| `{p.name}` ({p.kind}) | {_cell(default)} | {_cell(p.rule())} | {p.source} | {meaning} |")
    if sec.extra:
        rows += ["", "Also read from this table: " + ", ".join(f"`{e}`" for e in sec.extra) + "."]
    return "\n".join(rows)


def mechanism_params(name: str) -> str:
    """The parameter tables of mechanism ``name`` (``replay.mech.MECHANISMS``)."""
    from replay.mech import BY_NAME

    if name not in BY_NAME:
        raise ValueError(f"docs: no mechanism {name!r} (known: {', '.join(BY_NAME)})")
    m = BY_NAME[name]
    secs = sections_of(name)
    code = ", ".join(f"`{mod.replace('.', '/')}.py`" for mod in m.kernel_modules)
    head = [f"Generated from `{m.package.replace('.', '/')}/schema.py` when the site is built (the compiled "
            f"code: {code}): every parameter "
            "as the scenario file takes it. Sizes take `KiB`/`MiB`/`GiB` suffixes, durations `ms`/`s`/`min`/`h`. "
            "Source: `doc` vendor documentation, `seed` a seed article, `seed-fit` fitted to the seed figure "
            "the reference names, `datasheet`, `measured`, `estimate` (ours), `choice` (a switch).", ""]
    if not secs:
        return "\n".join(head + ["This mechanism has no scenario table of its own."])
    return "\n".join(head + ["\n\n".join(section_table(s) for s in secs)])


def presets_table() -> str:
    """Every preset scenario with the mechanisms it models (``tiercast scenarios``)."""
    from replay.scenario import load, preset_names

    rows = ["| preset | what | mechanisms modelled |", "|---|---|---|"]
    for name in preset_names():
        d = load(name).describe()
        rows.append(f"| `{name}` | {_cell(d['description'])} | {_cell(', '.join(map(str, d.get('features') or [])))} |")
    return "\n".join(rows)


def fitted_ranges_table() -> str:
    """Every value a preset fits to a seed figure, with the physical range it must lie in
    (``replay.physical``) and the presets that use it."""
    from replay.physical import PhysicalRange
    from replay.provenance import parameters
    from replay.scenario import preset_names

    seen: dict[tuple, list[str]] = {}
    for name in preset_names():
        for r in parameters(name):
            if r["source"] == "seed-fit":
                ph = r["physical"]
                key = (re.sub(r"\[\d+\]", "[]", r["table"]), r["name"], r["value"], r["unit"], tuple(r["fitted_to"]),
                       ph["low"], ph["high"], ph["source"], ph["reference"])
                seen.setdefault(key, []).append(name)
    rows = ["| parameter | fitted value | fitted to | physical range | range from | presets |",
            "|---|---:|---|---|---|---|"]
    for (table, name, value, unit, figs, lo, hi, src, ref), presets in seen.items():
        inside = "inside" if PhysicalRange(lo, hi, src, ref).holds(value) else "**OUTSIDE**"
        rows.append(f"| `{table}.{name}` | {value:,.6g} {unit} | {', '.join(figs)} | {lo:,.6g}-{hi:,.6g} ({inside}) | "
                    f"{src}: {_cell(ref)} | {len(presets)}: {', '.join(f'`{p}`' for p in presets[:3])}"
                    f"{' ...' if len(presets) > 3 else ''} |")
    return "\n".join(rows)


def seed_figure_counts() -> str:
    """How many seed figures are of each kind, and how many validation figures are within their
    tolerance (at the model values the docs state)."""
    from pipelines.seed_figures import FIGURES, err

    kinds = [f.kind for f in FIGURES]
    val = [f for f in FIGURES if f.kind == "validation"]
    ok = sum(abs(err(f.documented, f.published)) <= f.tolerance_pct for f in val)
    return (f"Today: {kinds.count('calibration')} calibration, {kinds.count('identity')} identity, "
            f"**{len(val)} validation, {ok} of them within their tolerance** (the {len(val) - ok} misses and their "
            "causes are in the table).")


def seed_figures_table() -> str:
    from pipelines.seed_figures import readme_table

    return readme_table()


def render(markdown: str) -> str:
    """``markdown`` with every marker replaced by its generated block."""
    def block(m: re.Match) -> str:
        kind, arg = m.group(1), m.group(2)
        if kind == "cli-reference":
            return cli_reference()
        if kind == "mechanism" and arg:
            return mechanism_params(arg)
        if kind == "seed-figures":
            return seed_figures_table()
        if kind == "presets":
            return presets_table()
        if kind == "fitted-ranges":
            return fitted_ranges_table()
        if kind == "seed-figure-counts":
            return seed_figure_counts()
        raise ValueError(f"docs: unknown generated block {m.group(0)}")

    return MARKER.sub(block, markdown)


def on_page_markdown(markdown: str, page=None, config=None, files=None) -> str:  # the mkdocs hook
    return render(markdown)
