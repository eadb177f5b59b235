"""``simulate``: many arenas of one config in one compiled program.

``jit(scan(vmap(turn)))`` over arenas (trailing batch axis) and turns. Arenas run in chunks
of at most ``max_batch`` (bounded memory, cache-friendly); turns run in chunks of
``chunk_turns`` through one compiled chunk program (the last chunk's spare turns are frozen
no-ops, so the result is bit-identical to an unchunked run); ended arenas are skipped
(bdpd_jax/runner.py). Randomness is indexed by (seed, arena, turn, player, purpose): an
arena's numbers never depend on the batch. A config already seen is not validated or built
again (bdpd_jax/prepared.py).
"""

from __future__ import annotations

import functools
import json
import math
from typing import Any

import jax
import numpy as np

from .build import broadcast_batch
from .config import ArenaConfig
from .kernels.game import Game
from .kernels.rollout import summary_of
from .prepared import prepared
from .runner import TRACES, arena_keys, compiled_init, compiled_run, run_batch, to_numpy  # noqa: F401 (re-exported)
from . import govsim
from .governance_build import sanction_specs
from .kernels.plugins import NAME as PLUGINS
from .governance_results import layer_record, sanctions_frame, violations_frame
from .kernels.governance import NAME as GOV
from .perturb_results import perturbations_frame
from .plugin_results import governance_actions_frame
from .kernels.perturb import PerturbLayer
from .results import Results, players_frame, summary_frame, turns_frame
from .limits import MAX_TURNS, check_arena_range, check_int, check_run_size

PERTURB = PerturbLayer.name  # the perturbation layer's record key

__all__ = ["TRACES", "arena_keys", "compiled_init", "compiled_run", "run_batch", "simulate", "to_numpy"]


@functools.lru_cache(maxsize=64)
def compiled_final(game: Game):
    """The jitted end of a batch: every per-arena number the summary reads (one program, one
    transfer): summary_of, the engine's summary values, and the GovSim gains inputs."""

    def final(state, params):
        out = dict(summary_of(state))
        out["extra"] = _summary_extra(game, state)
        gov = state.extra.get(GOV)
        out["gov"] = None if gov is None else {"harvest": gov.harvest, "over": gov.over, "judged": gov.judged}
        out["wealth0"] = params.players.wealth0
        return out

    return jax.jit(final)


