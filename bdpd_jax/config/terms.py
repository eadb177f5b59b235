"""Pact terms on the host, read from the kernel's term registry (kernels/pacts.py) when called.

The config (``pacts``, ``talk.propose``), the live tools (``propose_pact``: checks and JSON
schema), the live pact registry (terms and violation detail strings) and the results frames
all go through these functions, so a term type registered with
:func:`bdpd_jax.kernels.pacts.register_term` works everywhere without another edit.
"""

from __future__ import annotations

import math
from typing import Any

from ..kernels import pacts as P
from .limits import to_float


def parse_terms(value: Any, where: str = "terms", *, strict: bool = True, fill: bool = False) -> dict[str, Any]:
    """Validate a JSON terms object ``{"type": ..., <field>: number}`` against the registry.

    Returns ``{"type", **fields}`` with each given field as a float (defaults added when
    ``fill``). ``strict``: a key the type does not have is an error (else it is dropped).
    ValueError names ``where.<field>`` and the bad value.
    """
    if not isinstance(value, dict):
        raise ValueError(f"{where}: must be an object, got {value!r}")
    kind = value.get("type")
    names = P.term_names()
    if kind not in names:
        raise ValueError(f"{where}.type: unknown term type {kind!r}; known: {list(names)}")
    tt = P.term_type(kind)
    known = {f.name for f in tt.fields}
    if strict:
        extra = sorted(k for k in value if k != "type" and k not in known)
        if extra:
            raise ValueError(f"{where}.{extra[0]}: not a field of {kind!r} terms (fields: {sorted(known)})")
    out: dict[str, Any] = {"type": kind}
    for f in tt.fields:
        v = value.get(f.name)
        if v is None:
            if f.default is None:
                raise ValueError(f"{where}.{f.name}: {kind} needs {f.name}, got None")
            if fill:
                out[f.name] = float(f.default)
            continue
        finite = isinstance(v, (int, float)) and math.isfinite(to_float(v, f"{where}.{f.name}"))  # (bools refused)
        if not finite:
            raise ValueError(f"{where}.{f.name}: must be a finite number, got {v!r}")
        if not (v > f.minimum if f.exclusive else v >= f.minimum):
            op = ">" if f.exclusive else ">="
            raise ValueError(f"{where}.{f.name}: {kind} needs {f.name} {op} {f.minimum:g}, got {v!r}")
        out[f.name] = float(v)
    return out


def numbers(terms: dict[str, Any]) -> tuple[float, float]:
    """(max_harvest, tolerance): the slot's two stored numbers of validated terms (0 unused)."""
    num = {n: 0.0 for n in P.NUMBERS}
    for f in P.term_type(terms["type"]).fields:
        v = terms.get(f.name)
        num[f.number] = float(f.default or 0.0) if v is None else float(v)
    return num["max_harvest"], num["tolerance"]


def slot_terms(code: int, stored: dict[str, float | None]) -> dict[str, Any]:
    """The JSON terms of a slot from its stored numbers (``{"max_harvest": .., "tolerance": ..}``,
    already display-rounded): required fields always, defaulted ones when not at their default."""
    tt = P.term_type(int(code))
    out: dict[str, Any] = {"type": tt.name}
    for f in tt.fields:
        v = stored[f.number]
        if f.default is None or (v is not None and v != f.default):
            out[f.name] = v
    return out


def detail(type_name: str, actual: float, limit: float, mean: float) -> str:
    """001_* violation detail string of a term type (its registered format)."""
    return P.term_type(type_name).detail.format(actual=actual, limit=limit, mean=mean)


def terms_schema() -> dict[str, Any]:
    """JSON schema of a terms object over every registered type (the ``propose_pact`` tool)."""
    props: dict[str, Any] = {"type": {"type": "string", "enum": list(P.term_names())}}
    parts = []
    for name in P.term_names():
        tt = P.term_type(name)
        fields = []
        for f in tt.fields:
            bound = {"exclusiveMinimum" if f.exclusive else "minimum": f.minimum}
            props.setdefault(f.name, {"type": "number", **bound})
            fields.append(
                f'"{f.name}": {">" if f.exclusive else ">="}{f.minimum:g}'
                + ("" if f.default is None else f" (optional, default {f.default:g})")
            )
        described = f" -- {tt.description}" if tt.description else ""
        parts.append(f'{{"type": "{name}"{"".join(", " + x for x in fields)}}}{described}')
    return {
        "type": "object",
        "description": "pact terms: " + " or ".join(parts),
        "properties": props,
        "required": ["type"],
    }


__all__ = ["parse_terms", "numbers", "slot_terms", "detail", "terms_schema"]
