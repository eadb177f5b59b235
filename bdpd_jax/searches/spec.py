"""Search specs (TOML) for ``bdpd search SPEC.toml --out DIR``.

An example (:data:`EXAMPLE`, also in ``bdpd search --help`` and the README): the least
regeneration that keeps 90 % of arenas alive. ``config`` is a JSON path (relative to the
spec) or a ``[config]`` table; every other key is :func:`~bdpd_jax.search.search`'s
argument of that name. The directory gets ``manifest.json``, ``generations/gen-<g>.parquet``
as each generation ends (a re-run resumes after the last), then ``history.parquet`` and
``meta.json`` (``SearchResults.from_parquet(DIR)``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config.game import ArenaConfig
from ..sweeps.sweep_file import read_spec

EXAMPLE = (Path(__file__).resolve().parent.parent / "data" / "search_example.toml").read_text()  # (also in --help)

SPEC_KEYS = {
    "config",
    "space",
    "objective",
    "constraints",
    "method",
    "population",
    "generations",
    "replicates",
    "seed",
    "common_random",
    "turns",
    "confirm",
    "confirm_top",
    "loop",
}
# A spec is read from a file a user names: bound its size before parsing.
MAX_SPEC_BYTES = 1 << 20


@dataclass
class SearchSpec:
    """A parsed spec: the config and :func:`~bdpd_jax.search.search`'s keyword arguments."""

    config: ArenaConfig
    kwargs: dict[str, Any]


def _objective(v: Any) -> Any:
    if isinstance(v, list) and len(v) == 2 and all(isinstance(x, str) for x in v):
        return (v[0], v[1])
    if isinstance(v, list) and v and all(isinstance(x, list) for x in v):
        return [tuple(x) for x in v]
    raise ValueError(f"objective: [column, 'max'|'min'] or a list of them, got {v!r}")


def load_search_spec(spec: str | Path | dict, root: str | Path | None = None) -> SearchSpec:
    """Parse a spec (a TOML path, or its dict); ValueError naming the key on anything wrong.
    Values are checked by ``search`` itself."""
    d, root = read_spec(spec, root, SPEC_KEYS, MAX_SPEC_BYTES)
    for k in ("config", "space", "objective"):
        if k not in d:
            raise ValueError(f"spec: {k!r} is required")
    c = d["config"]
    if isinstance(c, str):
        cp = Path(c) if Path(c).is_absolute() else root / c
        if not cp.is_file():
            raise ValueError(f"config: no file {str(cp)!r}")
        cfg = ArenaConfig.load(str(cp))
    elif isinstance(c, dict):
        cfg = ArenaConfig.load(c)
    else:
        raise ValueError(f"config: a path to a JSON config or a [config] table, got {c!r}")
    if not isinstance(d["space"], dict):
        raise ValueError(f"space: a table of path = [low, high], got {d['space']!r}")
    kw: dict[str, Any] = {k: v for k, v in d.items() if k not in ("config", "space", "objective", "constraints")}
    kw["space"] = {k: tuple(v) if isinstance(v, list) else v for k, v in d["space"].items()}
    kw["objective"] = _objective(d["objective"])
    if "constraints" in d:
        if not isinstance(d["constraints"], dict):
            raise ValueError(f"constraints: a table of column = [op, bound], got {d['constraints']!r}")
        kw["constraints"] = {k: tuple(v) if isinstance(v, list) else v for k, v in d["constraints"].items()}
    return SearchSpec(cfg, kw)
