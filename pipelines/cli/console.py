"""The CLI's rich consoles: messages on stderr, results on stdout. ``pipelines.cli.common`` makes
them at first use (``console``, ``out``): importing rich costs ~0.05 s with bytecode, ~0.09 s
without, which ``tiercast --help`` and ``tiercast sql`` need not pay."""

from __future__ import annotations

import re
import sys

from rich.console import Console
from rich.text import Text


class StderrConsole(Console):
    """Messages on stderr. Only a leading ``[style]label:[/]`` is markup; the rest of a message is
    printed as it is, so text in brackets (``[raid_groups]``, ``[default: ...]``) is never eaten."""

    _LEAD = re.compile(r"\[(?P<style>[a-z ]+)\](?P<label>[^\[\]]*)\[/\]")

    def print(self, *objects, markup=None, highlight=None, **kw):  # noqa: A003 - rich's name
        if len(objects) == 1 and isinstance(objects[0], str):
            s = objects[0]
            m = self._LEAD.match(s)
            text = Text(m["label"], style=m["style"]) + Text(s[m.end():]) if m else Text(s)
            objects = (text,)
        return super().print(*objects, markup=False, highlight=False, **kw)


def stderr_console() -> StderrConsole:
    return StderrConsole(stderr=True, soft_wrap=True)


def stdout_console() -> Console:
    """Results; not a terminal: never wrap (plain lines stay whole, tables take the width they need)."""
    tty = sys.stdout.isatty()
    return Console(highlight=False, markup=False, soft_wrap=not tty, width=None if tty else 100_000)
