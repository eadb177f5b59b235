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
from bdpd_jax.prepare.game import build
from bdpd_jax.prepare.prepared import prepare
from bdpd_jax.run import runner
from bdpd_jax.run import simulate as SIM
from bdpd_jax.run.simulate import batch_params

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


# test_states_and_records_equal_the_full_scan's plain case runs the programs of
# test_frames_equal_with_and_without_skipping's simulate calls: the game and params simulate
# prepares, 16 arenas, chunks of 3 turns
N_ARENAS, CHUNK = 16, 3


@pytest.mark.parametrize("governed,b", [(False, N_ARENAS), (True, 8)])
def test_states_and_records_equal_the_full_scan(eager, governed, b):
    prep = prepare(_cfg(governed))
    game, pb = prep.game, batch_params(prep.params_on_device(40), b)
    keys = runner.arena_keys(5, np.arange(b))
    # max_turns varies per arena, so arenas also end by reaching it (not only by collapse)
    mt = np.where(np.arange(b) % 3 == 0, 9, 30).astype(np.int32)
    pb = type(pb)(**{**pb.__dict__, "max_turns": mt})
    before = runner.SCANNED["arena_turns"]
    st1, rec1 = runner.run_batch(game, pb, keys, 40, CHUNK, True, skip=True)
    scanned = runner.SCANNED["arena_turns"] - before
    st0, rec0 = runner.run_batch(game, pb, keys, 40, CHUNK, True, skip=False)
    assert scanned < runner.SCANNED["arena_turns"] - before - scanned  # skipping did skip work
    _leaves_equal(st1, st0)
    _leaves_equal(rec1, rec0)  # the frozen turns' records included
    assert not rec0.played[-6:].any()  # every arena had ended by turn 36: the run stopped early


def test_frames_equal_with_and_without_skipping(eager, monkeypatch):
    cfg = _cfg(False)
    kw = dict(n_arenas=N_ARENAS, seed=2, chunk_turns=CHUNK)
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
    (the governed game's stopping chunks: test_states_and_records_equal_the_full_scan). The
    full scan: run_batch without skipping, through the chunk program of the tests above."""
    from bdpd_jax.kernels.rollout import run_turns
    from bdpd_jax.kernels.stored import restored

    prep = prepare(_cfg(False))
    game, b, t = prep.game, N_ARENAS, 30
    pb = batch_params(prep.params_on_device(40), b)
    # arenas end by collapse or at their own max_turns, all by turn 20
    pb = type(pb)(**{**pb.__dict__, "max_turns": np.where(np.arange(b) % 3 == 0, 9, 20).astype(np.int32)})
    keys = runner.arena_keys(3, np.arange(b))
    st0, rec0 = runner.run_batch(game, pb, keys, t, CHUNK, True, skip=False)
    fn = jax.jit(functools.partial(run_turns, game, t, True, stop_when_ended=True, lanes=2))
    st1, rec1 = fn(keys, runner.compiled_init(game)(keys, pb), pb)
    rec1 = restored(game, runner.to_numpy(rec1), np.asarray(pb.players.strategy))
    assert not rec0.played[-10:].any()  # every arena ended early: the loop stopped
    _leaves_equal(st1, st0)
    _leaves_equal(rec1, rec0)


def test_a_history_run_stores_the_leaves_its_layers_can_change():
    """kernels/stored.py: a game without layers stores none of announced, sanction,
    sanctioned, strategy; governance alone stores all but strategy (it never switches one);
    a perturbation layer (a strategy override is one of its types) stores all four."""
    from bdpd_jax.kernels.stored import FIXED, fixed

    plain = _cfg(False)
    governed = {**plain, "pacts": GOVERNED["pacts"], "perturbations": GOVERNED["perturbations"][:1]}
    shocked = {**governed, "perturbations": GOVERNED["perturbations"]}
    games = [build(ArenaConfig.model_validate(c))[0] for c in (plain, governed, shocked)]
    assert [sorted(layer.name for layer in g.layers) for g in games] == [[], ["governance"], ["governance", "perturb"]]
    assert [fixed(g) for g in games] == [FIXED, ("strategy",), ()]
