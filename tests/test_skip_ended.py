"""Skipping ended arenas (bdpd_jax/run/runner.py): stopping once every arena has ended and
re-partitioning the live ones give the same states, records (frozen turns included) and
frames as scanning every turn of every arena, at several batch sizes."""

from __future__ import annotations

import copy
import functools

import jax
import numpy as np
import pandas as pd
import pytest
from payloads import MIXED_PLAYERS, SEED_LOGISTIC, governed_talk

import bdpd_jax
from bdpd_jax.config.game import ArenaConfig
from bdpd_jax.prepare.game import broadcast_batch, build
from bdpd_jax.run import runner
from bdpd_jax.run import simulate as SIM

# scripted talk, a pact, sanctions and perturbations: the layers' state freezes too
GOVERNED = governed_talk(9)
GOVERNED["perturbations"].append(
    {"id": "r", "type": "regen_shock", "trigger": {"kind": "turn", "turn": 30}, "payload": {"factor": 0.5}}
)


def _cfg(governed: bool) -> dict:
    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["players"] = copy.deepcopy(MIXED_PLAYERS)
    cfg["observability"]["commonsStock"]["noise"] = 0.3
    cfg["model"]["maxTurns"] = 40
    if governed:
        cfg.update(copy.deepcopy(GOVERNED))
    return cfg


@pytest.fixture
def eager(monkeypatch):
    """Re-partition at the first chance (small batches never save enough to by default), to
    half the batch width only (each width is a compile; the rounding is tested apart)."""
    monkeypatch.setattr(runner, "MIN_SAVED_ARENA_TURNS", 0)
    full = {}

    def half_once(n, current, n_dev=1):
        b = full.setdefault("b", current)
        return b // 2 if n <= b // 2 else current

    monkeypatch.setattr(runner, "width_for", half_once)


def _leaves_equal(a, b):
    la, lb = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb, strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))  # NaN == NaN here


@pytest.mark.parametrize("governed,b", [(False, 13), (True, 8)])
def test_states_and_records_equal_the_full_scan(eager, governed, b):
    cfg = ArenaConfig.model_validate(_cfg(governed))
    game, params = build(cfg)
    pb = broadcast_batch(params, b)
    keys = runner.arena_keys(5, np.arange(b))
    # max_turns varies per arena, so arenas also end by reaching it (not only by collapse)
    mt = np.where(np.arange(b) % 3 == 0, 9, 30).astype(np.int32)
    pb = type(pb)(**{**pb.__dict__, "max_turns": mt})
    before = runner.SCANNED["arena_turns"]
    st1, rec1 = runner.run_batch(game, pb, keys, 40, 4, True, skip=True)
    scanned = runner.SCANNED["arena_turns"] - before
    st0, rec0 = runner.run_batch(game, pb, keys, 40, 4, True, skip=False)
    assert scanned < runner.SCANNED["arena_turns"] - before - scanned  # skipping did skip work
    _leaves_equal(st1, st0)
    _leaves_equal(rec1, rec0)  # the frozen turns' records included
    assert not rec0.played[-4:].any()  # every arena had ended by turn 36: the run stopped early


def test_frames_equal_with_and_without_skipping(eager, monkeypatch):
    cfg = _cfg(False)
    kw = dict(n_arenas=16, seed=2, chunk_turns=3)
    skip = bdpd_jax.simulate(cfg, **kw)
    nohist = bdpd_jax.simulate(cfg, **kw, history=False)
    monkeypatch.setattr(SIM, "run_batch", functools.partial(runner.run_batch, skip=False))
    full = bdpd_jax.simulate(cfg, **kw)
    for name in ("summary", "turns", "players"):
        pd.testing.assert_frame_equal(getattr(skip, name), getattr(full, name), check_exact=True)
    # every outcome, ex_post_over_usage included, comes from the kernel's tally: the same without history
    pd.testing.assert_frame_equal(nohist.summary, full.summary, check_exact=True)
    assert full.summary.turns_played.nunique() > 1  # arenas ended at different turns


def test_width_for_rounds_to_few_widths():
    assert [runner.width_for(n, 1 << 20) for n in (1, 7, 8, 9, 17, 1000, 16383)] == [1, 7, 8, 10, 20, 1024, 16384]
    assert runner.width_for(9, 12, n_dev=4) == 12 and runner.width_for(9, 10) == 10
    for n in range(1, 3000):
        w = runner.width_for(n, 1 << 20)
        assert n <= w <= n * 1.25 + 1


def test_history_loop_that_stops_gives_the_full_scans_records():
    """run_turns with history stops after the first turn no arena played and gives the turns
    left that turn's record (kernels/rollout.py): the records of the full scan, lanes too
    (the governed game's stopping chunks: test_states_and_records_equal_the_full_scan)."""
    from bdpd_jax.kernels.rollout import init_batch, run_turns

    game, params = build(ArenaConfig.model_validate(_cfg(False)))
    b, t = 6, 30
    pb = broadcast_batch(params, b)
    # arenas end by collapse or at their own max_turns, all by turn 20
    pb = type(pb)(**{**pb.__dict__, "max_turns": np.where(np.arange(b) % 3 == 0, 9, 20).astype(np.int32)})
    keys = runner.arena_keys(3, np.arange(b))

    def run(stop: bool, lanes: int):
        fn = jax.jit(functools.partial(run_turns, game, t, True, stop_when_ended=stop, lanes=lanes))
        return fn(keys, init_batch(game, pb), pb)

    st0, rec0 = run(False, 1)
    st1, rec1 = run(True, 2)
    assert not np.asarray(rec0.played)[-10:].any()  # every arena ended early: the loop stopped
    _leaves_equal(st1, st0)
    _leaves_equal(rec1, rec0)
