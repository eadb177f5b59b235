"""``simulate``: many arenas of one config in one compiled program.

``jit(scan(vmap(turn)))`` over arenas (trailing batch axis) and turns. Arenas run in chunks
of at most ``max_batch`` (bounded memory, cache-friendly); turns run in chunks of
``chunk_turns`` through one compiled chunk program (the last chunk's spare turns are frozen
no-ops, so the result is bit-identical to an unchunked run); ended arenas are skipped
(bdpd_jax/run/runner.py). Randomness is indexed by (seed, arena, turn, player, purpose): an
arena's numbers never depend on the batch. A config already seen is not validated or built
again (``bdpd_jax.prepare``: bdpd_jax/prepare/prepared.py). A run of one turn chunk without history is a single
program from keys to summary numbers (``compiled_whole``; sweeps use it too).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from ..config.budget import arena_steps, check_budget
from ..config.game import ArenaConfig
from ..config.limits import DEFAULT_MAX_BATCH, check_run_args, check_run_size
from ..kernels import outcomes, sustainability
from ..kernels.game import Game
from ..kernels.governance import NAME as GOV
from ..kernels.perturb import PerturbLayer
from ..kernels.plugins import NAME as PLUGINS
from ..kernels.rollout import batched, init_batch, run_turns, summary_of
from ..kernels.stored import restored
from ..prepare.game import broadcast_batch
from ..prepare.prepared import PreparedRun, prepare
from ..results.frames import Frames, Results, players_frame, summary_frame, turns_frame
from ..results.governance import sanctions_frame, violations_frame
from ..results.perturbations import perturbations_frame
from ..results.plugins import governance_actions_frame
from ..results.stream import flatten_record, parquet_sink, stream_dir
from .options import RunOptions
from .runner import (  # noqa: F401 (re-exported)
    SCANNED,
    TRACES,
    arena_keys,
    compiled_init,
    compiled_run,
    key_words,
    keys_of,
    one_program,
    run_batch,
    to_numpy,
)

PERTURB = PerturbLayer.name  # the perturbation layer's record key
FLOAT = jax.dtypes.canonicalize_dtype(np.float64)  # the runs' float: float32 unless x64 is on

__all__ = ["TRACES", "arena_keys", "compiled_init", "compiled_run", "key_words", "run_batch", "simulate", "to_numpy"]


def final_numbers(game: Game, state: Any, params: Any, max_yield: Any) -> dict[str, Any]:
    """Every per-arena number the summary reads (traceable; the end of every run program):
    summary_of, the players' ranks, the engine's summary values and the outcome columns
    (kernels/outcomes.py, from the tally and GovSim's f(0)). ``max_yield``: the engine's
    maximum sustainable yield, one for the batch or float[B]."""
    out = dict(summary_of(state))
    out["ranks"] = batched(outcomes.ranks)(state.wealth)
    out["extra"] = _summary_extra(game, state)
    f0 = batched(functools.partial(sustainability.f0, game))(params)
    per_arena = jnp.broadcast_to(jnp.asarray(max_yield, f0.dtype), f0.shape)
    out["outcomes"] = batched(outcomes.outcomes)(
        state.tally, state.turn, params.max_turns, per_arena, f0, params, state.collapsed
    )
    return out


@functools.lru_cache(maxsize=64)
def compiled_final(game: Game) -> Callable[..., dict[str, Any]]:
    """The jitted end of a batch, ``(state, params, max_yield) -> final_numbers`` (one
    program, one transfer)."""
    return jax.jit(functools.partial(final_numbers, game))


def _counted_whole(
    game: Game,
    n_turns: int,
    seed: jax.Array,
    base: jax.Array,
    offsets: jax.Array,
    params: Any,
    max_yield: jax.Array,
    point_of: jax.Array | None = None,
) -> dict[str, Any]:
    TRACES["run"] += 1  # the run program of such a call: counted like run_batch's chunk program
    keys = keys_of(seed, base + offsets)  # (uint32: wraps as key_words does)
    if point_of is None:  # one config: its params broadcast to the batch
        pb = broadcast_batch(params, offsets.shape[0])
    else:  # a sweep: leaves stacked over points (..., P), taken at each arena's point; a leaf
        # the same at every point comes once (..., 1) and is broadcast, as one config's are
        # (read from registers instead of memory every turn: bench/README.md)
        b = offsets.shape[0]
        pb = jax.tree_util.tree_map(
            lambda x: jnp.broadcast_to(x, x.shape[:-1] + (b,)) if x.shape[-1] == 1 else x[..., point_of], params
        )
        max_yield = max_yield[point_of]
    state, _ = run_turns(game, n_turns, False, keys, init_batch(game, pb), pb, 1, True)
    return final_numbers(game, state, pb, max_yield)


@functools.lru_cache(maxsize=64)
def compiled_whole(game: Game, n_turns: int) -> Callable[..., dict[str, Any]]:
    """A run of one turn chunk without history as one program, ``(seed, base, offsets, params,
    max_yield, point_of)`` (arena ``i``'s global index ``base + offsets[i]``): the arena keys, the batch's
    params (broadcast, or a sweep's taken at each arena's point, its leaves of one point
    broadcast), init, the turns (stopping
    once all have ended, as ``run_batch`` on one device) and ``final_numbers``. The same
    functions as the chunked path, so the same numbers; one dispatch and one transfer instead
    of five calls and the state's round trip (``simulate`` at B = 16384, T = 30:
    bench/README.md)."""
    return jax.jit(functools.partial(_counted_whole, game, n_turns))


def _counted_whole_history(
    game: Game, n_turns: int, every: int, seed: jax.Array, arenas: jax.Array, params: Any, max_yield: jax.Array
) -> tuple[dict[str, Any], Any]:
    TRACES["run"] += 1
    keys = keys_of(seed, arenas)
    pb = broadcast_batch(params, arenas.shape[0])
    state, rec = run_turns(game, n_turns, True, keys, init_batch(game, pb), pb, every, True, 1, record_axis=1)
    return final_numbers(game, state, pb, max_yield), rec


@functools.lru_cache(maxsize=64)
def compiled_whole_history(game: Game, n_turns: int, every: int = 1) -> Callable[..., tuple[dict[str, Any], Any]]:
    """A run of one turn chunk WITH history as one program (keys, params, init, turns,
    final numbers and the GovSim counts the records give): the records come back in the
    scan's layout (T, B, ...), without the copy that moves the batch axis last (the frames
    read either); the turns stop after the first one no arena played, the rest get its
    record (kernels/rollout.py: the seed's payload ends by turn ~20 of 30; bench/history.py)."""
    return jax.jit(functools.partial(_counted_whole_history, game, n_turns, every))


def run_whole_history(
    game: Game, n_turns: int, every: int, seed: int, arenas: np.ndarray, params: Any, max_yield: float
) -> tuple[dict[str, Any], Any]:
    """``compiled_whole_history``'s (final numbers, records) as numpy; the records' leaves
    are views (T, ..., B) of the program's (T, B, ...) buffers, the ones the game never
    changes restored as broadcast views (kernels/stored.py)."""
    final, rec = to_numpy(
        compiled_whole_history(game, n_turns, every)(*key_words(seed, arenas), params, np.asarray(max_yield, FLOAT))
    )
    SCANNED["arena_turns"] += len(arenas) * n_turns
    rec = jax.tree_util.tree_map(lambda x: np.moveaxis(x, 1, -1), rec)
    return final, restored(game, rec, np.asarray(params.players.strategy))


def run_whole(
    game: Game,
    n_turns: int,
    seed: int,
    arenas: range | np.ndarray,
    params: Any,
    max_yield: float | np.ndarray | jax.Array,
    point_of: np.ndarray | jax.Array | None = None,
) -> dict[str, Any]:
    """``compiled_whole``'s final numbers (numpy) for the given global arena indices (their
    keys): a ``range`` of consecutive ones (made inside the program from its start: no
    indices to move) or an array; ``max_yield``: the engine's maximum sustainable yield (a
    sweep's: float[P], one per point); ``point_of`` int[B]: each arena's point in a sweep's
    stacked params."""
    if isinstance(arenas, range) and arenas.step == 1:
        seed_w, base = key_words(seed, np.asarray([arenas.start]))
        offsets: Any = iota(len(arenas))
    else:
        seed_w, offsets = key_words(seed, np.asarray(arenas))
        base = np.zeros(1, np.uint32)
    pts = point_of if point_of is None or isinstance(point_of, jax.Array) else np.asarray(point_of, np.int32)
    run = compiled_whole(game, n_turns)
    my = max_yield if isinstance(max_yield, jax.Array) else np.asarray(max_yield, FLOAT)
    final: dict[str, Any] = to_numpy(run(seed_w, base[0], offsets, params, my, pts))
    SCANNED["arena_turns"] += len(arenas) * n_turns
    return final


@functools.lru_cache(maxsize=8)
def iota(b: int) -> jax.Array:
    """0, 1, ..., b - 1 (uint32) on the default device, made once per width: the offsets of a
    range of arenas."""
    return jnp.arange(b, dtype=jnp.uint32)


@functools.partial(jax.jit, static_argnums=1)
def batch_params(params: Any, b: int) -> Any:
    """broadcast_batch as one compiled call."""
    return broadcast_batch(params, b)


def simulate(
    config: ArenaConfig | dict[str, Any] | str,
    *,
    n_arenas: int = 1,
    seed: int = 0,
    history: bool = True,
    turns: int | None = None,
    chunk_turns: int | None = None,
    max_batch: int = DEFAULT_MAX_BATCH,
    generator: str = "hash",
    progress: bool | None = None,
    arena_offset: int = 0,
    history_every: int = 1,
    out: str | None = None,
) -> Results:
    """Run ``n_arenas`` arenas of ``config`` and return tidy frames.

    Args:
        config: an ArenaConfig, a dict of the seed payload plus ``players``, JSON, or a path.
        n_arenas: number of arenas (independent replicates of the config).
        seed: the run's seed; arena ``i`` draws from (seed, arena_offset + i, ...).
        history: keep per-turn frames; False keeps only the per-arena summary.
        turns: turns to play (default ``model.maxTurns``).
        chunk_turns: turns per compiled chunk (default: all at once up to 100, else 100; ended
            arenas are skipped at chunk boundaries, bdpd_jax/run/runner.py).
        max_batch: the most arenas run at once; larger runs go in chunks.
        generator: ``"hash"`` (default, fast) or ``"threefry"`` (jax.random).
        progress: show a progress bar (default: when the run has several chunks).
        history_every: keep every k-th turn's rows (turns k, 2k, ...), thinned inside the
            scan so memory holds T/k turns; the chunk length is rounded up to a multiple of k.
        out: a directory: each chunk's frames are streamed to parquet part files under
            ``out/turns.parquet/`` and ``out/players.parquet/`` and nothing is kept in memory;
            summary.parquet and meta.json are written too, and ``Results.turns``/``players``
            load the parts lazily (``Results.from_parquet(out)`` reopens the run).
    Raises:
        ValueError: naming the field and value of any bad input, before anything runs.
    """
    if n_arenas is None:  # check_run_args reads None as "not given"; here it is required
        raise ValueError("n_arenas: must be an integer >= 1, got None")
    prep = prepare(config, generator=generator)  # validated and built once per config content
    cfg = prep.config
    check_run_args(n_arenas=n_arenas, arena_offset=arena_offset)
    options = RunOptions(
        seed=seed,
        history=history,
        turns=turns,
        chunk_turns=chunk_turns,
        max_batch=max_batch,
        generator=generator,
        progress=progress,
        history_every=history_every,
    )
    every = int(history_every)
    steps = {"arenas": int(n_arenas), **arena_steps(cfg, turns)}
    big = "arenas" if steps["arenas"] >= steps["turns"] else "turns"
    check_budget("n_arenas" if big == "arenas" else "turns", steps[big], steps)
    check_run_size(
        int(n_arenas), int(turns or cfg.model.max_turns), prep.n_players, history, every, streamed=out is not None
    )
    n_turns = int(turns or cfg.model.max_turns)
    params = prep.params_on_device(n_turns)
    chunk = min(int(chunk_turns or default_chunk(n_turns)), n_turns)
    chunk = -(-chunk // every) * every  # a multiple of history_every
    out_dir = stream_dir(out) if out is not None and history else None
    b = min(int(max_batch), int(n_arenas))
    arena_chunks = [(a, min(a + b, n_arenas)) for a in range(0, n_arenas, b)]
    bar = _bar(len(arena_chunks) * math.ceil(n_turns / chunk), progress)
    frames: dict[str, list[pd.DataFrame]] = {}
    try:
        for a0, a1 in arena_chunks:
            arenas = np.arange(a0, a1, dtype=np.int64) + arena_offset
            sink = None if out_dir is None else parquet_sink(out_dir, arenas, a0, list(prep.names))
            for name, frame in _arena_chunk(prep, params, options, arenas, n_turns, chunk, bar, sink).items():
                frames.setdefault(name, []).append(frame)
    finally:
        if bar is not None:
            bar.close()
    meta = {
        **prep.meta(),
        "n_arenas": int(n_arenas),
        "seed": int(seed),
        "turns": n_turns,
        "generator": generator,
        "arena_offset": int(arena_offset),
        "history_every": every,
    }
    return _results(frames, meta, out)


def _bar(total: int, progress: bool | None) -> Any:
    """A progress bar over ``total`` turn chunks when asked (default: more than four), else None."""
    if progress or (progress is None and total > 4):
        from tqdm.auto import tqdm  # only when a bar is shown: tqdm.auto probes for notebook widgets

        return tqdm(total=total, desc="turn chunks", unit="chunk", leave=False)
    return None


def _arena_chunk(
    prep: PreparedRun,
    params: Any,
    options: RunOptions,
    arenas: np.ndarray,
    n_turns: int,
    chunk: int,
    bar: Any,
    sink: Callable[[Any], None] | None,
) -> dict[str, Any]:
    """One chunk of arenas (``chunk``: turns per compiled chunk, a multiple of the options'
    ``history_every``): run, then its frames by name: ``summary`` always; with history
    kept in memory (no ``sink``) builders of ``turns``, ``players`` and the layers'
    ``violations``, ``sanctions``, ``governance_actions``, ``perturbations`` (run on first
    access: Results' frames are built lazily). One turn chunk is one program."""
    game, seed, history, every = prep.game, int(options.seed), bool(options.history), int(options.history_every)
    if one_program(history, chunk, n_turns):
        final = run_whole(game, chunk, seed, range(int(arenas[0]), int(arenas[-1]) + 1), params, prep.max_yield)
        if bar is not None:
            bar.update(1)
        return {"summary": summary_frame(final, arenas, list(prep.labels))}
    if history and sink is None and chunk >= n_turns:
        final, rec = run_whole_history(game, chunk, every, seed, arenas, params, prep.max_yield)
        if bar is not None:
            bar.update(1)
    else:
        pb = batch_params(params, len(arenas))
        state, rec = run_batch(game, pb, arena_keys(seed, arenas), n_turns, chunk, history, bar, every, sink)
        final = to_numpy(compiled_final(game)(state, pb, prep.max_yield))
    out: dict[str, Any] = {"summary": summary_frame(final, arenas, list(prep.labels))}
    if not history or sink is not None:
        return out
    return out | record_frames(prep, game_layer_names(game), flatten_record(rec), arenas)


def record_frames(prep: PreparedRun, layers: set[str], flat: dict[str, Any], arenas: np.ndarray) -> dict[str, Any]:
    """Builders (no-argument callables) of a batch's record frames, by name."""
    names = list(prep.names)
    out: dict[str, Any] = {
        "turns": lambda: turns_frame(flat, arenas),
        "players": lambda: players_frame(flat, arenas, names),
    }
    if GOV in layers:
        out["violations"] = lambda: violations_frame(flat, arenas)
    if layers & {GOV, PLUGINS}:
        out["sanctions"] = lambda: sanctions_frame(flat, arenas, list(prep.sanctions), prep.config.plugins)
    if PLUGINS in layers:
        out["governance_actions"] = lambda: governance_actions_frame(flat, arenas, prep.config.plugins)
    if PERTURB in layers:
        out["perturbations"] = lambda: perturbations_frame(flat, arenas, list(prep.spec_ids), names)
    return out


def _results(frames: dict[str, list[Any]], meta: dict[str, Any], out: str | None) -> Results:
    """The run's Results from each chunk's summary and record-frame builders (the record
    frames built on first access; written to ``out`` when streaming)."""
    import pandas as pd

    def cat(fs: list[pd.DataFrame]) -> pd.DataFrame:
        return fs[0] if len(fs) == 1 else pd.concat(fs, ignore_index=True)

    summary = cat(frames["summary"])
    if out is not None:
        res = Results(summary, None, None, {**meta, "out": str(out)})
        res.to_parquet(out)
        return res
    builders = {
        name: functools.partial(lambda bs: cat([b() for b in bs]), bs)
        for name, bs in frames.items()
        if name != "summary"
    }
    history: dict[str, Any] = {k: builders.pop(k) for k in ("turns", "players") if k in builders}
    return Results(summary, None, None, meta, Frames(builders=builders), Frames(builders=history))


def _summary_extra(game: Game, state: Any) -> dict[str, jax.Array]:
    """The engine's per-arena summary columns (e.g. Seneca's ``solver_failed``)."""
    values: dict[str, jax.Array] = jax.vmap(game.engine.summary_values, in_axes=-1, out_axes=-1)(state.engine)
    return values


def game_layer_names(game: Game) -> set[str]:
    return {layer.name for layer in game.layers}


def default_chunk(n_turns: int) -> int:
    """Turns per compiled chunk when the caller gives none: the whole run up to 100 turns,
    else 100 (a chunk boundary is where ended arenas are skipped: bdpd_jax/run/runner.py; the
    numbers do not depend on the chunking)."""
    return n_turns if n_turns <= 100 else 100
