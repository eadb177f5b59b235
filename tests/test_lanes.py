"""Lanes (kernels/rollout.run_turns, the choice in bdpd_jax/run/runner.lanes_for): a batch
run as independent slices of arenas inside each turn gives every state and record leaf of
the one-lane run bit for bit, with history or not, thinned or not, stopping or not, and with
the governance layers' start-of-turn writes (a cond per lane)."""

from __future__ import annotations

import functools

import jax
import numpy as np
import pytest
from payloads import HEAVY
from test_skip_ended import _cfg, _leaves_equal, eager  # noqa: F401 (a fixture)

from bdpd_jax.config.game import ArenaConfig
from bdpd_jax.kernels.rollout import init_batch, lane_cuts, run_turns
from bdpd_jax.prepare.game import broadcast_batch, build
from bdpd_jax.run import runner


@functools.cache
def _game(governed: bool):
    return build(ArenaConfig.model_validate(_cfg(governed)))


@functools.cache
def _run(governed: bool, b: int, history: bool, every: int, stop: bool, lanes: int):
    game, params = _game(governed)
    pb = broadcast_batch(params, b)
    pb = type(pb)(**{**pb.__dict__, "max_turns": np.where(np.arange(b) % 3 == 0, 9, 30).astype(np.int32)})
    keys = runner.arena_keys(11, np.arange(b))
    fn = jax.jit(functools.partial(run_turns, game, 12, history, every=every, stop_when_ended=stop, lanes=lanes))
    return fn(keys, init_batch(game, pb), pb)


# CI runs the governed case (history, thinned, a cond per lane); the in-chunk stop is run by
# the re-partition test below; BDPD_HEAVY=1 adds the ungoverned cases (each case is two
# compiles of the chunk program, 7-8 s on 2 cores)
CASES = [(True, 5, True, 3, False), (False, 7, True, 1, False), (False, 7, False, 1, True)]


@pytest.mark.heavy
@pytest.mark.parametrize("governed,b,history,every,stop", CASES if HEAVY else CASES[:1])
def test_lanes_give_the_one_lane_numbers(governed, b, history, every, stop):
    one = _run(governed, b, history, every, stop, 1)
    lanes = 2 if governed else 3  # 5 arenas in 2 lanes, 7 in 3: unequal slices
    _leaves_equal(_run(governed, b, history, every, stop, lanes), one)


def test_lane_cuts_cover_the_batch_once():
    for width in (1, 2, 5, 7, 4096):
        for lanes in (1, 2, 3, 4, 9):
            cuts = lane_cuts(width, lanes)
            assert cuts[0][0] == 0 and cuts[-1][1] == width
            assert all(a < b for a, b in cuts) and all(x[1] == y[0] for x, y in zip(cuts, cuts[1:], strict=False))
            assert len(cuts) == min(lanes, width)


def test_lanes_for_chooses_by_width_work_and_devices():
    lo, hi = runner.LANE_WIDTHS
    assert runner.lanes_for(lo, 1 << 20) == runner.LANES
    assert runner.lanes_for(hi - 1, 1 << 20) == runner.LANES
    assert runner.lanes_for(lo - 1, 1 << 20) == 1 and runner.lanes_for(hi, 1 << 20) == 1
    assert runner.lanes_for(8192, 10) == 1  # too little work to pay the longer compile
    assert runner.lanes_for(8192, 1 << 20, n_dev=2) == 1


def test_run_batch_with_lanes_after_a_repartition(eager, monkeypatch):  # noqa: F811  (eager: the imported fixture)
    """A re-partitioned run whose narrower width runs in lanes gives the states of the full
    scan (the lanes are chosen for a re-partition's sub-batch, never at the start)."""
    monkeypatch.setattr(runner, "LANE_WIDTHS", (2, 9))  # 16 arenas: one lane; 8: lanes
    monkeypatch.setattr(runner, "LANE_MIN_ARENA_TURNS", 0)
    monkeypatch.setattr(runner, "LANES", 2)  # any count > 1 shows the choice; 2 compiles faster than 4
    seen = []
    real = runner.compiled_run

    def spy(*a, **k):
        seen.append(a[5])
        return real(*a, **k)

    monkeypatch.setattr(runner, "compiled_run", spy)
    game, params = _game(False)
    b = 16
    pb = broadcast_batch(params, b)
    pb = type(pb)(**{**pb.__dict__, "max_turns": np.where(np.arange(b) % 2 == 0, 6, 30).astype(np.int32)})
    keys = runner.arena_keys(3, np.arange(b))
    st1, _ = runner.run_batch(game, pb, keys, 40, 4, False)
    assert seen == [1, runner.LANES]  # one lane at the start, lanes after the re-partition
    st0, _ = runner.run_batch(game, pb, keys, 40, 4, False, skip=False)
    _leaves_equal(st1, st0)
