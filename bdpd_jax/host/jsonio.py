"""JSON helpers of the three parts of the host (live, agents, server): numpy/jax scalars, strict
wire JSON as text or bytes. Beside the parts, not in one, so each imports it reaching no other."""

from __future__ import annotations

import json
import math
from typing import Any

import orjson


def json_default(obj: Any) -> Any:
    """Make numpy / jax scalars and arrays JSON-serialisable (observations may carry them)."""
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if hasattr(obj, "item"):
        return obj.item()
    raise TypeError(f"not JSON-serialisable: {type(obj).__name__}")


def nan_to_none(obj: Any) -> Any:
    """Replace non-finite floats by None, recursively (strict JSON has no NaN/Infinity)."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: nan_to_none(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [nan_to_none(v) for v in obj]
    return obj


def plain_json(obj: Any) -> Any:
    """Deep-copy ``obj`` into plain JSON types; non-finite floats become None."""
    return nan_to_none(json.loads(json.dumps(obj, default=json_default)))


def dumps_compact(obj: Any) -> str:
    """Strict, compact, key-order-preserving JSON text (deterministic for equal inputs)."""
    return json.dumps(plain_json(obj), allow_nan=False, separators=(",", ":"), ensure_ascii=False)


def dumps_bytes(obj: Any) -> bytes:
    """:func:`dumps_compact` as UTF-8 bytes, in one pass (orjson: non-finite floats -> null,
    numpy / jax values through :func:`json_default`, as ``plain_json`` does)."""
    return orjson.dumps(obj, default=json_default)
