"""A sweep's plan: its points built and validated once, one static Game, the chunk layout
(``max_batch``, ``memory_budget``, devices), and each chunk's run into arena rows
(:class:`SweepPlan`); plans are cached by base, table and options (:func:`cached_plan`). Run by
:mod:`bdpd_jax.sweeps.sweep`, the CLI's resumable runner and the Dask runner."""

from __future__ import annotations

import functools
import hashlib
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from ..config.budget import arena_steps, check_budget
from ..config.game import ArenaConfig
from ..kernels.metrics import METRICS
from ..prepare.paths import apply_values, check_paths, config_base
from ..prepare.points import SEPARABLE_MIN_POINTS, prepare_points, same_leaf
from ..prepare.prepared import PreparedRun
from ..results.frames import summary_columns
from ..results.stream import flatten_record
from ..run.options import RunOptions
from ..run.runner import arena_keys, one_program, run_batch, to_numpy
from ..run.simulate import FLOAT, compiled_final, default_chunk, run_whole
from .build import bytes_per_arena, resolve_devices
from .results import HISTORY_OUTCOMES, POINT_OUTCOMES, ArenaColumns, as_frame, gini, history_totals, metric_means


def _values(col: pd.Series) -> np.ndarray:
    """A points-table column's values as a read-only array (objects stay objects)."""
    v = np.array(col.to_numpy(dtype=object) if col.dtype == object else col.to_numpy())
    v.flags.writeable = False
    return v


def _shared(x: np.ndarray) -> bool:
    """Whether a stacked leaf (..., P) holds the same value at every point."""
    return same_leaf(x, np.broadcast_to(x[..., :1], x.shape))


