"""The public middle tier between ``simulate``/``sweep`` and the kernels: what studies and
benches build on when they need more than a summary (one compiled program over several
strategy tables, the kernel timed alone, records of a custom batch).

- ``prepare(config) -> PreparedRun``: the one preparation (bdpd_jax/prepare/prepared.py);
  ``prepare_points(run, names, values) -> PreparedPoints``: many points of one prepared
  config as one Game and params stacked over points, what a sweep runs
  (bdpd_jax/prepare/points.py); ``RunOptions``: a sweep's run options as one object;
- ``batch_params(runs, n_arenas)``: a prepared run's params broadcast to a batch, or several
  runs of one Game stacked run-major (each repeated ``n_arenas`` times);
- ``rollout(runs, n_arenas, ...) -> Rollout``: the batch run through the chunked runner
  (keys, init, turns, skipping ended arenas), its final state and its records;
- ``arena_keys``, ``compiled_init``, ``compiled_run``: the compiled pieces of a rollout, for
  a bench that times the kernel alone; ``TRACES``: how many times each was traced;
  ``lanes_for``: the lanes the runner gives a sub-batch of live arenas; ``to_numpy``;
- ``compiled_whole_history(game, turns, every)`` and ``key_words(seed, arenas)``: the one
  program of ``simulate(history=True)`` and its key words (called as ``(*words, params,
  max_yield)``), for timing it alone;
- ``outcomes(run, n_arenas, params=...)``: the per-arena outcome columns of a batch run as
  one program (a study that swaps strategy tables over one compiled game);
- ``engine_config_model(name)``: an engine's config model (its defaults applied once), for a
  bench that builds an engine's params directly.

The live arena is ``bdpd_jax.host.live.arena.Arena`` (and ``LiveBatch`` for many in lockstep).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .config.engines import engine_config_model
from .kernels.game import Game
from .kernels.params import Params
from .prepare.game import broadcast_batch
from .prepare.governance import stack_batch
from .prepare.points import PreparedPoints, prepare_points
from .prepare.prepared import LiveOptions, PreparedRun, prepare
from .results.frames import outcome_columns
from .run.options import RunOptions
from .run.runner import TRACES, arena_keys, compiled_init, compiled_run, lanes_for, run_batch, to_numpy
from .run.simulate import compiled_whole_history, default_chunk, key_words, run_whole


@dataclass(frozen=True)
class Rollout:
    """A batch's run: its Game, final state (device arrays, trailing batch axis) and per-turn
    records (numpy, [T, ..., B]; None without history)."""

    game: Game
    state: Any
    records: Any


def _runs(runs: PreparedRun | Sequence[PreparedRun]) -> list[PreparedRun]:
    out = [runs] if isinstance(runs, PreparedRun) else list(runs)
    if not out or not all(isinstance(r, PreparedRun) for r in out):
        raise ValueError(f"runs: a PreparedRun or a non-empty list of them (bdpd_jax.prepare), got {runs!r}")
    if any(r.game != out[0].game for r in out):
        raise ValueError("runs: every prepared run must share one Game (same structure) to run as one program")
    return out


def batch_params(runs: PreparedRun | Sequence[PreparedRun], n_arenas: int, *, turns: int | None = None) -> Params:
    """Params with a trailing batch axis: one run's broadcast to ``n_arenas`` arenas, or
    several runs' stacked, each repeated ``n_arenas`` times (run-major). ``turns``: every
    arena's ``max_turns`` (default: each run's)."""
    rs = _runs(runs)
    if isinstance(n_arenas, bool) or not isinstance(n_arenas, (int, np.integer)) or n_arenas < 1:
        raise ValueError(f"n_arenas: must be an integer >= 1, got {n_arenas!r}")
    ps = [r.params if turns is None else r.params_for(int(turns)) for r in rs]
    return broadcast_batch(ps[0], int(n_arenas)) if len(ps) == 1 else stack_batch(ps, repeat=int(n_arenas))


def rollout(
    runs: PreparedRun | Sequence[PreparedRun],
    n_arenas: int,
    *,
    seed: int = 0,
    turns: int | None = None,
    chunk_turns: int | None = None,
    history: bool = False,
    every: int = 1,
    skip: bool = True,
    arena_offset: int = 0,
    params: Params | None = None,
) -> Rollout:
    """Run ``n_arenas`` arenas of a prepared run (or of each of several, one program) and
    keep the final state and, with ``history``, every ``every``-th turn's records.

    Arena ``i`` of the batch draws from ``(seed, arena_offset + i)``, as in ``simulate``.
    ``params``: the batch's params when the caller edits them (e.g. a strategy table per
    arena), else ``batch_params(runs, n_arenas, turns=turns)``. ``skip=False`` scans every
    turn of every arena (the same numbers, for timing the skipping).
    """
    rs = _runs(runs)
    pb = batch_params(rs, n_arenas, turns=turns) if params is None else params
    width = int(np.shape(pb.max_turns)[-1])
    n_turns = int(turns or max(r.config.model.max_turns for r in rs))
    chunk = min(int(chunk_turns or default_chunk(n_turns)), n_turns)
    keys = arena_keys(int(seed), np.arange(width, dtype=np.int64) + int(arena_offset))
    state, rec = run_batch(rs[0].game, pb, keys, n_turns, -(-chunk // every) * every, history, every=every, skip=skip)
    return Rollout(game=rs[0].game, state=state, records=rec)


def outcomes(
    run: PreparedRun, n_arenas: int, *, seed: int = 0, turns: int | None = None, params: Params | None = None
) -> dict[str, np.ndarray]:
    """The per-arena outcome columns (GovSim's ``govsim_*`` and the project's, as in
    ``Results.summary``) of ``n_arenas`` arenas of one prepared run, as one program without
    history; ``params``: the run's own params edited by the caller (e.g. another strategy
    table over the same compiled game), else ``run.params``."""
    n_turns = int(turns or run.config.model.max_turns)
    p = run.params_for(n_turns) if params is None else params
    final = run_whole(run.game, n_turns, int(seed), np.arange(int(n_arenas), dtype=np.int64), p, run.max_yield)
    return outcome_columns(final["outcomes"])


__all__ = [
    "LiveOptions",
    "PreparedPoints",
    "PreparedRun",
    "Rollout",
    "RunOptions",
    "TRACES",
    "arena_keys",
    "batch_params",
    "compiled_init",
    "compiled_run",
    "compiled_whole_history",
    "engine_config_model",
    "key_words",
    "lanes_for",
    "outcomes",
    "prepare",
    "prepare_points",
    "rollout",
    "to_numpy",
]