@functools.partial(jax.jit, static_argnums=1)
def batch_params(params, b: int):
    """broadcast_batch as one compiled call."""
    return broadcast_batch(params, b)


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
        chunk_turns: turns per compiled chunk (default: all at once up to 100, else 100; ended
            arenas are skipped at chunk boundaries, bdpd_jax/runner.py).
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
    prep = prepared(config, generator)  # validated and built once per config content
    cfg = prep.cfg
    _validate_run_args(n_arenas, seed, turns, chunk_turns, max_batch, arena_offset)
    if not isinstance(history_every, (int, np.integer)) or history_every < 1:
        raise ValueError(f"history_every: must be an integer >= 1, got {history_every!r}")
    every = int(history_every)
    check_run_size(int(n_arenas), int(turns or cfg.model.maxTurns), len(cfg.require_players()), history, every,
                   streamed=out is not None)
    game, params = prep.game, prep.params
    n_turns = int(turns or cfg.model.maxTurns)
    params = params.__class__(**{**params.__dict__, "max_turns": np.asarray(n_turns, np.int32)})
    chunk = int(chunk_turns or default_chunk(n_turns))
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
    labels, names = list(prep.labels), list(prep.names)
    summaries, turn_frames, player_frames, violation_frames = [], [], [], []
    perturb_frames = []  # Results.perturbations (bdpd_jax/perturb_results.py)
    perturb_ids = list(prep.perturb_ids)
    sanction_frames = []  # Results.sanctions (bdpd_jax/governance_results.py)
    action_frames = []  # Results.governance_actions (bdpd_jax/plugin_results.py)
    sanctions = sanction_specs(cfg)
    try:
        for a0, a1 in arena_chunks:
            arenas = np.arange(a0, a1, dtype=np.int64) + arena_offset
            keys = arena_keys(seed, arenas)
            pb = batch_params(params, a1 - a0)
            sink = None
            if out_dir is not None:
                parts = iter(range(1 << 30))

                def sink(rec, arenas=arenas, parts=parts, a0=a0):
                    i = next(parts)
                    flat = flatten_record(rec)
                    name = f"part-{a0:012d}-{i:08d}.parquet"
                    turns_frame(flat, arenas).to_parquet(out_dir / "turns.parquet" / name, index=False)
                    players_frame(flat, arenas, names).to_parquet(out_dir / "players.parquet" / name, index=False)

            state, rec = run_batch(game, pb, keys, n_turns, chunk, history, bar, every, sink)
            final = to_numpy(compiled_final(game)(state, pb))
            full = rec if every == 1 else None  # thinned records cannot give the GovSim totals
            summaries.append(summary_frame(final, arenas, labels, govsim_of(final, prep.f0, full, n_turns)))
            if history and out_dir is None:
                flat = flatten_record(rec)
                turn_frames.append(turns_frame(flat, arenas))
                player_frames.append(players_frame(flat, arenas, names))
                if GOV in game_layer_names(game):
                    violation_frames.append(violations_frame(flat, arenas))
                if game_layer_names(game) & {GOV, PLUGINS}:
                    sanction_frames.append(sanctions_frame(flat, arenas, sanctions, cfg.plugins))
                if PLUGINS in game_layer_names(game):
                    action_frames.append(governance_actions_frame(flat, arenas, cfg.plugins))
                if PERTURB in game_layer_names(game):
                    perturb_frames.append(perturbations_frame(flat, arenas, perturb_ids, names))
    finally:
        if bar is not None:
            bar.close()
    import pandas as pd

    def cat(fs):
        return (fs[0] if len(fs) == 1 else pd.concat(fs, ignore_index=True)) if fs else None

    meta = {
        **json.loads(prep.meta_json),
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
    if sanction_frames:
        res.extra["sanctions"] = cat(sanction_frames)
    if perturb_frames:
        res.extra["perturbations"] = cat(perturb_frames)
    if action_frames:
        res.extra["governance_actions"] = cat(action_frames)
    return res


def _summary_extra(game: Game, state) -> dict:
    """The engine's per-arena summary columns (e.g. Seneca's ``solver_failed``)."""
    return jax.vmap(game.engine.summary_values, in_axes=-1, out_axes=-1)(state.engine)


def flatten_record(rec) -> dict[str, Any]:
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


def govsim_of(final: dict, f0: float, rec, n_turns: int) -> dict:
    """The GovSim outcome columns (bdpd_jax/govsim.py) of one batch, from its final numbers
    (``compiled_final``, numpy) and its records when kept (None otherwise)."""
    gov = final["gov"]
    judged = None
    if gov is not None:
        gains, over, judged = gov["harvest"], gov["over"], gov["judged"]
    else:
        # Without sanctions, gains are the wealth change: the same numbers with or without
        # history (a sum over records would differ from it in the last bits).
        gains = final["wealth"] - final["wealth0"]
        over = None
        if rec is not None:  # a NaN cooperation_index on a played turn: no share (kernels/metrics.py)
            defined = ~np.isnan(np.asarray(rec.metrics["cooperation_index"]))
            _, over, judged = govsim.from_records(rec.actual, rec.regen, rec.played, defined)
    return govsim.govsim_columns(final["turns_played"], n_turns, f0, gains, over, judged)


def default_chunk(n_turns: int) -> int:
    """Turns per compiled chunk when the caller gives none: the whole run up to 100 turns,
    else 100 (a chunk boundary is where ended arenas are skipped: bdpd_jax/runner.py; the
    numbers do not depend on the chunking)."""
    return n_turns if n_turns <= 100 else 100
