"""One line per pydantic validation error, with the valid keys and a "did you mean" for an
unknown key: the one rule the CLI (``bdpd_jax.cli_errors``) and the host's file loaders
(``host/live/operator.py``) share, so a typo in a config or operator file reads the same everywhere."""

from __future__ import annotations

import difflib
import re
import typing
from collections.abc import Iterable, Mapping
from typing import Any

_PATH_START = re.compile(r"^([\w\[\].]+): ")


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


__all__ = ["path_of", "did_you_mean", "fields_at", "pydantic_line"]