def chunk_layout(total: int, cap: int, n_devices: int, chunk_width: int | None = None) -> int:
    """Arenas per chunk: at most ``cap``, a multiple of the device count (one chunk of the
    whole run is padded up to one), or ``chunk_width`` when a layout was fixed elsewhere
    (another process, a resumed run)."""
    w = min(cap, total)
    if chunk_width is not None:
        if isinstance(chunk_width, bool) or not isinstance(chunk_width, (int, np.integer)) or chunk_width < 1:
            raise ValueError(f"chunk_width: must be an integer >= 1, got {chunk_width!r}")
        return int(chunk_width)
    if w == total:  # one chunk, padded to a multiple of the device count
        return -(-total // n_devices) * n_devices
    return max(n_devices, (w // n_devices) * n_devices)


class SweepPlan:
    """A sweep prepared to run chunk by chunk: points built and validated, one Game, the
    chunk width (``max_batch``, ``memory_budget``, device count) and the arena chunks.

    ``run_chunk(k)`` returns chunk ``k``'s arena rows; any process that builds the same plan
    (same config, table and options) gets the same chunks, which is what the resumable CLI
    and the dask runner (bdpd_jax/sweeps/distributed.py) rely on.
    """

    def __init__(self, base: PreparedRun, table: pd.DataFrame, options: RunOptions) -> None:
        if base.generator != options.generator:
            raise ValueError(
                f"generator: the base was prepared with {base.generator!r}, the options ask {options.generator!r}"
            )
        self.options = options  # (what another process needs to plan the same)
        self.prep = base  # the base config, validated and built once
        cfg = self.prep.config
        names = [str(c) for c in table.columns]
        if len(set(names)) != len(names):
            raise ValueError(f"names: duplicate parameter paths {names}")
        check_paths(config_base(cfg), names)  # bad paths fail before anything is built
        replicates, turns, history = options.replicates, options.turns, options.history
        field = "replicates" if int(replicates) >= len(table) else "points"
        steps = {"points": len(table), "replicates": int(replicates), **arena_steps(cfg, turns)}
        check_budget(field, steps[field], steps)  # (the base config's turns: a swept maxTurns is not read yet)
        self.points = prepare_points(
            self.prep, names, table, turns=turns, round_ints=options.round_ints, separable_min=SEPARABLE_MIN_POINTS
        )
        game, stacked = self.points.game, self.points.stacked
        self.cfg, self.names, self.table = cfg, names, table.reset_index(drop=True)
        # each swept path's values as arrays (read-only): the chunks' columns repeat them
        self.values = {n: _values(self.table[n]) for n in names}
        self.cfg0, self.game, self.stacked, self.treedef = self.points.config0, game, stacked, self.points.treedef
        self.n_turns = list(self.points.n_turns)
        self.replicates, self.seed, self.history, self.turns = int(replicates), int(options.seed), bool(history), turns
        self.generator, self.common_random = options.generator, bool(options.common_random)
        self.devices = resolve_devices(options.devices)
        nd = len(self.devices)
        self.n_points = self.points.n_points
        self.total = self.n_points * self.replicates
        self.max_turns = max(self.n_turns)
        self.chunk_turns = default_chunk(self.max_turns)
        self.labels = [p.strategy_name for p in self.cfg0.require_players()]
        n_cols = 16 + 3 * game.n_players + len(names) + (len(METRICS) if history else 0)
        cap = int(options.max_batch)
        self.arena_bytes = None
        if options.memory_budget is not None:
            p1 = jax.tree_util.tree_unflatten(
                self.treedef, [jax.ShapeDtypeStruct(x.shape[:-1] + (1,), x.dtype) for x in stacked]
            )
            k1 = jax.ShapeDtypeStruct((2, 1), jnp.uint32)
            self.arena_bytes = bytes_per_arena(game, p1, k1, self.chunk_turns, self.history, n_cols)
            cap = min(cap, max(1, int(options.memory_budget) // self.arena_bytes))
        b = chunk_layout(self.total, cap, nd, options.chunk_width)
        self.chunk_width = b  # arenas per chunk (the layout)
        self.run_width = -(-b // nd) * nd  # arenas per run: padded to a multiple of the device count
        self.chunks = [(a, min(a + b, self.total)) for a in range(0, self.total, b)]
        self.memory_budget = options.memory_budget
        # GovSim columns: simulate's own code on the whole chunk, with each arena's point's
        # sustainable yield f0 and turns (``efficiency`` reads both).
        self.yields = np.asarray(self.points.max_yield, dtype=float)
        self._points_of: dict[int, jax.Array] = {}
        self._sharding: Callable[[int], Any] | None = None
        # sharded over a mesh unless one device that is where arrays go by default (then the
        # run is the one-program path, as with devices=None on a one-device machine)
        if nd > 1 or {self.devices[0]} != jnp.zeros(()).devices():
            mesh = Mesh(np.asarray(self.devices), ("arenas",))
            self._sharding = lambda ndim: NamedSharding(mesh, PartitionSpec(*([None] * (ndim - 1)), "arenas"))

    @functools.cached_property
    def placed(self) -> Any:
        """The stacked params on the default device, placed once (a chunk's run moves none); a
        leaf equal at every point is placed once, (..., 1), and the run broadcasts it (which
        also makes the program's shapes depend on which leaves the points vary)."""
        leaves = [x[..., :1] if _shared(x) else x for x in self.stacked]
        return jax.device_put(jax.tree_util.tree_unflatten(self.treedef, leaves))

    @functools.cached_property
    def placed_yields(self) -> jax.Array:
        """Each point's maximum sustainable yield in the run's float, placed once."""
        return jax.device_put(np.asarray(self.yields, FLOAT))

    def worker_options(self) -> RunOptions:
        """The options with which another process (a Dask worker) plans the same chunks."""
        return self.options.for_worker(self.chunk_width)

    def config_at(self, i: int) -> ArenaConfig:
        """Point ``i``'s config."""
        row = next(self.table.iloc[[int(i)]].itertuples(index=False, name=None))  # (keeps each column's dtype)
        return apply_values(config_base(self.cfg), self.names, row, round_ints=self.options.round_ints)

    @property
    def n_chunks(self) -> int:
        return len(self.chunks)

    def put(self, x: Any) -> jax.Array:
        """``x`` placed as this plan's chunks run: on the default device, or split along its
        last (batch) axis over the plan's devices."""
        x = np.asarray(x) if not isinstance(x, jax.Array) else x
        if self._sharding is None:
            return jnp.asarray(x)
        placed: jax.Array = jax.device_put(x, self._sharding(x.ndim))
        return placed

    def points_of(self, k: int) -> jax.Array:
        """int32[run_width]: the point of each arena of chunk ``k`` (pads: its last arena's), on
        the default device, made once per chunk."""
        if k not in self._points_of:
            self._points_of[k] = jax.device_put((self.padded(k) // self.replicates).astype(np.int32))
        return self._points_of[k]

    def key_arenas(self, k: int) -> np.ndarray:
        """Whose keys chunk ``k``'s arenas draw from: their global indices, or with common
        random numbers their replicate indices (padded as :meth:`padded`)."""
        padded = self.padded(k)
        return padded % self.replicates if self.common_random else padded

    def padded(self, k: int) -> np.ndarray:
        """int64[run_width]: chunk ``k``'s arena indices, its last one repeated up to the run
        width (every chunk runs at one shape)."""
        a0, a1 = self.chunks[k]
        return np.minimum(np.arange(a0, a0 + self.run_width, dtype=np.int64), a1 - 1)

    def run_chunk(self, k: int, bar: Any = None) -> pd.DataFrame:
        """The arena rows of chunk ``k`` (arenas ``chunks[k]``)."""
        return as_frame(self.chunk_columns(k, bar))

    def chunk_columns(self, k: int, bar: Any = None) -> ArenaColumns:
        """The columns of :meth:`run_chunk`'s frame, by name; the ones a sweep aggregates at
        once, the others when first read (:class:`~bdpd_jax.sweeps.results.ArenaColumns`)."""
        a0, a1 = self.chunks[k]
        n = a1 - a0

        def take(tree: Any) -> Any:
            return jax.tree_util.tree_map(lambda x: np.asarray(x)[..., :n], tree)

        if self._sharding is None and one_program(self.history, self.chunk_turns, self.max_turns):
            # (a range of consecutive arenas moves no indices)
            whole = range(a0, a1) if n == self.run_width and not self.common_random else self.key_arenas(k)
            yields, pts = self.placed_yields, self.points_of(k)
            final = take(run_whole(self.game, self.chunk_turns, self.seed, whole, self.placed, yields, pts))
            rec = None
            if bar is not None:
                bar.update(1)
        else:
            point_of = self.padded(k) // self.replicates
            params = jax.tree_util.tree_unflatten(self.treedef, [self.put(x[..., point_of]) for x in self.stacked])
            keys = self.put(arena_keys(self.seed, self.key_arenas(k)))
            state, rec = run_batch(self.game, params, keys, self.max_turns, self.chunk_turns, self.history, bar)
            yields = self.put(np.asarray(self.yields[point_of], FLOAT))
            final = take(to_numpy(compiled_final(self.game)(state, params, yields)))  # (this chunk's arenas, unpadded)
            del state, params
        rec_np = take(rec) if self.history else None
        outcomes = final["outcomes"]  # (in the run's dtypes: read, not framed)
        wealth = np.asarray(final["wealth"], float)
        extra = {"wealth_mean": wealth.mean(axis=0), "gini": gini(outcomes["equality"])}
        if self.history:
            flat = flatten_record(rec_np)
            extra.update(metric_means(flat))
            extra.update(history_totals(flat))
        lead = self.lead(k)
        collapse = np.where(final["survived"], np.nan, final["collapse_turn"])  # (NaN: the frame's NA)
        read = {**lead, "survived": final["survived"], "collapse_turn": collapse, **outcomes, **extra}
        idx = np.arange(a0, a1, dtype=np.int64)

        def make() -> dict[str, Any]:
            return lead | summary_columns(final, idx, self.labels) | extra

        return ArenaColumns(read, make, self.runs(k))

    def runs(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Chunk ``k``'s points in order and how many of its arenas each has (its rows are
        point-major: arena ``i`` is point ``i // replicates``)."""
        a0, a1 = self.chunks[k]
        first = a0 // self.replicates
        counts = np.diff(np.clip(np.arange(first, (a1 - 1) // self.replicates + 2) * self.replicates, a0, a1))
        return np.arange(first, first + len(counts)), counts

    def lead(self, k: int) -> dict[str, np.ndarray]:
        """Chunk ``k``'s first columns: each arena's ``point``, ``replicate`` and swept values
        (each point's value repeated over its rows of the chunk: no per-arena division)."""
        a0, a1 = self.chunks[k]
        at, counts = self.runs(k)
        pts = np.repeat(at, counts)
        cols = {"point": pts, "replicate": np.arange(a0, a1, dtype=np.int64) - pts * self.replicates}
        for n_, v in self.values.items():
            cols[n_] = np.repeat(v[at], counts)
        return cols

    def outcomes(self) -> list[str]:
        return list(POINT_OUTCOMES) + ([f"mean_{m}" for m in METRICS] + list(HISTORY_OUTCOMES) if self.history else [])

    def meta(self) -> dict[str, Any]:
        return {
            **self.prep.meta(),  # the base config and players
            "replicates": self.replicates,
            "seed": self.seed,
            "n_points": self.n_points,
            "n_arenas": self.total,
            "turns": self.turns,
            "max_turns": self.max_turns,
            "generator": self.generator,
            "history": self.history,
            "chunk_arenas": self.chunk_width,
            "n_chunks": self.n_chunks,
            "common_random": self.common_random,
            "n_devices": len(self.devices),
            "memory_budget": self.memory_budget,
            "arena_bytes_estimate": self.arena_bytes,
            "build": self.points.mode,
        }


_PLANS: OrderedDict[tuple[Any, ...], SweepPlan] = OrderedDict()
MAX_PLANS = 8


def cached_plan(base: PreparedRun, table: pd.DataFrame, options: RunOptions) -> SweepPlan:
    """A SweepPlan, reused when the same prepared base (``prepare`` gives one object per config
    content while cached; a plan keeps its base alive, so its identity is never reused),
    table and options were planned before (every point's config is validated and built
    once; bdpd_jax/prepare/points.py)."""
    try:
        key = (id(base), table_key(table), options.plan_key(), SEPARABLE_MIN_POINTS)
    except (TypeError, ValueError):  # unhashable cells or options: plan afresh
        return SweepPlan(base, table, options)
    plan = _PLANS.get(key)
    if plan is None:
        plan = _PLANS[key] = SweepPlan(base, table.copy(), options)
        while len(_PLANS) > MAX_PLANS:
            _PLANS.popitem(last=False)
    _PLANS.move_to_end(key)
    return plan


def table_key(table: pd.DataFrame) -> str:
    """SHA-1 of a points table's columns: names, dtypes and values (numbers by their bytes,
    others by pandas' hash); the index is not part of a plan."""
    h = hashlib.sha1()
    for name, col in table.items():
        a = col.to_numpy()
        h.update(f"{name!r}:{col.dtype}:{len(a)};".encode())  # (the length: no two tables read alike)
        h.update(a.tobytes() if a.dtype.kind in "biuf" else pd.util.hash_pandas_object(col, index=False).to_numpy())
    return h.hexdigest()
