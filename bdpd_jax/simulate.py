"""``simulate``: many arenas of one config in one compiled program.

``jit(scan(vmap(turn)))`` over arenas (trailing batch axis) and turns. Arenas run in chunks
of at most ``max_batch`` (bounded memory, cache-friendly); turns run in chunks of
``chunk_turns`` through one compiled chunk program (the last chunk's spare turns are frozen
no-ops, so the result is bit-identical to an unchunked run). Randomness is indexed by
(seed, arena, turn, player, purpose): an arena's numbers never depend on the batch.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .build import broadcast_batch, build
from .config import ArenaConfig
from .kernels import rng
from .kernels.game import Game
from .kernels.rollout import init_batch, run_turns, summary_of
from . import govsim
from .governance_results import layer_record, violations_frame
from .kernels.governance import NAME as GOV
from .perturb_results import perturbations_frame
from .specs import arena_specs
from .kernels.perturb import PerturbLayer
from .results import Results, players_frame, summary_frame, turns_frame
from .limits import MAX_TURNS, check_arena_range, check_int, check_run_size

PERTURB = PerturbLayer.name  # the perturbation layer's record key

TRACES: dict[str, int] = {"run": 0, "init": 0}


def _counted_run(game: Game, n_turns: int, history: bool, every: int, keys, state, params):
    TRACES["run"] += 1  # Python side effect: runs once per trace, never per call
    return run_turns(game, n_turns, history, keys, state, params, every)


@functools.lru_cache(maxsize=64)
def compiled_run(game: Game, n_turns: int, history: bool, every: int = 1):
    """The jitted chunk runner of a game; one per (game, chunk length, history, every)."""
    return jax.jit(functools.partial(_counted_run, game, n_turns, history, every))


def _counted_init(game: Game, keys, params):
    TRACES["init"] += 1
    return init_batch(game, params)


@functools.lru_cache(maxsize=64)
def compiled_init(game: Game):
    return jax.jit(functools.partial(_counted_init, game))


def arena_keys(seed: int, arenas: np.ndarray) -> jax.Array:
    """uint32[2, B] keys of the given global arena indices."""
    return jax.vmap(lambda a: rng.arena_key(seed, a), out_axes=-1)(jnp.asarray(arenas, jnp.uint32))


def _to_numpy(tree):
    return jax.tree_util.tree_map(np.asarray, tree)


def run_batch(
    game: Game, params, keys, n_turns: int, chunk_turns: int, history: bool, progress=None, every: int = 1, sink=None
):
    """Run one batch (params and keys with a trailing batch axis). Returns (state, records).

    ``every``: keep every k-th turn's record (chunk_turns must be a multiple of it).
    ``sink``: called with each chunk's numpy records instead of keeping them (records None).
    """
    state = compiled_init(game)(keys, params)
    n_chunks = max(1, math.ceil(n_turns / chunk_turns))
    fn = compiled_run(game, chunk_turns, history, every)
    recs = []
    for _ in range(n_chunks):
        state, rec = fn(keys, state, params)
        if history and sink is not None:
            sink(_to_numpy(rec))
        elif history:
            recs.append(_to_numpy(rec))
        if progress is not None:
            progress.update(1)
    records = None
    if history and sink is None:
        records = jax.tree_util.tree_map(lambda *xs: np.concatenate(xs, axis=0), *recs)
    return state, records


def _validate_run_args(n_arenas: int, seed: int, turns: int | None, chunk_turns: int | None, max_batch: int,
                       arena_offset: int = 0):
    if isinstance(n_arenas, bool) or not isinstance(n_arenas, (int, np.integer)) or n_arenas < 1:
        raise ValueError(f"n_arenas: must be an integer >= 1, got {n_arenas!r}")
    check_arena_range(n_arenas, arena_offset)
    if not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**32:
        raise ValueError(f"seed: must be an integer in [0, 2**32), got {seed!r}")
    if turns is not None:
        check_int(turns, "turns", 1, MAX_TURNS)
    if chunk_turns is not None and (not isinstance(chunk_turns, (int, np.integer)) or chunk_turns < 1):
        raise ValueError(f"chunk_turns: must be an integer >= 1, got {chunk_turns!r}")
    if not isinstance(max_batch, (int, np.integer)) or max_batch < 1:
        raise ValueError(f"max_batch: must be an integer >= 1, got {max_batch!r}")


def simulate(
    config: ArenaConfig | dict | str,
    *,
    n_arenas: int = 1,
    seed: int = 0,
    history: bool = True,
    turns: int | None = None,
    chunk_turns: int | None = None,
    max_batch: int = 131072,
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
        chunk_turns: turns per compiled chunk (default: all at once up to 1000, else 1000).
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
    cfg = ArenaConfig.load(config)
    _validate_run_args(n_arenas, seed, turns, chunk_turns, max_batch, arena_offset)
    if not isinstance(history_every, (int, np.integer)) or history_every < 1:
        raise ValueError(f"history_every: must be an integer >= 1, got {history_every!r}")
    every = int(history_every)
    check_run_size(int(n_arenas), int(turns or cfg.model.maxTurns), len(cfg.require_players()), history, every,
                   streamed=out is not None)
    game, params = build(cfg, generator=generator)
    n_turns = int(turns or cfg.model.maxTurns)
    params = params.__class__(**{**params.__dict__, "max_turns": jnp.asarray(n_turns, jnp.int32)})
    chunk = int(chunk_turns or (n_turns if n_turns <= 1000 else 1000))
    chunk = min(chunk, n_turns)
    chunk = -(-chunk // every) * every  # a multiple of history_every
    out_dir = None
    if out is not None and history:
        from pathlib import Path

        out_dir = Path(out)
        for sub in ("turns.parquet", "players.parquet"):
            (out_dir / sub).mkdir(parents=True, exist_ok=True)
            for old in (out_dir / sub).glob("part-*.parquet"):
                old.unlink()
    b = min(int(max_batch), int(n_arenas))
    arena_chunks = [(a, min(a + b, n_arenas)) for a in range(0, n_arenas, b)]
    total = len(arena_chunks) * math.ceil(n_turns / chunk)
    bar = None
    if progress or (progress is None and total > 4):
        from tqdm.auto import tqdm

        bar = tqdm(total=total, desc="turn chunks", unit="chunk", leave=False)
    labels = [p.strategy_name for p in cfg.require_players()]
    names = [p.name for p in game.policies]
    summaries, turn_frames, player_frames, violation_frames = [], [], [], []
    perturb_frames = []  # Results.perturbations (bdpd_jax/perturb_results.py)
    perturb_ids = [s.id for s in arena_specs(cfg)]
    try:
        for a0, a1 in arena_chunks:
            arenas = np.arange(a0, a1, dtype=np.int64) + arena_offset
            keys = arena_keys(seed, arenas)
            pb = broadcast_batch(params, a1 - a0)
            sink = None
            if out_dir is not None:
                parts = iter(range(1 << 30))

                def sink(rec, arenas=arenas, parts=parts, a0=a0):
                    i = next(parts)
                    flat = _flatten_record(rec)
                    name = f"part-{a0:012d}-{i:08d}.parquet"
                    turns_frame(flat, arenas).to_parquet(out_dir / "turns.parquet" / name, index=False)
                    players_frame(flat, arenas, names).to_parquet(out_dir / "players.parquet" / name, index=False)

            state, rec = run_batch(game, pb, keys, n_turns, chunk, history, bar, every, sink)
            final = _to_numpy(summary_of(state))
            final["extra"] = {k: np.asarray(v) for k, v in _summary_extra(game, state).items()}
            summaries.append(summary_frame(final, arenas, labels))
            full = rec if every == 1 else None  # thinned records cannot give the GovSim totals
            summaries[-1] = _with_govsim(summaries[-1], cfg, state, pb, full, n_turns)
            if history and out_dir is None:
                flat = _flatten_record(rec)
                turn_frames.append(turns_frame(flat, arenas))
                player_frames.append(players_frame(flat, arenas, names))
                if GOV in game_layer_names(game):
                    violation_frames.append(violations_frame(flat, arenas))
                if PERTURB in game_layer_names(game):
                    perturb_frames.append(perturbations_frame(flat, arenas, perturb_ids, names))
    finally:
        if bar is not None:
            bar.close()
    import pandas as pd

    cat = lambda fs: pd.concat(fs, ignore_index=True) if fs else None  # noqa: E731
    meta = {
        "config": cfg.model_dump(mode="json", exclude={"players"}),
        "players": [{**p.model_dump(exclude={"strategy"}), "strategy": p.strategy_name} for p in cfg.players],
        "n_arenas": int(n_arenas), "seed": int(seed), "turns": n_turns, "generator": generator,
        "arena_offset": int(arena_offset),
        "history_every": every,
    }
    if out is not None:
        meta["out"] = str(out)
        res = Results(cat(summaries), None, None, meta)
        res.to_parquet(out)
        return res
    res = Results(cat(summaries), cat(turn_frames), cat(player_frames), meta)
    if violation_frames:
        res.extra["violations"] = cat(violation_frames)
    if perturb_frames:
        res.extra["perturbations"] = cat(perturb_frames)
    return res


def _summary_extra(game: Game, state) -> dict:
    """The engine's per-arena summary columns (e.g. Seneca's ``solver_failed``)."""
    return jax.vmap(game.engine.summary_values, in_axes=-1, out_axes=-1)(state.engine)


def _flatten_record(rec) -> dict[str, Any]:
    """TurnRecord of numpy leaves -> plain dict for the frame builders; layers' per-turn
    columns (``turn_extra`` / ``player_extra`` of each layer record) are lifted up."""
    flat = {k: v for k, v in rec.__dict__.items()}
    for name in list(flat["extra"]):
        lr = layer_record(flat["extra"], name)
        if isinstance(lr, dict):
            for col in ("turn_extra", "player_extra"):
                flat.setdefault(col, {}).update(lr.get(col, {}))
    return flat


def game_layer_names(game: Game) -> set[str]:
    return {layer.name for layer in game.layers}


def _with_govsim(frame, cfg, state, params, rec, n_turns: int):
    """Add the GovSim outcome columns (bdpd_jax/govsim.py) to one batch's summary frame."""
    turns_played = np.asarray(state.turn)
    gov = state.extra.get(GOV)
    if gov is not None:
        gains, over = np.asarray(gov.harvest), np.asarray(gov.over)
    else:
        # Without sanctions, gains are the wealth change: the same numbers with or without
        # history (a sum over records would differ from it in the last bits).
        gains = np.asarray(state.wealth) - np.asarray(params.players.wealth0)
        over = govsim.from_records(rec.actual, rec.regen, rec.played)[1] if rec is not None else None
    cols = govsim.govsim_columns(turns_played, n_turns, govsim.sustainable_yield(cfg), gains, over)
    return frame.assign(**cols)
