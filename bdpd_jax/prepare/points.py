"""Many points of one config prepared at once: ``prepare_points(base, names, values) ->
PreparedPoints``, the batched ``prepare`` that sweeps, sensitivity analyses, Dask workers and
searches share.

From one validated base (a :class:`PreparedRun`) each point's config is the base with the
swept paths set (prepare/paths.py: only the swept values are checked for magnitude, and a
row of values seen before is not validated again); every point is built once (or, for many
points whose params are separable, once per distinct value of each path) into ONE static
Game and params leaves stacked on a trailing points axis. This module owns what a point
derives from its config: its turns (``max_turns``), its sustainable yield and the governance
shapes that fit every point (one compiled program).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
import pandas as pd

from ..config.game import ArenaConfig
from ..kernels.game import Game
from ..kernels.params import Params
from .game import build, sustainable_yield
from .governance import governance_shapes
from .paths import apply_values, config_base, describe_point, plain_value
from .prepared import PreparedRun

# Points from which the separable build is tried (one build per distinct value of each path
# instead of one per point).
SEPARABLE_MIN_POINTS = 64
# Points of a separable build checked bit for bit against their own full build.
_SEPARABLE_CHECKS = 8


@dataclass(frozen=True)
class PreparedPoints:
    """The points of a sweep of one base config, prepared: one Game, the params leaves
    stacked over points (``stacked[j][..., i]`` is point ``i``'s leaf ``j``, its ``max_turns``
    the point's turns), each point's turns and sustainable yield."""

    base: PreparedRun  # the base config's preparation (labels, names, meta)
    names: tuple[str, ...]  # the swept config paths
    config0: ArenaConfig  # point 0's config
    game: Game
    treedef: Any
    stacked: tuple[np.ndarray, ...]  # params leaves [..., P]
    n_turns: tuple[int, ...]  # each point's turns
    max_yield: np.ndarray  # float[P]: each point's sustainable yield
    governance: dict | None  # the governance shapes every point was built with
    mode: str  # "per point" or "separable"

    @property
    def n_points(self) -> int:
        return len(self.n_turns)

    def params_at(self, i: int) -> Params:
        """Point ``i``'s params (no batch axis), as ``prepare`` of its config alone gives them
        (with :attr:`governance`'s shapes) at its turns."""
        params: Params = jax.tree_util.tree_unflatten(self.treedef, [x[..., int(i)] for x in self.stacked])
        return params


def rows_of(table: pd.DataFrame | Sequence[Sequence[Any]]) -> list[tuple]:
    """The points' values, one tuple per point (a DataFrame's columns keep their dtypes)."""
    if isinstance(table, pd.DataFrame):
        return [tuple(r) for r in table.itertuples(index=False, name=None)]
    return [tuple(r) for r in table]


def prepare_points(
    base: PreparedRun,
    names: Sequence[str],
    table: pd.DataFrame | Sequence[Sequence[Any]],
    *,
    turns: int | None = None,
    round_ints: bool = False,
    separable_min: int = SEPARABLE_MIN_POINTS,
) -> PreparedPoints:
    """Prepare every row of ``table`` (values of the paths ``names``) from ``base``.

    turns: turns of every point (default: each point's ``model.maxTurns``); round_ints: a
    float set where the config holds an int is rounded (sampled points). Raises ValueError
    naming the path and value of a bad point, or the paths that change the game's structure
    or the params' shapes (points that cannot share one compiled program).
    """
    names = tuple(str(n) for n in names)
    values = rows_of(table)
    cb = config_base(base.config)
    seen: dict[str, ArenaConfig] = {}  # a row of values validated once, whatever its count

    def config_at(vals: Sequence[Any], where: str = "") -> ArenaConfig:
        key = repr([plain_value(v) for v in vals])
        hit = seen.get(key)
        if hit is None:
            hit = seen[key] = apply_values(cb, names, vals, round_ints=round_ints, where=where)
        return hit

    configs = [config_at(v, f" point {i}") for i, v in enumerate(values)]
    n_turns = tuple(int(turns or c.model.max_turns) for c in configs)
    yields = np.asarray([sustainable_yield(c) for c in configs], float)
    gov = governance_shapes(configs)
    build_kw: dict[str, Any] = {"generator": base.generator}
    if gov is not None:  # the governance arrays padded to the points' largest (one program)
        build_kw["governance"] = gov
    builds: dict[int, tuple[Game, list[np.ndarray], Any]] = {}  # by config identity: built once

    def build_leaves(cfg: ArenaConfig) -> tuple[Game, list[np.ndarray], Any]:
        hit = builds.get(id(cfg))
        if hit is None:
            with cpu_build_device():  # small arrays: built on the host, stacked, then placed
                game, params = build(cfg, **build_kw)
            params = params.with_max_turns(np.asarray(int(turns or cfg.model.max_turns), np.int32))
            leaves, treedef = jax.tree_util.tree_flatten(params)
            hit = builds[id(cfg)] = (game, [np.asarray(x) for x in leaves], treedef)
        return hit

    def point(mode: str, game: Game, stacked: list[np.ndarray], treedef: Any) -> PreparedPoints:
        return PreparedPoints(base, names, configs[0], game, treedef, tuple(stacked), n_turns, yields, gov, mode)

    if len(values) >= separable_min:
        fast = _separable(values, configs, config_at, build_leaves)
        if fast is not None:
            return point("separable", *fast)
    built = [build_leaves(c) for c in configs]
    game0, leaves0, treedef = built[0]
    shapes0 = [(x.shape, x.dtype) for x in leaves0]
    for i, (g, lv, td) in enumerate(built):
        if g != game0:
            bad = _culprits(names, values, i, config_at, build_leaves, lambda a, b: a[0] != b[0])
            raise ValueError(
                f"sweep: parameter(s) {bad} change the static structure of the game "
                f"(Game.{'/'.join(_game_diff(game0, g))} differs between point 0 "
                f"({describe_point(names, values[0])}) and point {i} ({describe_point(names, values[i])})); "
                "only values that keep the structure (strategies, number of players, engine, scheduler, "
                "layers) share one compiled program: run one sweep per structure"
            )
        if td != treedef or [(x.shape, x.dtype) for x in lv] != shapes0:
            bad = _culprits(names, values, i, config_at, build_leaves, _shapes_differ)
            raise ValueError(
                f"sweep: parameter(s) {bad} change the shapes of the params (point 0: "
                f"{describe_point(names, values[0])}; point {i}: {describe_point(names, values[i])}); "
                "only values that keep every array's shape share one compiled program"
            )
    stacked = [np.stack([b[1][j] for b in built], axis=-1) for j in range(len(leaves0))]
    return point("per point", game0, stacked, treedef)


def cpu_build_device() -> contextlib.AbstractContextManager:
    """Build per-point params on the CPU backend when there is one (no per-leaf transfers)."""
    try:
        return jax.default_device(jax.devices("cpu")[0])
    except RuntimeError:
        return contextlib.nullcontext()


def same_leaf(a: np.ndarray, b: np.ndarray) -> bool:
    """Two params leaves equal: shape, dtype and values (NaN equal to NaN)."""
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")


def _game_diff(a: Game, b: Game) -> list[str]:
    return [f.name for f in dataclasses.fields(a) if getattr(a, f.name) != getattr(b, f.name)]


def _shapes_differ(a: tuple, b: tuple) -> bool:
    return a[0] != b[0] or a[2] != b[2] or [(x.shape, x.dtype) for x in a[1]] != [(x.shape, x.dtype) for x in b[1]]


def _culprits(names, values, i, config_at, build_leaves, differs: Callable[[tuple, tuple], bool]) -> list[str]:
    """The paths that alone, set to point ``i``'s value in point 0, make ``differs`` true."""
    ref = build_leaves(config_at(values[0]))
    found = []
    for j, n in enumerate(names):
        if plain_value(values[0][j]) == plain_value(values[i][j]):
            continue
        vals = list(values[0])
        vals[j] = values[i][j]
        try:
            other = build_leaves(config_at(vals))
        except ValueError:
            continue
        if differs(ref, other):
            found.append(n)
    return found or [n for j, n in enumerate(names) if plain_value(values[0][j]) != plain_value(values[i][j])]


def _separable(values, configs, config_at, build_leaves):
    """(Game, stacked leaves, treedef) composed from one build per distinct value of each path,
    when every params leaf depends on at most one path; checked bit for bit against the full
    builds of a spread of points. None when not applicable (then every point is built)."""
    P, D = len(values), len(values[0])
    cols = [[repr(plain_value(v[j])) for v in values] for j in range(D)]
    uniq = [list(dict.fromkeys(c)) for c in cols]
    if sum(len(u) for u in uniq) * 2 > P:
        return None
    first = [{k: c.index(k) for k in u} for c, u in zip(cols, uniq, strict=True)]  # a point holding each value
    game0, leaves0, treedef = build_leaves(configs[0])
    variants: list[list[list[np.ndarray]]] = []
    for j in range(D):
        per_value = []
        for k in uniq[j]:
            vals = list(values[0])
            vals[j] = values[first[j][k]][j]
            g, lv, td = build_leaves(config_at(vals))  # (point 0's own value: point 0's build)
            if (
                g != game0
                or td != treedef
                or any(a.shape != b.shape or a.dtype != b.dtype for a, b in zip(lv, leaves0, strict=True))
            ):
                return None  # a structure or shape change: the full path explains it
            per_value.append(lv)
        variants.append(per_value)
    owner: dict[int, int] = {}
    for j, per_value in enumerate(variants):
        for li in range(len(leaves0)):
            if any(not same_leaf(lv[li], leaves0[li]) for lv in per_value):
                if li in owner:
                    return None  # a leaf depends on two paths: not separable
                owner[li] = j
    index = [np.asarray(pd.factorize(pd.Series(cols[j]))[0], np.int64) for j in range(D)]
    stacked = []
    for li, x0 in enumerate(leaves0):
        if li in owner:
            j = owner[li]
            table_j = np.stack([lv[li] for lv in variants[j]], axis=-1)  # [..., U_j]
            stacked.append(np.ascontiguousarray(table_j[..., index[j]]))
        else:
            stacked.append(np.broadcast_to(x0[..., None], x0.shape + (P,)))
    for i in sorted(set(np.linspace(0, P - 1, _SEPARABLE_CHECKS).astype(int).tolist())):
        g, lv, _ = build_leaves(configs[i])
        if g != game0 or not all(same_leaf(a, x[..., i]) for a, x in zip(lv, stacked, strict=True)):
            return None
    return game0, stacked, treedef


__all__ = ["SEPARABLE_MIN_POINTS", "PreparedPoints", "prepare_points", "same_leaf"]
