"""Option and argument values without pydantic where it adds nothing (start-up time).

typer 0.29 coerces every parameter's value through a pydantic ``TypeAdapter`` that it builds the
first time the parameter is processed, also when it was not given (its default, or None, is
processed too; ``--help`` is a parameter as well). So every command paid for importing pydantic
(~0.1 s with bytecode, ~0.25 s without) before doing anything, ``tiercast traces`` included.

After :func:`install`, typer's parameters coerce with :class:`DeferredRuntimeParam`: what typer
does for a ``str`` (the text as given) and a ``Path`` (a ``Path``, then typer's own path checks),
and for everything else (bool values, numbers and their ranges, lists, parsers) typer's pydantic
coercion, built at the first value that needs it: an option left unset (None) never builds it.
Values and messages are typer's; ``tests/test_cli_startup.py`` pins them against typer's own
coercion. This relies on typer internals (``typer._coercion``, ``typer._param_types``,
``_TyperParameter.get_runtime_param``); with another typer, :func:`install` does nothing (a
slower start, the same results) and the pinning test fails.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePath

try:
    from typer._coercion import RuntimeParam, build_runtime_param
    from typer._param_types import coerce_cli_path
    from typer.core import _TyperParameter
except ImportError:  # another typer: keep its own coercion
    RuntimeParam = None


if RuntimeParam is not None:

    @dataclass(frozen=True)
    class DeferredRuntimeParam(RuntimeParam):
        """typer's coercion of one parameter, with pydantic only where it decides something."""

        def _coerce_value(self, value, param, ctx):
            info = self.parameter_info
            if info.parser is None:
                if self.annotation is str and isinstance(value, str):
                    return value
                if self.annotation is Path and info.path_type is None and isinstance(value, str | PurePath):
                    return coerce_cli_path(Path(value), info, path_type=Path, param=param, ctx=ctx)
            real = build_runtime_param(param.type_descriptor)
            param._runtime_param = real  # built once: later values go straight to it
            return real._coerce_value(value, param=param, ctx=ctx)

    def _get_runtime_param(self):
        if self._runtime_param is None:
            d = self.type_descriptor
            self._runtime_param = (build_runtime_param(d) if d.file_annotation is not None else
                                   DeferredRuntimeParam(parameter_info=d.parameter_info, annotation=d.annotation))
        return self._runtime_param

    #: typer's own (tests compare against it)
    TYPER_GET_RUNTIME_PARAM = _TyperParameter.get_runtime_param


def install() -> None:
    """Have typer's parameters coerce with :class:`DeferredRuntimeParam` (idempotent; a no-op
    on a typer without the internals it relies on)."""
    if RuntimeParam is not None:
        _TyperParameter.get_runtime_param = _get_runtime_param
