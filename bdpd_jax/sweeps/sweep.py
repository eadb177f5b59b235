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
of each parameter when the params are separable. ``bdpd_jax.sweeps.distributed`` runs the chunks
on a Dask cluster and ``bdpd_jax.sweeps.sweep_file`` / ``bdpd sweep`` run a TOML spec resumably.
See docs/semantics.md §12.
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from ..config.game import ArenaConfig
from ..config.limits import DEFAULT_MAX_BATCH, check_run_args
from ..kernels.metrics import METRICS
from ..prepare.prepared import content_key, prepare
from ..results.frames import summary_columns
from ..run.runner import arena_keys, one_program, run_batch, to_numpy
from ..run.simulate import FLOAT, compiled_final, default_chunk, flatten_record, run_whole
from .build import DEVICE_COPIES, ROW_CELL_BYTES, build_points, bytes_per_arena, resolve_devices
from .paths import ConfigBase, apply_values, check_paths, config_base, parse_path, resolve
from .points import explicit_points, grid_points, points_table, sample_points
from .results import HISTORY_OUTCOMES, POINT_OUTCOMES, Z95, SweepResults, aggregate, gini, history_totals, metric_means

__all__ = [
    "DEVICE_COPIES",
    "POINT_OUTCOMES",
    "ROW_CELL_BYTES",
    "SEPARABLE_MIN_POINTS",
    "Z95",
    "ConfigBase",
    "SweepPlan",
    "SweepResults",
    "aggregate",
    "apply_values",
    "bytes_per_arena",
    "check_paths",
    "config_base",
    "explicit_points",
    "grid_points",
    "parse_path",
    "points_table",
    "resolve",
    "resolve_devices",
    "run_here",
    "run_points",
    "sample_points",
    "sweep",
]


