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
from .results import Results, players_frame, summary_frame, turns_frame

TRACES: dict[str, int] = {"run": 0, "init": 0}


def _counted_run(game: Game, n_turns: int, history: bool, keys, state, params):
    TRACES["run"] += 1  # Python side effect: runs once per trace, never per call
    return run_turns(game, n_turns, history, keys, state, params)


@functools.lru_cache(maxsize=64)
def compiled_run(game: Game, n_turns: int, history: bool):
    """The jitted chunk runner of a game; one per (game, chunk length, history)."""
    return jax.jit(functools.partial(_counted_run, game, n_turns, history))


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


def run_batch(game: Game, params, keys, n_turns: int, chunk_turns: int, history: bool, progress=None):
    """Run one batch (params and keys with a trailing batch axis). Returns (state, records)."""
    state = compiled_init(game)(keys, params)
    n_chunks = max(1, math.ceil(n_turns / chunk_turns))
    fn = compiled_run(game, chunk_turns, history)
    recs = []
    for _ in range(n_chunks):
        state, rec = fn(keys, state, params)
        if history:
            recs.append(_to_numpy(rec))
        if progress is not None:
            progress.update(1)
    records = None
    if history:
        records = jax.tree_util.tree_map(lambda *xs: np.concatenate(xs, axis=0), *recs)
    return state, records


def _validate_run_args(n_arenas: int, seed: int, turns: int | None, chunk_turns: int | None, max_batch: int):
    if not isinstance(n_arenas, (int, np.integer)) or n_arenas < 1:
        raise ValueError(f"n_arenas: must be an integer >= 1, got {n_arenas!r}")
    if not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**32:
        raise ValueError(f"seed: must be an integer in [0, 2**32), got {seed!r}")
    if turns is not None and (not isinstance(turns, (int, np.integer)) or turns < 1):
        raise ValueError(f"turns: must be an integer >= 1, got {turns!r}")
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
    Raises:
        ValueError: naming the field and value of any bad input, before anything runs.
    """
    cfg = ArenaConfig.load(config)
    _validate_run_args(n_arenas, seed, turns, chunk_turns, max_batch)
    game, params = build(cfg, generator=generator)
    n_turns = int(turns or cfg.model.maxTurns)
    params = params.__class__(**{**params.__dict__, "max_turns": jnp.asarray(n_turns, jnp.int32)})
    chunk = int(chunk_turns or (n_turns if n_turns <= 1000 else 1000))
    chunk = min(chunk, n_turns)
    b = min(int(max_batch), int(n_arenas))
    arena_chunks = [(a, min(a + b, n_arenas)) for a in range(0, n_arenas, b)]
    total = len(arena_chunks) * math.ceil(n_turns / chunk)
    bar = None
    if progress or (progress is None and total > 4):
        from tqdm.auto import tqdm

        bar = tqdm(total=total, desc="turn chunks", unit="chunk", leave=False)
    labels = [p.strategy_name for p in cfg.require_players()]
    names = [p.name for p in game.policies]
    summaries, turn_frames, player_frames = [], [], []
    try:
        for a0, a1 in arena_chunks:
            arenas = np.arange(a0, a1, dtype=np.int64) + arena_offset
            keys = arena_keys(seed, arenas)
            pb = broadcast_batch(params, a1 - a0)
            state, rec = run_batch(game, pb, keys, n_turns, chunk, history, bar)
            summaries.append(summary_frame(_to_numpy(summary_of(state)), arenas, labels))
            if history:
                flat = _flatten_record(rec)
                turn_frames.append(turns_frame(flat, arenas))
                player_frames.append(players_frame(flat, arenas, names))
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
    }
    return Results(cat(summaries), cat(turn_frames), cat(player_frames), meta)


def _flatten_record(rec) -> dict[str, Any]:
    """TurnRecord of numpy leaves -> plain dict for the frame builders."""
    return {k: v for k, v in rec.__dict__.items()}
