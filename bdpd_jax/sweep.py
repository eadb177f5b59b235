"""``sweep``: many parameter points of one config as ONE batched, once-compiled run.

Parameters are named by their config path (``model.regenRate``, ``players[2].intensity``,
``observability.commonsStock.noise``, ``perturbations[auto-sanction].payload.ladder``).
Every point x replicate is one arena: the point's values are applied to a copy of the
config (validated by pydantic, errors name the path and value), ``build()`` gives its
Params, every point must give the same static :class:`Game`, and the per-point Params are
stacked along the trailing batch axis and run through simulate's compiled program
(``run_batch``/``compiled_run``). Arena ``i`` (point ``i // replicates``, replicate
``i % replicates``) draws from ``arena_keys(seed, i)``, so its row equals
``simulate(config_at_point, n_arenas=1, seed=seed, arena_offset=i)``.

At scale (:class:`SweepPlan`): arenas run in chunks sized by ``max_batch`` or a
``memory_budget``; each chunk's batch axis is sharded over the local devices (a 1-D mesh,
bit-identical to one device); grids of many points build params once per distinct value
of each parameter when the params are separable. ``bdpd_jax.distributed`` runs the chunks
on a Dask cluster and ``bdpd_jax.sweep_spec`` / ``bdpd sweep`` run a TOML spec resumably.
See docs/semantics.md §12.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from pydantic import ValidationError

from .build import build
from .config import ArenaConfig
from .kernels.metrics import METRICS
from .kernels.rollout import summary_of
from .results import summary_frame
from .simulate import _flatten_record, _summary_extra, _to_numpy, _with_govsim, arena_keys, run_batch

Z95 = 1.96
# Per-arena outcomes aggregated per point (plus ``mean_<metric>`` when history was kept).
POINT_OUTCOMES = ("survived", "collapse_turn", "survival_time", "wealth_mean")

# ----------------------------------------------------------------------------- paths

_SEGMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)((?:\[[^\[\]]+\])*)$")
_SELECTOR = re.compile(r"\[([^\[\]]+)\]")


def parse_path(path: str) -> list[tuple[str, Any]]:
    """``a.b[2].c[id]`` -> [("key", "a"), ("key", "b"), ("index", 2), ("key", "c"), ("select", "id")].

    A bracket holding an integer is a list index; anything else selects the list element
    whose ``id`` (perturbation specs, pacts) or ``name`` (players) equals it.
    """
    if not isinstance(path, str) or not path:
        raise ValueError(f"parameter path: must be a non-empty string, got {path!r}")
    steps: list[tuple[str, Any]] = []
    for seg in path.split("."):
        m = _SEGMENT.match(seg)
        if m is None:
            raise ValueError(f"{path}: cannot parse segment {seg!r} (expected name, name[index] or name[id])")
        steps.append(("key", m.group(1)))
        for sel in _SELECTOR.findall(m.group(2)):
            sel = sel.strip().strip("'\"")
            if re.fullmatch(r"-?\d+", sel):
                steps.append(("index", int(sel)))
            else:
                steps.append(("select", sel))
    return steps


def _step_name(steps, upto: int) -> str:
    out = ""
    for kind, k in steps[:upto]:
        out += (("." if out else "") + k) if kind == "key" else f"[{k}]"
    return out


def resolve(full: dict, path: str) -> tuple[list, Any]:
    """The concrete keys (field names and list indices) a path names in the full config dict,
    and the value there; ValueError naming the path."""
    steps = parse_path(path)
    node: Any = full
    keys: list = []
    for i, (kind, k) in enumerate(steps):
        where = _step_name(steps, i + 1)
        if kind == "key":
            if not isinstance(node, dict):
                raise ValueError(f"{path}: {_step_name(steps, i) or 'config'} is not an object (got {node!r})")
            if k not in node:
                known = sorted(node)
                raise ValueError(f"{path}: unknown field {where!r}; known here: {known}")
        else:
            if not isinstance(node, list):
                raise ValueError(f"{path}: {_step_name(steps, i)} is not a list (got {node!r})")
            if kind == "index":
                if not -len(node) <= k < len(node):
                    raise ValueError(f"{path}: index {k} out of range for {_step_name(steps, i)} (length {len(node)})")
                k = k % len(node)
            else:
                hits = [j for j, e in enumerate(node) if isinstance(e, dict) and k in (e.get("id"), e.get("name"))]
                if len(hits) != 1:
                    ids = [e.get("id", e.get("name")) for e in node if isinstance(e, dict)]
                    raise ValueError(
                        f"{path}: {'no' if not hits else 'several'} element of {_step_name(steps, i)} "
                        f"with id/name {k!r}; ids/names: {ids}"
                    )
                k = hits[0]
        keys.append(k)
        node = node[k]
        if node is None and i < len(steps) - 1:
            raise ValueError(f"{path}: {where} is not set in this config (None); set it in the base config first")
    return keys, node


def _plain(v: Any) -> Any:
    """numpy scalars/arrays -> Python values pydantic accepts."""
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


def _copy(x: Any) -> Any:
    """Copy dicts and lists (the config's structure), keep other objects (e.g. Policy) as is."""
    if isinstance(x, dict):
        return {k: _copy(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_copy(v) for v in x]
    return x


@dataclass(frozen=True)
class ConfigBase:
    """A config as two dicts: ``full`` (every field, defaults filled in) is where paths are
    looked up; ``given`` (the fields the user set) is what each point's copy is built from,
    so a point's config is exactly the user's config with the swept fields set (pydantic's
    ``model_fields_set`` matters: e.g. an observation's ``noise`` is drawn only where set)."""

    full: dict
    given: dict
    resolved: dict = field(default_factory=dict, compare=False, repr=False)  # path -> (keys, value)

    def resolve(self, path: str) -> tuple[list, Any]:
        hit = self.resolved.get(path)
        if hit is None:
            hit = self.resolved[path] = resolve(self.full, path)
        return hit


def config_base(config: ArenaConfig) -> ConfigBase:
    full, given = config.model_dump(), config.model_dump(exclude_unset=True)
    if config.model.engineMode == "seneca":  # filled in by ModelConfig's validator, which
        for d in (full, given):  # rejects them when given back on a seneca engine
            for k in ("collapseDie", "useHiddenReserve", "hiddenReserveInitial"):
                d.get("model", {}).pop(k, None)
    return ConfigBase(full, given)


def check_paths(base: ConfigBase, names: Sequence[str]) -> None:
    for n in names:
        resolve(base.full, n)


def _describe(names: Sequence[str], values: Sequence[Any]) -> str:
    return ", ".join(f"{n}={v!r}" for n, v in zip(names, values))


def _validation_message(e: Exception) -> str:
    if isinstance(e, ValidationError):
        return "; ".join(
            f"{'.'.join(str(x) for x in er['loc']) or 'config'}: {er['msg']}" for er in e.errors()
        )
    return str(e)


def apply_values(base: ConfigBase, names: Sequence[str], values: Sequence[Any], *, round_ints: bool = False,
                 where: str = "") -> ArenaConfig:
    """A validated copy of the config with ``values`` set at the paths ``names``.

    round_ints: a float assigned where the config holds an int (e.g. ``model.maxTurns``) is
    rounded (for sampled points); otherwise pydantic rejects a non-integral one.
    """
    d = dict(base.given)  # copy on write: only the containers along the swept paths are copied
    for name, v in zip(names, values):
        keys, old = base.resolve(name)
        v = _plain(v)
        if round_ints and isinstance(old, int) and not isinstance(old, bool) and isinstance(v, float):
            v = int(round(v))
        node, full = d, base.full
        for k in keys[:-1]:  # create the containers the user left to their defaults
            if isinstance(node, dict) and k not in node:
                node[k] = _copy(full[k]) if isinstance(full[k], list) else {}
            else:
                child = node[k]
                node[k] = dict(child) if isinstance(child, dict) else list(child) if isinstance(child, list) else child
            node, full = node[k], full[k]
        node[keys[-1]] = v
    try:
        return ArenaConfig.model_validate(d)
    except (ValidationError, ValueError) as e:
        raise ValueError(f"sweep{where}: {_describe(names, values)}: invalid config: {_validation_message(e)}") from None


# ----------------------------------------------------------------------------- points


def grid_points(grid: dict[str, Sequence[Any]]) -> pd.DataFrame:
    """Cartesian product of ``{path: values}`` (the first path varies slowest)."""
    if not isinstance(grid, dict) or not grid:
        raise ValueError(f"grid: must be a non-empty dict path -> list of values, got {grid!r}")
    for k, v in grid.items():
        if isinstance(v, (str, bytes)) or not hasattr(v, "__len__") or len(v) == 0:
            raise ValueError(f"grid[{k!r}]: must be a non-empty list of values, got {v!r}")
    names = list(grid)
    rows = list(itertools.product(*[list(grid[n]) for n in names]))
    return pd.DataFrame({n: [r[j] for r in rows] for j, n in enumerate(names)}, columns=names)


def sample_points(samples: dict[str, tuple[float, float]], n_samples: int, seed: int) -> pd.DataFrame:
    """``n_samples`` points drawn uniformly in the boxes ``{path: (low, high)}``."""
    if not isinstance(samples, dict) or not samples:
        raise ValueError(f"samples: must be a non-empty dict path -> (low, high), got {samples!r}")
    if not isinstance(n_samples, (int, np.integer)) or n_samples < 1:
        raise ValueError(f"n_samples: must be an integer >= 1 with samples=, got {n_samples!r}")
    names = list(samples)
    lo, hi = [], []
    for n in names:
        b = samples[n]
        if not (isinstance(b, (tuple, list)) and len(b) == 2 and float(b[0]) <= float(b[1])):
            raise ValueError(f"samples[{n!r}]: must be (low, high) with low <= high, got {b!r}")
        lo.append(float(b[0]))
        hi.append(float(b[1]))
    x = np.random.default_rng(seed).uniform(lo, hi, size=(int(n_samples), len(names)))
    return pd.DataFrame(x, columns=names)


def explicit_points(points: Any, names: Sequence[str] | None) -> pd.DataFrame:
    if isinstance(points, pd.DataFrame):
        if names is not None:
            points = points[list(names)]
        if points.shape[1] == 0 or len(points) == 0:
            raise ValueError("points: the DataFrame has no columns or no rows")
        return points.reset_index(drop=True)
    x = np.asarray(points)
    if x.ndim != 2:
        raise ValueError(f"points: must be a DataFrame or an (N, D) array, got shape {x.shape}")
    if names is None or len(names) != x.shape[1]:
        raise ValueError(f"names: an (N, D) points array needs D={x.shape[1]} parameter paths, got {names!r}")
    if x.shape[0] == 0:
        raise ValueError("points: no rows")
    return pd.DataFrame(x, columns=list(names))


# ----------------------------------------------------------------------------- results


@dataclass
class SweepResults:
    """``arenas``: one row per arena; ``points``: per-point means and 95% CIs over replicates."""

    arenas: pd.DataFrame
    points: pd.DataFrame
    names: list[str]
    meta: dict[str, Any] = field(default_factory=dict)

    def to_parquet(self, directory: str | Path) -> Path:
        """``arenas/`` as a dataset partitioned by run chunk (``chunk=K/``), ``points.parquet``
        and ``meta.json``."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        adir = d / "arenas"
        if adir.exists():
            import shutil

            shutil.rmtree(adir)
        per = int(self.meta.get("chunk_arenas") or max(len(self.arenas), 1))
        df = self.arenas.assign(chunk=(self.arenas["arena"].to_numpy() // per).astype(np.int64))
        pq.write_to_dataset(pa.Table.from_pandas(df, preserve_index=False), root_path=str(adir),
                            partition_cols=["chunk"])
        self.points.to_parquet(d / "points.parquet", index=False)
        (d / "meta.json").write_text(json.dumps({**self.meta, "names": self.names}, indent=2, default=str))
        return d

    @classmethod
    def from_parquet(cls, directory: str | Path) -> "SweepResults":
        import pyarrow.dataset as ds

        d = Path(directory)
        if not (d / "arenas").is_dir() or not (d / "points.parquet").is_file():
            raise ValueError(f"directory: no sweep (arenas/ and points.parquet) in {str(d)!r}")
        meta = json.loads((d / "meta.json").read_text()) if (d / "meta.json").is_file() else {}
        arenas = ds.dataset(str(d / "arenas"), format="parquet", partitioning="hive").to_table().to_pandas()
        arenas = arenas.drop(columns=["chunk"]).sort_values("arena", kind="stable", ignore_index=True)
        names = list(meta.pop("names", []))
        return cls(arenas, pd.read_parquet(d / "points.parquet"), names, meta)


def aggregate(arenas: pd.DataFrame, names: Sequence[str], outcomes: Sequence[str]) -> pd.DataFrame:
    """Per point: the swept values, ``replicates``, and per outcome ``_mean``, ``_sd``
    (ddof=1), ``_n`` (non-missing replicates), ``_ci_low``/``_ci_high`` = mean -/+ 1.96 sd/sqrt(n)."""
    first = arenas.drop_duplicates("point").set_index("point")
    out = pd.DataFrame({"point": first.index.to_numpy()})
    for n in names:
        out[n] = first[n].to_numpy()
    g = arenas.groupby("point", sort=True)
    out["replicates"] = g.size().to_numpy()
    for m in outcomes:
        x = pd.DataFrame({"point": arenas["point"].to_numpy(), m: arenas[m].astype("Float64").astype(float).to_numpy()})
        gm = x.groupby("point", sort=True)[m]
        mean, sd, cnt = gm.mean().to_numpy(), gm.std(ddof=1).to_numpy(), gm.count().to_numpy()
        with np.errstate(invalid="ignore", divide="ignore"):
            half = Z95 * sd / np.sqrt(cnt)
        out[f"{m}_mean"] = mean
        out[f"{m}_sd"] = sd
        out[f"{m}_n"] = cnt
        out[f"{m}_ci_low"] = mean - half
        out[f"{m}_ci_high"] = mean + half
    return out


# ----------------------------------------------------------------------------- the run


def _game_diff(a, b) -> list[str]:
    return [f.name for f in dataclasses.fields(a) if getattr(a, f.name) != getattr(b, f.name)]


def _shapes(params) -> tuple:
    leaves, treedef = jax.tree_util.tree_flatten(params)
    return treedef, tuple((np.shape(x), np.asarray(x).dtype) for x in leaves)


def _culprits(base: dict, names, values0, values_i, differs, build_kw, round_ints) -> list[str]:
    """The parameters that alone, applied to point 0, make ``differs(point0, that) `` true."""
    cfg0 = apply_values(base, names, values0, round_ints=round_ints)
    ref = build(cfg0, **build_kw)
    found = []
    for j, n in enumerate(names):
        if _plain(values0[j]) == _plain(values_i[j]):
            continue
        vals = list(values0)
        vals[j] = values_i[j]
        try:
            other = build(apply_values(base, names, vals, round_ints=round_ints), **build_kw)
        except ValueError:
            continue
        if differs(ref, other):
            found.append(n)
    return found or [n for j, n in enumerate(names) if _plain(values0[j]) != _plain(values_i[j])]


def _governance_shapes(configs) -> dict | None:
    from .governance_build import needed_slots, sanction_specs, uses_governance

    if not any(uses_governance(c) for c in configs):
        return None
    return {
        "pact_slots": max(needed_slots(c) for c in configs),
        "ladder_width": max([1] + [len(s.ladder) for c in configs for s in sanction_specs(c)]),
        "n_specs": max(len(sanction_specs(c)) for c in configs),
    }


def _host():
    """Build per-point params on the CPU backend when there is one (no per-leaf transfers)."""
    import contextlib

    try:
        return jax.default_device(jax.devices("cpu")[0])
    except RuntimeError:
        return contextlib.nullcontext()


def _leaves(params, n_turns: int) -> tuple[list[np.ndarray], Any]:
    p = params.__class__(**{**params.__dict__, "max_turns": jnp.asarray(n_turns, jnp.int32)})
    leaves, treedef = jax.tree_util.tree_flatten(p)
    return [np.asarray(x) for x in leaves], treedef


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")


def _key(v: Any) -> str:
    return repr(_plain(v))


# A sweep of more points than this tries the separable build (one build per distinct value
# of each parameter instead of one per point).
SEPARABLE_MIN_POINTS = 64
_SEPARABLE_CHECKS = 8


def _build_separable(base, names, values, n_turns, turns, generator, round_ints):
    """Stacked leaves composed from one build per distinct value of each parameter, when
    every params leaf depends on at most one swept parameter; verified bit for bit against
    full builds of a spread of points. None when not applicable (the caller builds every point)."""
    P = len(values)
    cols = [[_key(v[j]) for v in values] for j in range(len(names))]
    uniq = [list(dict.fromkeys(c)) for c in cols]
    if sum(len(u) for u in uniq) * 2 > P:
        return None
    first = {}  # a point holding each distinct value
    for j in range(len(names)):
        first[j] = {}
        for i, k in enumerate(cols[j]):
            first[j].setdefault(k, i)
    kw = {"generator": generator}

    def build_at(vals):
        cfg = apply_values(base, names, vals, round_ints=round_ints)
        with _host():
            g, p = build(cfg, **kw)
        return g, _leaves(p, int(turns or cfg.model.maxTurns))

    game0, (leaves0, treedef) = build_at(values[0])
    variants: list[list[list[np.ndarray]]] = []
    for j in range(len(names)):
        per_value = []
        for k in uniq[j]:
            vals = list(values[0])
            vals[j] = values[first[j][k]][j]
            g, (lv, td) = build_at(vals)
            if g != game0 or td != treedef or any(a.shape != b.shape or a.dtype != b.dtype for a, b in zip(lv, leaves0)):
                return None  # a structure or shape change: the full path explains it
            per_value.append(lv)
        variants.append(per_value)
    owner: dict[int, int] = {}
    for j, per_value in enumerate(variants):
        for li in range(len(leaves0)):
            if any(not _same(lv[li], leaves0[li]) for lv in per_value):
                if li in owner:
                    return None  # a leaf depends on two parameters: not separable
                owner[li] = j
    index = [np.asarray(pd.factorize(pd.Series(cols[j]))[0], np.int64) for j in range(len(names))]
    stacked = []
    for li, x0 in enumerate(leaves0):
        if li in owner:
            j = owner[li]
            table_j = np.stack([lv[li] for lv in variants[j]], axis=-1)  # [..., U_j]
            stacked.append(np.ascontiguousarray(table_j[..., index[j]]))
        else:
            stacked.append(np.broadcast_to(x0[..., None], x0.shape + (P,)))
    checks = sorted(set(np.linspace(0, P - 1, _SEPARABLE_CHECKS).astype(int).tolist()))
    for i in checks:
        g, (lv, _) = build_at(values[i])
        if g != game0 or not all(_same(a, x[..., i]) for a, x in zip(lv, stacked)):
            return None
    return game0, stacked, treedef


def _build_points(base, names, table, turns, generator, round_ints):
    """Point 0's config, the shared Game, stacked numpy leaves [..., P], treedef, each
    point's turns and sustainable yield. Every point's config is validated."""
    from .govsim import sustainable_yield

    values = [tuple(r) for r in table.itertuples(index=False, name=None)]
    n_turns, yields = [], []
    cfg0 = None
    for i, v in enumerate(values):  # validate every point (cheap), keep only what the run needs
        c = apply_values(base, names, v, round_ints=round_ints, where=f" point {i}")
        cfg0 = c if cfg0 is None else cfg0
        n_turns.append(int(turns or c.model.maxTurns))
        yields.append(float(sustainable_yield(c)))
    if len(values) >= SEPARABLE_MIN_POINTS:
        fast = _build_separable(base, names, values, n_turns, turns, generator, round_ints)
        if fast is not None:
            game0, stacked, treedef = fast
            return cfg0, game0, stacked, treedef, n_turns, np.asarray(yields, float), "separable"
    configs = [apply_values(base, names, v, round_ints=round_ints, where=f" point {i}") for i, v in enumerate(values)]
    build_kw: dict = {"generator": generator}

    def build_all(kw):
        with _host():  # per-point params are small: build them on the host, stack, then transfer
            return [build(c, **kw) for c in configs]

    built = build_all(build_kw)
    game0 = built[0][0]
    for i, (g, _) in enumerate(built):
        if g != game0:
            bad = _culprits(base, names, values[0], values[i], lambda a, b: a[0] != b[0], build_kw, round_ints)
            raise ValueError(
                f"sweep: parameter(s) {bad} change the static structure of the game "
                f"(Game.{'/'.join(_game_diff(game0, g))} differs between point 0 ({_describe(names, values[0])}) "
                f"and point {i} ({_describe(names, values[i])})); only values that keep the structure "
                "(strategies, number of players, engine, scheduler, layers) share one compiled program: "
                "run one sweep per structure"
            )
    shapes0 = _shapes(built[0][1])
    if any(_shapes(p) != shapes0 for _, p in built):
        gov = _governance_shapes(configs)
        if gov is not None:  # pad governance arrays to the sweep's largest (one program)
            build_kw = {**build_kw, "governance": gov}
            built = build_all(build_kw)
            game0 = built[0][0]
            shapes0 = _shapes(built[0][1])
        for i, (g, p) in enumerate(built):
            if _shapes(p) != shapes0 or g != game0:
                bad = _culprits(base, names, values[0], values[i],
                                lambda a, b: _shapes(a[1]) != _shapes(b[1]) or a[0] != b[0], build_kw, round_ints)
                raise ValueError(
                    f"sweep: parameter(s) {bad} change the shapes of the params (point 0: "
                    f"{_describe(names, values[0])}; point {i}: {_describe(names, values[i])}); "
                    "only values that keep every array's shape share one compiled program"
                )
    leaves_per_point = []
    treedef = None
    for (g, p), nt in zip(built, n_turns):
        leaves, treedef = _leaves(p, nt)
        leaves_per_point.append(leaves)
    stacked = [np.stack([pl[j] for pl in leaves_per_point], axis=-1) for j in range(len(leaves_per_point[0]))]
    return cfg0, game0, stacked, treedef, n_turns, np.asarray(yields, float), "per point"


def _metric_means(flat: dict) -> dict[str, np.ndarray]:
    played = np.asarray(flat["played"])
    out = {}
    for m in METRICS:
        x = np.where(played, np.asarray(flat["metrics"][m], dtype=float), np.nan)
        cnt = np.sum(~np.isnan(x), axis=0)
        out[f"mean_{m}"] = np.where(cnt > 0, np.nansum(x, axis=0) / np.maximum(cnt, 1), np.nan)
    return out


def _validate(replicates, seed, max_batch, turns, memory_budget):
    if not isinstance(replicates, (int, np.integer)) or replicates < 1:
        raise ValueError(f"replicates: must be an integer >= 1, got {replicates!r}")
    if not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**32:
        raise ValueError(f"seed: must be an integer in [0, 2**32), got {seed!r}")
    if not isinstance(max_batch, (int, np.integer)) or max_batch < 1:
        raise ValueError(f"max_batch: must be an integer >= 1, got {max_batch!r}")
    if turns is not None and (not isinstance(turns, (int, np.integer)) or turns < 1):
        raise ValueError(f"turns: must be an integer >= 1, got {turns!r}")
    if memory_budget is not None and (not isinstance(memory_budget, (int, np.integer)) or memory_budget < 1):
        raise ValueError(f"memory_budget: must be a number of bytes >= 1, got {memory_budget!r}")


def resolve_devices(devices: Any = None) -> list:
    """``None``: every local device; an int ``k``: the first k; a list of jax devices as is."""
    local = jax.local_devices()
    if devices is None:
        return list(local)
    if isinstance(devices, (int, np.integer)) and not isinstance(devices, bool):
        if not 1 <= devices <= len(local):
            raise ValueError(f"devices: must be between 1 and the {len(local)} local device(s), got {devices!r}")
        return list(local[: int(devices)])
    devs = list(devices)
    if not devs or not all(isinstance(d, jax.Device) for d in devs):
        raise ValueError(f"devices: None, a count, or a non-empty list of jax devices, got {devices!r}")
    return devs


def _nbytes(tree) -> int:
    return int(sum(int(np.prod(x.shape)) * np.dtype(x.dtype).itemsize for x in jax.tree_util.tree_leaves(tree)))


# Host bytes per summary cell of a kept arena row (value, pandas copies while concatenating).
ROW_CELL_BYTES = 32
# Device working set per arena = this many copies of (params + state) (in/out buffers of the
# jitted chunk, XLA temporaries of one turn).
DEVICE_COPIES = 6


def bytes_per_arena(game, params1, keys1, chunk_turns: int, history: bool, n_columns: int) -> int:
    """An estimate of the memory one arena of a chunk costs (see docs/semantics.md §12)."""
    from functools import partial

    from .kernels.rollout import init_batch, run_turns

    state = jax.eval_shape(partial(init_batch, game), params1)
    per = DEVICE_COPIES * (_nbytes(state) + _nbytes(params1))
    if history:
        _, rec = jax.eval_shape(partial(run_turns, game, 1, True), keys1, state, params1)
        per += 3 * chunk_turns * _nbytes(rec)  # device records, host copy, flattened frame
    return per + ROW_CELL_BYTES * n_columns


class SweepPlan:
    """A sweep prepared to run chunk by chunk: points built and validated, one Game, the
    chunk width (``max_batch``, ``memory_budget``, device count) and the arena chunks.

    ``run_chunk(k)`` returns chunk ``k``'s arena rows; any process that builds the same plan
    (same config, table and options) gets the same chunks, which is what the resumable CLI
    and the dask runner (bdpd_jax/distributed.py) rely on.
    """

    def __init__(self, config, table: pd.DataFrame, *, replicates: int = 1, seed: int = 0, history: bool = False,
                 turns: int | None = None, max_batch: int = 131072, memory_budget: int | None = None,
                 generator: str = "hash", round_ints: bool = False, common_random: bool = False,
                 devices: Any = None, chunk_width: int | None = None):
        cfg = ArenaConfig.load(config)
        _validate(replicates, seed, max_batch, turns, memory_budget)
        names = [str(c) for c in table.columns]
        if len(set(names)) != len(names):
            raise ValueError(f"names: duplicate parameter paths {names}")
        base = config_base(cfg)
        check_paths(base, names)  # bad paths fail before anything is built
        cfg0, game, stacked, treedef, n_turns, yields, self.build_mode = _build_points(
            base, names, table, turns, generator, round_ints)
        self.cfg, self.names, self.table = cfg, names, table.reset_index(drop=True)
        self.cfg0, self.game, self.stacked, self.treedef, self.n_turns = cfg0, game, stacked, treedef, n_turns
        self.replicates, self.seed, self.history, self.turns = int(replicates), int(seed), bool(history), turns
        self.generator, self.common_random, self.round_ints = generator, bool(common_random), bool(round_ints)
        self.devices = resolve_devices(devices)
        nd = len(self.devices)
        self.n_points = len(n_turns)
        self.total = self.n_points * self.replicates
        self.max_turns = max(n_turns)
        self.chunk_turns = self.max_turns if self.max_turns <= 1000 else 1000
        self.labels = [p.strategy_name for p in cfg0.require_players()]
        n_cols = 16 + 3 * game.n_players + len(names) + (len(METRICS) if history else 0)
        cap = int(max_batch)
        self.arena_bytes = None
        if memory_budget is not None:
            p1 = jax.tree_util.tree_unflatten(treedef, [jax.ShapeDtypeStruct(x.shape[:-1] + (1,), x.dtype)
                                                        for x in stacked])
            k1 = jax.ShapeDtypeStruct((2, 1), jnp.uint32)
            self.arena_bytes = bytes_per_arena(game, p1, k1, self.chunk_turns, self.history, n_cols)
            cap = min(cap, max(1, int(memory_budget) // self.arena_bytes))
        w = min(cap, self.total)
        if chunk_width is not None:  # a layout fixed elsewhere (another process, a resumed run)
            if not isinstance(chunk_width, (int, np.integer)) or chunk_width < 1:
                raise ValueError(f"chunk_width: must be an integer >= 1, got {chunk_width!r}")
            b = int(chunk_width)
        elif w == self.total:  # one chunk, padded to a multiple of the device count
            b = -(-self.total // nd) * nd
        else:
            b = max(nd, (w // nd) * nd)
        self.chunk_width = b  # arenas per chunk (the layout)
        self.run_width = -(-b // nd) * nd  # arenas per run: padded to a multiple of the device count
        self.chunks = [(a, min(a + b, self.total)) for a in range(0, self.total, b)]
        self.memory_budget = memory_budget
        # GovSim columns: simulate's own code on the whole chunk; only ``efficiency`` depends
        # on the point's config (sustainable yield f0) and turns, so it is redone per group
        # of points sharing (f0, turns) with govsim's formula.
        self.yields = yields
        self.group_of_point, _ = pd.factorize(pd.Series(list(zip(np.nan_to_num(self.yields, nan=-np.inf), n_turns))))
        self._sharding = None
        if nd > 1 or devices is not None:
            from jax.sharding import Mesh, NamedSharding, PartitionSpec

            mesh = Mesh(np.asarray(self.devices), ("arenas",))
            self._sharding = lambda ndim: NamedSharding(mesh, PartitionSpec(*([None] * (ndim - 1)), "arenas"))

    def config_at(self, i: int) -> ArenaConfig:
        """Point ``i``'s config."""
        row = next(self.table.iloc[[int(i)]].itertuples(index=False, name=None))  # (keeps each column's dtype)
        return apply_values(config_base(self.cfg), self.names, row, round_ints=self.round_ints)

    @property
    def n_chunks(self) -> int:
        return len(self.chunks)

    def _put(self, x):
        x = np.asarray(x) if not isinstance(x, jax.Array) else x
        if self._sharding is None:
            return jnp.asarray(x)
        return jax.device_put(x, self._sharding(x.ndim))

    def run_chunk(self, k: int, bar=None) -> pd.DataFrame:
        """The arena rows of chunk ``k`` (arenas ``chunks[k]``)."""
        from . import govsim

        a0, a1 = self.chunks[k]
        b, reps, names, table = self.run_width, self.replicates, self.names, self.table
        idx = np.arange(a0, a1, dtype=np.int64)
        n = len(idx)
        padded = np.concatenate([idx, np.full(b - n, idx[-1], np.int64)])  # every chunk has shape b
        point_of = padded // reps
        params = jax.tree_util.tree_unflatten(self.treedef, [self._put(x[..., point_of]) for x in self.stacked])
        keys = self._put(arena_keys(self.seed, padded % reps if self.common_random else padded))
        state, rec = run_batch(self.game, params, keys, self.max_turns, self.chunk_turns, self.history, bar)
        take = lambda tree: jax.tree_util.tree_map(lambda x: np.asarray(x)[..., :n], tree)  # noqa: E731
        final = take(_to_numpy(summary_of(state)))
        final["extra"] = take(_summary_extra(self.game, state))
        state_np, params_np = take(state), take(params)  # (the arenas of this chunk, unpadded)
        del state, params
        rec_np = take(rec) if self.history else None
        frame = summary_frame(final, idx, self.labels)
        pts = idx // reps
        p0 = int(pts[0])
        frame = _with_govsim(frame, self.config_at(p0), state_np, params_np, rec_np, self.n_turns[p0])
        groups = self.group_of_point[pts]
        uniq = np.unique(groups)
        if len(uniq) > 1:
            eff = frame["efficiency"].to_numpy().copy()
            gains = frame["total_gain"].to_numpy()
            played = frame["survival_time"].to_numpy()
            for gid in uniq:
                mask = groups == gid
                q = int(pts[mask][0])
                eff[mask] = govsim.govsim_columns(played[mask], self.n_turns[q], float(self.yields[q]),
                                                  gains[None, mask], None)["efficiency"]
            frame = frame.assign(efficiency=eff)
        wealth = np.stack([frame[f"wealth_{i}"].to_numpy(float) for i in range(self.game.n_players)])
        extra = {"wealth_mean": wealth.mean(axis=0)}
        if self.history:
            extra.update(_metric_means(_flatten_record(rec_np)))
        frame = frame.assign(**extra)
        lead = {"point": pts.astype(np.int64), "replicate": (idx % reps).astype(np.int64)}
        for n_ in names:
            col = table[n_].to_numpy(dtype=object) if table[n_].dtype == object else table[n_].to_numpy()
            lead[n_] = col[pts]
        return pd.concat([pd.DataFrame(lead), frame.reset_index(drop=True)], axis=1)

    def outcomes(self) -> list[str]:
        return list(POINT_OUTCOMES) + ([f"mean_{m}" for m in METRICS] if self.history else [])

    def meta(self) -> dict[str, Any]:
        cfg = self.cfg
        return {
            "config": cfg.model_dump(mode="json", exclude={"players"}),
            "players": [{**p.model_dump(mode="json", exclude={"strategy"}), "strategy": p.strategy_name}
                        for p in cfg.require_players()],
            "replicates": self.replicates, "seed": self.seed, "n_points": self.n_points, "n_arenas": self.total,
            "turns": self.turns, "max_turns": self.max_turns, "generator": self.generator,
            "history": self.history, "chunk_arenas": self.chunk_width, "n_chunks": self.n_chunks,
            "common_random": self.common_random, "n_devices": len(self.devices),
            "memory_budget": self.memory_budget, "arena_bytes_estimate": self.arena_bytes,
            "build": self.build_mode,
        }


def run_points(
    config: ArenaConfig | dict | str,
    table: pd.DataFrame,
    *,
    replicates: int = 1,
    seed: int = 0,
    history: bool = False,
    turns: int | None = None,
    max_batch: int = 131072,
    generator: str = "hash",
    progress: bool | None = None,
    round_ints: bool = False,
    common_random: bool = False,
    memory_budget: int | None = None,
    devices: Any = None,
) -> SweepResults:
    """Run every row of ``table`` (columns = config paths) ``replicates`` times in one
    batched program; see :func:`sweep`."""
    plan = SweepPlan(config, table, replicates=replicates, seed=seed, history=history, turns=turns,
                     max_batch=max_batch, memory_budget=memory_budget, generator=generator,
                     round_ints=round_ints, common_random=common_random, devices=devices)
    bar = None
    n_bar = plan.n_chunks * math.ceil(plan.max_turns / plan.chunk_turns)
    if progress or (progress is None and n_bar > 4):
        from tqdm.auto import tqdm

        bar = tqdm(total=n_bar, desc="sweep chunks", unit="chunk", leave=False)
    frames = []
    try:
        for k in range(plan.n_chunks):
            frames.append(plan.run_chunk(k, bar))
    finally:
        if bar is not None:
            bar.close()
    arenas = pd.concat(frames, ignore_index=True)
    points = aggregate(arenas, plan.names, plan.outcomes())
    return SweepResults(arenas, points, plan.names, plan.meta())


def points_table(grid=None, samples=None, points=None, *, names=None, n_samples=None, seed: int = 0) -> pd.DataFrame:
    """The points of a sweep from exactly one of grid=, samples= (with n_samples=), points=."""
    given = [x is not None for x in (grid, samples, points)]
    if sum(given) != 1:
        raise ValueError("sweep: give exactly one of grid=, samples= (with n_samples=) or points=")
    if grid is not None:
        return grid_points(grid)
    if samples is not None:
        return sample_points(samples, n_samples, seed)
    return explicit_points(points, names)


def sweep(
    config: ArenaConfig | dict | str,
    grid: dict[str, Sequence[Any]] | None = None,
    samples: dict[str, tuple[float, float]] | None = None,
    points: pd.DataFrame | np.ndarray | None = None,
    replicates: int = 1,
    seed: int = 0,
    history: bool = False,
    max_batch: int = 131072,
    progress: bool | None = None,
    *,
    names: Sequence[str] | None = None,
    n_samples: int | None = None,
    turns: int | None = None,
    generator: str = "hash",
    common_random: bool = False,
    memory_budget: int | None = None,
    devices: Any = None,
) -> SweepResults:
    """Run a parameter sweep of ``config`` as one batched run that compiles once.

    Exactly one of:
        grid: ``{path: [values]}``, the cartesian product (first path varies slowest);
        samples: ``{path: (low, high)}`` with ``n_samples``: points uniform in the box, drawn
            by ``numpy.random.default_rng(seed)``; a float drawn for an int field is rounded;
        points: a DataFrame (columns = paths) or an (N, D) array with ``names=``.
    Every point x replicate is one arena; arena ``i`` is point ``i // replicates``,
    replicate ``i % replicates``, and equals ``simulate(config_at_point, seed=seed,
    arena_offset=i)``. At most ``max_batch`` arenas run at once.
    history: keep per-turn records (per chunk) to add each arena's mean of the five
        governance metrics (``mean_<metric>``); frames of turns are not kept.
    turns: turns to play at every point (default: each point's ``model.maxTurns``).
    common_random: common random numbers: replicate ``r`` of every point draws from
        ``(seed, r)`` (equals ``simulate(config_at_point, seed=seed, arena_offset=r)``), so
        points differ only by their values (variance reduction for comparisons and
        sensitivity indices); default False: every arena has its own stream ``(seed, i)``.
    memory_budget: bytes a chunk may use (an estimate from the state, params and records of
        one arena, docs/semantics.md §12); chunks are sized to fit, never above max_batch.
    devices: where the arenas of a chunk run, sharded over a 1-D mesh along the batch axis:
        None (default) every local device, an int k the first k, or a list of jax devices.
        The chunk width is a multiple of the device count; results are bit-identical to
        one device.

    Returns a :class:`SweepResults`. Raises ValueError naming the path and value of a bad
    parameter, or the parameter that changes the static structure of the game.
    """
    table = points_table(grid, samples, points, names=names, n_samples=n_samples, seed=seed)
    return run_points(config, table, replicates=replicates, seed=seed, history=history, turns=turns,
                      max_batch=max_batch, generator=generator, progress=progress,
                      round_ints=samples is not None, common_random=common_random,
                      memory_budget=memory_budget, devices=devices)
