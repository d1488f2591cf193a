"""The docs site (mkdocs.yml, docs/) and the README lead somewhere and say what the code does.

* The CLI reference is every command's ``--help`` as the command prints it (generated at build
  time by pipelines/docgen.py; compared here with the real output).
* Every command's ``--help`` ends with an example and its task page, and that page shows the
  command.
* Every mechanism of the array model has a model page whose parameter table comes from its schema.
* Every relative link in the README, in docs/ and in code comments resolves inside the repository
  (anchors included); nothing cites the reference notes that live outside it.

``make docs`` (part of ``make test``, so of CI) builds the site with ``mkdocs build --strict``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
import yaml

from pipelines import docgen
from pipelines.cli import COMMANDS
from pipelines.cli.examples import EXAMPLES

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
#: where code comments and docstrings are read for links
CODE_DIRS = ("dags", "pipelines", "replay", "schemas", "traces", "tests", "benchmarks", "deploy", ".ci")
CODE_SUFFIXES = {".py", ".toml", ".sql", ".yaml", ".yml", ".service", ".env", ""}
MD_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
DOC_PATH = re.compile(r"(?<![\w/.-])(docs/[\w./-]+\.md)(#[\w-]+)?")
OUTSIDE = re.compile(r"shared/reference|\b(MODELS|PITFALLS|DESIGN)\.md\b")


def slug(heading: str) -> str:
    """A heading's anchor as Python-Markdown's toc makes it (markup removed first)."""
    text = re.sub(r"[`*]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(page: Path) -> set[str]:
    text = docgen.render(page.read_text()) if page.is_relative_to(DOCS) else page.read_text()
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+?)\s*$", text, re.M)}


def nav_pages() -> list[str]:
    def walk(node):
        if isinstance(node, str):
            yield node
        elif isinstance(node, list):
            for n in node:
                yield from walk(n)
        elif isinstance(node, dict):
            for v in node.values():
                yield from walk(v)

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text().replace("!!python", "python"))
    return list(walk(config["nav"]))


# -- the CLI reference and --help ---------------------------------------------------------------
#: one fresh interpreter prints ``tiercast [COMMAND] --help`` for every command, as the real
#: command does (click's CliRunner forces 80 columns; a terminal's help is 78 wide)
HELP_ALL = """
import contextlib, io, json, sys
from pipelines.cli import COMMANDS, main
out = {}
for name in [None, *sorted(COMMANDS)]:
    buf = io.StringIO()
    sys.argv = ["tiercast", *([name] if name else []), "--help"]
    with contextlib.redirect_stdout(buf):
        try:
            main()
        except SystemExit as e:
            assert e.code == 0, (name, e.code)
    out[name or ""] = buf.getvalue()
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def real_help() -> dict[str, str]:
    out = subprocess.run([sys.executable, "-c", HELP_ALL], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "COLUMNS": "120"}, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_the_reference_is_every_commands_help_as_a_terminal_shows_it(real_help):
    assert set(real_help) == {"", *COMMANDS}
    reference = docgen.cli_reference()
    for name, text in real_help.items():
        assert text.rstrip("\n") == docgen.command_help(name or None), f"tiercast {name} --help"
        title = f"## tiercast {name}".rstrip()
        assert f"{title}\n\n```text\n{text.rstrip()}\n```" in reference, title


def test_the_reference_page_lists_every_command_and_its_task_page():
    page = (DOCS / "reference" / "cli.md").read_text()
    assert "<!-- generated: cli-reference -->" in page
    table = page.split("<!-- generated")[0]
    for command, (_, task_page) in EXAMPLES.items():
        row = next((ln for ln in table.splitlines() if f"`{command}`" in ln), None)
        assert row, f"docs/reference/cli.md's table has no row for {command}"
        assert f"({os.path.relpath(DOCS / task_page, DOCS / 'reference')})" in row, (command, row)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_ends_with_an_example_and_the_page_that_shows_it(command):
    assert set(EXAMPLES) == set(COMMANDS), "pipelines/cli/examples.py and COMMANDS differ"
    lines, page = EXAMPLES[command]
    text = docgen.command_help(command)
    tail = text[text.rindex("Example:"):]
    assert all(f"tiercast {command}" in ln for ln in lines), lines
    assert tail.rstrip().endswith(f"Docs: docs/{page} (make docs-serve)"), tail
    assert (DOCS / page).is_file()
    assert page in nav_pages()
    assert re.search(rf"\btiercast {re.escape(command)}\b", (DOCS / page).read_text()), \
        f"docs/{page} shows no example of tiercast {command}"


def test_ingest_help_names_the_generic_mapping():
    text = docgen.command_help("ingest")
    assert "--format generic -o mapping=FILE" in text
    assert "generic" in text.split("Example:")[0]  # in the options too, not only the example


