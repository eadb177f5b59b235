"""How the ``bdpd`` command reports a failure it expects: one line on stderr, ``error: ...``,
and exit code 2, for every command (:func:`guarded`).

Expected failures are the ones a user's input or machine causes: bad values (``ValueError``,
pydantic's ``ValidationError``, TOML and JSON errors), files (``OSError``), numbers too large
(``OverflowError``, ``MemoryError``), a missing optional extra (``ImportError``: the line
names the ``pip install`` to run) and Ctrl-C. A bug still prints its traceback. Paths in
messages are spelled one way, ``players[2].intensity``; a library argument the user set by a
flag is named by the flag (``--arenas``, not ``n_arenas``); an unknown key gets a "did you
mean" from :mod:`difflib`. A command that fails leaves no empty ``--out`` folder behind.
"""

from __future__ import annotations

import ast
import functools
import re
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from .config.error_lines import did_you_mean, pydantic_line

#: top-level module of an optional dependency -> the extra that installs it (pyproject.toml)
EXTRAS: dict[str, str] = {
    **dict.fromkeys(("evosax", "pymoo"), "search"),
    **dict.fromkeys(("jaxmarl", "optax"), "learn"),
    **dict.fromkeys(("fastapi", "uvicorn", "httpx", "sse_starlette", "openai", "jsbox", "aiohttp", "orjson"), "host"),
    **dict.fromkeys(("dask", "distributed"), "dist"),
    **dict.fromkeys(("matplotlib", "jupytext", "nbclient", "ipykernel", "SALib"), "studies"),
    "numba": "bench",
}
#: what a command's ``--out`` is called among its parameters (cleaned up after a failure)
OUT_PARAMS = ("out",)
#: a validation error's title (the model's name) -> the model its unknown keys are checked against
MODELS: dict[str, tuple[str, str]] = {
    "ArenaConfig": ("bdpd_jax.config.game", "ArenaConfig"),
    "Operator": ("bdpd_jax.host.live.operator", "Operator"),
}
#: a library message naming an unknown name and the known ones: "unknown X 'name'; known: [...]"
_UNKNOWN = re.compile(r"unknown [^']*'([^']+)'[;,]? known(?: here)?: (\[[^\]]*\])")
#: at most this many known names are listed in a message (the closest is suggested first)
MAX_KNOWN = 20


def install_hint(exc: ImportError) -> str | None:
    """``pip install`` line for an ImportError of an optional extra's module, else None."""
    root = (exc.name or "").split(".")[0]
    extra = EXTRAS.get(root)
    if extra is None:
        return None
    return f"{root} is not installed; it comes with the {extra!r} extra: pip install -e '.[{extra}]'"


def with_suggestion(text: str) -> str:
    """A message naming an unknown name and a list of the known ones gains a "did you mean",
    and a long list is cut to :data:`MAX_KNOWN` names."""
    m = _UNKNOWN.search(text)
    if m is None:
        return text
    try:
        known = [str(k) for k in ast.literal_eval(m.group(2))]
    except (ValueError, SyntaxError):
        return text
    shown = ", ".join(known[:MAX_KNOWN]) + (f", ... ({len(known) - MAX_KNOWN} more)" if len(known) > MAX_KNOWN else "")
    head = text[: m.start()] + m.group(0).split(";")[0].split(",")[0].rstrip(";,")
    return f"{head}{did_you_mean(m.group(1), known)} (known: {shown}){text[m.end() :]}"


def _model_named(title: str) -> type | None:
    import importlib

    spec = MODELS.get(title)
    return getattr(importlib.import_module(spec[0]), spec[1]) if spec else None


def message(exc: BaseException, flags: Mapping[str, str] | None = None) -> str:
    """The one-line text of an expected failure; ``flags``: library argument -> the CLI flag
    that set it (a message naming the argument names the flag instead)."""
    from pydantic import ValidationError

    if isinstance(exc, ValidationError):
        model = _model_named(exc.title)
        return "; ".join(with_suggestion(pydantic_line(e, model)) for e in exc.errors())
    if isinstance(exc, ImportError):
        return install_hint(exc) or f"{type(exc).__name__}: {exc}"
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted"
    if isinstance(exc, MemoryError):
        return "out of memory: the run asked for more than this machine has; make it smaller"
    if isinstance(exc, OSError) and exc.filename is not None:
        text = f"{exc.filename}: {exc.strerror or exc}"
    else:
        text = str(exc) if isinstance(exc, ValueError) and str(exc) else f"{type(exc).__name__}: {exc}"
    for arg, flag in (flags or {}).items():
        text = re.sub(rf"^{re.escape(arg)}\b:?", f"{flag}:", text)
    return with_suggestion(" ".join(text.split()))  # one line


def fail(exc: BaseException, flags: Mapping[str, str] | None = None) -> typer.Exit:
    """Print ``error: <message>`` on stderr (no traceback, no rich markup read from the
    message) and return the exit (code 2, like a usage error) to raise."""
    Console(stderr=True, soft_wrap=True).print(f"[red]error:[/red] {escape(message(exc, flags))}")
    return typer.Exit(2)


EXPECTED: tuple[type[BaseException], ...] = (
    ValueError,
    OSError,
    ImportError,
    OverflowError,
    MemoryError,
    RecursionError,
    KeyboardInterrupt,
)


def _remove_if_empty(path: Path) -> None:
    """Remove a folder this command created if it holds no file (only empty folders)."""
    if path.is_dir() and not any(p.is_file() or p.is_symlink() for p in path.rglob("*")):
        shutil.rmtree(path, ignore_errors=True)


def guarded(flags: Mapping[str, str] | None = None) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Decorate a command: every expected failure ends as one line and exit 2, and an ``--out``
    folder the command created is removed again if it is still empty."""

    def wrap(fn: Callable[..., None]) -> Callable[..., None]:
        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> None:
            outs = [Path(kwargs[k]) for k in OUT_PARAMS if kwargs.get(k) is not None]
            fresh = [p for p in outs if not p.exists()]
            try:
                fn(*args, **kwargs)
            except EXPECTED as e:
                for p in fresh:
                    _remove_if_empty(p)
                raise fail(e, flags) from None

        return run

    return wrap