# A sweep of more points than this tries the separable build (one build per distinct value
# of each parameter instead of one per point).
SEPARABLE_MIN_POINTS = 64


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

    def __init__(
        self,
        config: ArenaConfig | dict[str, Any] | str,
        table: pd.DataFrame,
        *,
        replicates: int = 1,
        seed: int = 0,
        history: bool = False,
        turns: int | None = None,
        max_batch: int = DEFAULT_MAX_BATCH,
        memory_budget: int | None = None,
        generator: str = "hash",
        round_ints: bool = False,
        common_random: bool = False,
        devices: Any = None,
        chunk_width: int | None = None,
    ) -> None:
        self.options = dict(
            replicates=replicates,
            seed=seed,
            history=history,
            turns=turns,
            max_batch=max_batch,
            memory_budget=memory_budget,
            generator=generator,
            round_ints=round_ints,
            common_random=common_random,
        )  # (what another process needs to plan the same)
        self.prep = prepare(config, generator=generator)  # the base config, validated and built once
        cfg = self.prep.config
        check_run_args(replicates=replicates, seed=seed, max_batch=max_batch, turns=turns, memory_budget=memory_budget)
        names = [str(c) for c in table.columns]
        if len(set(names)) != len(names):
            raise ValueError(f"names: duplicate parameter paths {names}")
        base = config_base(cfg)
        check_paths(base, names)  # bad paths fail before anything is built
        cfg0, game, stacked, treedef, n_turns, yields, self.build_mode = build_points(
            base, names, table, turns, generator, round_ints, separable_min=SEPARABLE_MIN_POINTS
        )
        self.cfg, self.names, self.table = cfg, names, table.reset_index(drop=True)
        self.cfg0, self.game, self.stacked, self.treedef, self.n_turns = cfg0, game, stacked, treedef, n_turns
        self.replicates, self.seed, self.history, self.turns = int(replicates), int(seed), bool(history), turns
        self.generator, self.common_random, self.round_ints = generator, bool(common_random), bool(round_ints)
        self.devices = resolve_devices(devices)
        nd = len(self.devices)
        self.n_points = len(n_turns)
        self.total = self.n_points * self.replicates
        self.max_turns = max(n_turns)
        self.chunk_turns = default_chunk(self.max_turns)
        self.labels = [p.strategy_name for p in cfg0.require_players()]
        n_cols = 16 + 3 * game.n_players + len(names) + (len(METRICS) if history else 0)
        cap = int(max_batch)
        self.arena_bytes = None
        if memory_budget is not None:
            p1 = jax.tree_util.tree_unflatten(
                treedef, [jax.ShapeDtypeStruct(x.shape[:-1] + (1,), x.dtype) for x in stacked]
            )
            k1 = jax.ShapeDtypeStruct((2, 1), jnp.uint32)
            self.arena_bytes = bytes_per_arena(game, p1, k1, self.chunk_turns, self.history, n_cols)
            cap = min(cap, max(1, int(memory_budget) // self.arena_bytes))
        b = chunk_layout(self.total, cap, nd, chunk_width)
        self.chunk_width = b  # arenas per chunk (the layout)
        self.run_width = -(-b // nd) * nd  # arenas per run: padded to a multiple of the device count
        self.chunks = [(a, min(a + b, self.total)) for a in range(0, self.total, b)]
        self.memory_budget = memory_budget
        # GovSim columns: simulate's own code on the whole chunk, with each arena's point's
        # sustainable yield f0 and turns (``efficiency`` reads both).
        self.yields = np.asarray(yields, dtype=float)
        self._sharding: Callable[[int], Any] | None = None
        if nd > 1 or devices is not None:
            mesh = Mesh(np.asarray(self.devices), ("arenas",))
            self._sharding = lambda ndim: NamedSharding(mesh, PartitionSpec(*([None] * (ndim - 1)), "arenas"))

    @functools.cached_property
    def placed(self) -> Any:
        """The stacked params on the default device, placed once (a chunk's run moves none)."""
        return jax.device_put(jax.tree_util.tree_unflatten(self.treedef, list(self.stacked)))

    def worker_options(self) -> dict[str, Any]:
        """The options with which another process (a Dask worker) plans the same chunks: this
        plan's, with the chunk width pinned (its devices may differ)."""
        return {**self.options, "chunk_width": self.chunk_width, "memory_budget": None}

    def config_at(self, i: int) -> ArenaConfig:
        """Point ``i``'s config."""
        row = next(self.table.iloc[[int(i)]].itertuples(index=False, name=None))  # (keeps each column's dtype)
        return apply_values(config_base(self.cfg), self.names, row, round_ints=self.round_ints)

    @property
    def n_chunks(self) -> int:
        return len(self.chunks)

    def _put(self, x: Any) -> jax.Array:
        x = np.asarray(x) if not isinstance(x, jax.Array) else x
        if self._sharding is None:
            return jnp.asarray(x)
        placed: jax.Array = jax.device_put(x, self._sharding(x.ndim))
        return placed

    def run_chunk(self, k: int, bar: Any = None) -> pd.DataFrame:
        """The arena rows of chunk ``k`` (arenas ``chunks[k]``)."""
        a0, a1 = self.chunks[k]
        b, reps, names, table = self.run_width, self.replicates, self.names, self.table
        idx = np.arange(a0, a1, dtype=np.int64)
        n = len(idx)
        padded = np.concatenate([idx, np.full(b - n, idx[-1], np.int64)])  # every chunk has shape b
        point_of = padded // reps
        key_arenas = padded % reps if self.common_random else padded

        def take(tree: Any) -> Any:
            return jax.tree_util.tree_map(lambda x: np.asarray(x)[..., :n], tree)

        if self._sharding is None and one_program(self.history, self.chunk_turns, self.max_turns):
            final = take(
                run_whole(self.game, self.chunk_turns, self.seed, key_arenas, self.placed, self.yields, point_of)
            )
            rec = None
            if bar is not None:
                bar.update(1)
        else:
            params = jax.tree_util.tree_unflatten(self.treedef, [self._put(x[..., point_of]) for x in self.stacked])
            keys = self._put(arena_keys(self.seed, key_arenas))
            state, rec = run_batch(self.game, params, keys, self.max_turns, self.chunk_turns, self.history, bar)
            yields = self._put(np.asarray(self.yields[point_of], FLOAT))
            final = take(to_numpy(compiled_final(self.game)(state, params, yields)))  # (this chunk's arenas, unpadded)
            del state, params
        rec_np = take(rec) if self.history else None
        pts = idx // reps
        summary = summary_columns(final, idx, self.labels)
        wealth = np.asarray(final["wealth"], float)
        extra = {"wealth_mean": wealth.mean(axis=0), "gini": gini(np.asarray(summary["equality"], float))}
        if self.history:
            flat = flatten_record(rec_np)
            extra.update(metric_means(flat))
            extra.update(history_totals(flat))
        lead = {"point": pts.astype(np.int64), "replicate": (idx % reps).astype(np.int64)}
        for n_ in names:
            col = table[n_].to_numpy(dtype=object) if table[n_].dtype == object else table[n_].to_numpy()
            lead[n_] = col[pts]
        # one frame from the columns (each its own array, as summary_frame's): no copy of the
        # summary into an assigned and then a concatenated frame
        return pd.DataFrame({**lead, **summary, **extra}, copy=False)

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
            "build": self.build_mode,
        }


_PLANS: OrderedDict[tuple[Any, ...], SweepPlan] = OrderedDict()
MAX_PLANS = 8


def cached_plan(config: ArenaConfig | dict[str, Any] | str, table: pd.DataFrame, **options: Any) -> SweepPlan:
    """A SweepPlan, reused when the same config content, table and options were planned
    before (every point's config is validated and built once; bdpd_jax/prepare/prepared.py)."""
    try:
        cells = pd.util.hash_pandas_object(table, index=True).to_numpy().tobytes()
        key = (
            content_key(config),
            hashlib.sha1(cells).hexdigest(),
            repr(list(table.columns)),
            repr(list(table.dtypes)),
            repr(sorted(options.items())),
            SEPARABLE_MIN_POINTS,
        )
    except (TypeError, ValueError):  # unhashable cells or options: plan afresh
        return SweepPlan(config, table, **options)
    plan = _PLANS.get(key)
    if plan is None:
        if isinstance(config, ArenaConfig):  # the caller's object may change later: plan a copy
            config = config.model_copy(deep=True)
        plan = _PLANS[key] = SweepPlan(config, table.copy(), **options)
        while len(_PLANS) > MAX_PLANS:
            _PLANS.popitem(last=False)
    _PLANS.move_to_end(key)
    return plan


# A way to run a plan's chunks: (plan, progress) -> (k, rows of chunk k) for every chunk, in
# any order (here: :func:`run_here`; on a Dask cluster: bdpd_jax/sweeps/distributed.py).
ChunkRunner = Callable[["SweepPlan", "bool | None"], Iterable[tuple[int, pd.DataFrame]]]


def run_here(plan: SweepPlan, progress: bool | None = None) -> Iterator[tuple[int, pd.DataFrame]]:
    """Every chunk of ``plan`` in this process, in order (a progress bar when asked, or by
    default when the run has more than four turn chunks)."""
    bar = None
    n_bar = plan.n_chunks * math.ceil(plan.max_turns / plan.chunk_turns)
    if progress or (progress is None and n_bar > 4):
        from tqdm.auto import tqdm  # only when a bar is shown: tqdm.auto probes for notebook widgets

        bar = tqdm(total=n_bar, desc="sweep chunks", unit="chunk", leave=False)
    try:
        for k in range(plan.n_chunks):
            yield k, plan.run_chunk(k, bar)
    finally:
        if bar is not None:
            bar.close()


def run_points(
    config: ArenaConfig | dict[str, Any] | str,
    table: pd.DataFrame,
    *,
    replicates: int = 1,
    seed: int = 0,
    history: bool = False,
    turns: int | None = None,
    max_batch: int = DEFAULT_MAX_BATCH,
    generator: str = "hash",
    progress: bool | None = None,
    round_ints: bool = False,
    common_random: bool = False,
    memory_budget: int | None = None,
    devices: Any = None,
    chunks: ChunkRunner = run_here,
) -> SweepResults:
    """Run every row of ``table`` (columns = config paths) ``replicates`` times in one
    batched program; see :func:`sweep`. ``chunks`` runs the plan's chunks (default: here;
    ``bdpd_jax.sweeps.distributed.sweep_on_cluster`` passes a Dask cluster's)."""
    plan = cached_plan(
        config,
        table,
        replicates=replicates,
        seed=seed,
        history=history,
        turns=turns,
        max_batch=max_batch,
        memory_budget=memory_budget,
        generator=generator,
        round_ints=round_ints,
        common_random=common_random,
        devices=devices,
    )
    frames = dict(chunks(plan, progress))
    parts = [frames[k] for k in sorted(frames)]
    arenas = parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)
    points = aggregate(arenas, plan.names, plan.outcomes())
    return SweepResults(arenas, points, plan.names, plan.meta())


def sweep(
    config: ArenaConfig | dict[str, Any] | str,
    grid: dict[str, Sequence[Any]] | None = None,
    samples: dict[str, tuple[float, float]] | None = None,
    points: pd.DataFrame | np.ndarray | None = None,
    replicates: int = 1,
    seed: int = 0,
    history: bool = False,
    max_batch: int = DEFAULT_MAX_BATCH,
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
    return run_points(
        config,
        table,
        replicates=replicates,
        seed=seed,
        history=history,
        turns=turns,
        max_batch=max_batch,
        generator=generator,
        progress=progress,
        round_ints=samples is not None,
        common_random=common_random,
        memory_budget=memory_budget,
        devices=devices,
    )
