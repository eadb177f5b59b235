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
import difflib
import functools
import re
import shutil
import typing
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

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
    "Operator": ("bdpd_jax.host.operator", "Operator"),
}
_PATH_START = re.compile(r"^([\w\[\].]+): ")
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


def path_of(loc: Iterable[Any]) -> str:
    """A pydantic location as the one spelling of paths: ``('players', 2, 'intensity')`` ->
    ``players[2].intensity``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest choice (difflib), or ``""`` when none is close."""
    close = difflib.get_close_matches(str(name), [str(c) for c in choices], n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


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


def _models_in(annotation: Any) -> list[type]:
    """The pydantic models an annotation can hold (through Optional, lists, dicts, unions)."""
    from pydantic import BaseModel

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]


def fields_at(model: type | None, loc: Iterable[Any]) -> list[str]:
    """The keys a user may write at ``loc`` (the parent of a rejected key) under ``model``:
    wire aliases where the model has them. Empty when the walk leaves the models."""
    models = [model] if model is not None else []
    for part in loc:
        if isinstance(part, int):
            continue
        nxt: list[type] = []
        named = False
        for m in models:
            for name, f in m.model_fields.items():  # type: ignore[attr-defined]
                if part in (name, f.alias):
                    nxt += _models_in(f.annotation)
                    named = True
        models = nxt if named else models  # not a field: a key of a dict of models (kept)
    return sorted({f.alias or n for m in models for n, f in m.model_fields.items()})  # type: ignore[attr-defined]


def pydantic_line(err: Mapping[str, Any], model: type | None = None) -> str:
    """One validation error as ``path: what (got value)``; an unknown key with its valid keys
    and a "did you mean"."""
    loc = tuple(err.get("loc", ()))
    where = path_of(loc)
    text = str(err.get("msg", "")).removeprefix("Value error, ")
    if err.get("type") == "extra_forbidden" and loc:
        known = fields_at(model, loc[:-1])
        hint = did_you_mean(str(loc[-1]), known) + (f" (valid keys: {', '.join(known)})" if known else "")
        return f"{where}: unknown key{hint}"
    m = _PATH_START.match(text)
    if m:  # our own messages start with a path: keep it, with the index the location knows
        return f"{where}: {text[m.end() :]}" if "[]" in m.group(1) and where else text
    if not where:
        return f"config: {text}"
    got = repr(err.get("input"))
    return f"{where}: {text} (got {got[:80] + '...' if len(got) > 80 else got})"


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