# -- generated model pages ----------------------------------------------------------------------
def test_every_mechanism_has_a_model_page_with_its_generated_parameters():
    from replay.mech import MECHANISMS

    nav = nav_pages()
    for m in MECHANISMS:
        page = DOCS / "models" / f"{m.name}.md"
        assert page.is_file(), f"mechanism {m.name} has no page docs/models/{m.name}.md"
        assert f"models/{m.name}.md" in nav
        text = page.read_text()
        assert f"<!-- generated: mechanism {m.name} -->" in text
        rendered = docgen.render(text)
        for sec in docgen.sections_of(m.name):
            assert f"### `[{sec.path}]`" in rendered
            for p in sec.params:
                assert f"| `{p.name}` ({p.kind}) |" in rendered, (m.name, sec.path, p.name)


def test_parameter_rows_carry_unit_default_range_and_source():
    from replay.mech.dram_cache.schema import FLARE

    table = docgen.section_table(FLARE)
    row = next(ln for ln in table.splitlines() if ln.startswith("| `high_watermark_pct` (float) |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[:4] == ["`high_watermark_pct` (float)", "80 %", ">= 0 and <= 100", "doc"]
    assert "watermark flushing starts" in cells[4] and "(default high watermark 80 %)" in cells[4]
    assert cells[4].endswith("[%]")


def test_an_unknown_generated_block_fails_the_build():
    with pytest.raises(ValueError, match="unknown generated block"):
        docgen.render("<!-- generated: nothing-known -->")
    with pytest.raises(ValueError, match="no mechanism"):
        docgen.render("<!-- generated: mechanism warp_drive -->")


def test_every_docs_page_is_in_the_nav():
    nav = set(nav_pages())
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    assert pages == nav, f"not in the nav: {sorted(pages - nav)}; missing: {sorted(nav - pages)}"


# -- links --------------------------------------------------------------------------------------
def _check_target(source: Path, target: str, base: Path) -> str | None:
    if re.match(r"^[a-z]+:", target) or target.startswith("#") and source.suffix != ".md":
        return None
    path, _, anchor = target.partition("#")
    dest = (base / path).resolve() if path else source.resolve()
    if not dest.is_relative_to(ROOT):
        return f"{source.relative_to(ROOT)}: {target} leaves the repository"
    if not dest.exists():
        return f"{source.relative_to(ROOT)}: {target} does not exist"
    if anchor and dest.suffix == ".md" and anchor not in anchors(dest):
        return f"{source.relative_to(ROOT)}: {target}: no heading #{anchor} in {dest.relative_to(ROOT)}"
    return None


def test_every_link_in_the_readme_and_the_docs_resolves_inside_the_repository():
    bad = []
    for md in [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]:
        text = re.sub(r"^```.*?^```", "", md.read_text(), flags=re.S | re.M)
        for target in MD_LINK.findall(text):
            if err := _check_target(md, target, md.parent):
                bad.append(err)
    assert not bad, "\n".join(bad)


def _code_files():
    for d in CODE_DIRS:
        for p in sorted((ROOT / d).rglob("*")):
            if p.is_file() and p.suffix in CODE_SUFFIXES and "__pycache__" not in p.parts:
                yield p
    yield ROOT / "Makefile"
    yield ROOT / "mkdocs.yml"


def test_every_docs_page_cited_in_code_exists_with_its_heading():
    bad, cited = [], 0
    for f in _code_files():
        try:
            text = f.read_text()
        except UnicodeDecodeError:
            continue
        for m in DOC_PATH.finditer(text):
            cited += 1
            if err := _check_target(f, m.group(1) + (m.group(2) or ""), ROOT):
                bad.append(err)
    assert cited > 20  # the comments cite the docs
    assert not bad, "\n".join(bad)


def test_nothing_cites_reference_notes_outside_the_repository():
    bad = []
    for f in [*_code_files(), ROOT / "README.md", *DOCS.rglob("*.md")]:
        if f == Path(__file__):
            continue
        try:
            lines = f.read_text().splitlines()
        except UnicodeDecodeError:
            continue
        bad += [f"{f.relative_to(ROOT)}:{i}: {ln.strip()}" for i, ln in enumerate(lines, 1) if OUTSIDE.search(ln)]
    assert not bad, "cite the docs page instead:\n" + "\n".join(bad)


def test_the_link_checker_catches_a_broken_link_and_anchor(tmp_path):
    md = DOCS / "index.md"
    assert _check_target(md, "guide/ingest.md#the-generic-reader", md.parent) is None
    assert "does not exist" in _check_target(md, "guide/nope.md", md.parent)
    assert "no heading" in _check_target(md, "guide/ingest.md#nope", md.parent)
    assert "leaves the repository" in _check_target(md, "../../etc/passwd", md.parent)
    assert slug("`benchmarks/cache.py`: replay engine vs libCacheSim") == "benchmarkscachepy-replay-engine-vs-libcachesim"


# -- the README ---------------------------------------------------------------------------------
def test_the_readme_fits_on_two_screens_and_leads_into_the_site():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 200
    assert "make demo" in text and "make test" in text
    assert text.count("](docs/img/") == 1, "one screenshot"
    links = [t for t in MD_LINK.findall(text) if t.startswith("docs/") and t.endswith(".md") or ".md#" in t]
    assert len(links) >= 8, links
