"""Batching contracts: vmap == loop, bit-identical at any batch size and position, no
recompiles across parameter values, chunked turns == one scan."""

from __future__ import annotations

import copy

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

import bdpd_jax
from bdpd_jax.config.game import ArenaConfig
from bdpd_jax.kernels import rng
from bdpd_jax.kernels.turn import play
from bdpd_jax.prepare.game import broadcast_batch, build
from bdpd_jax.run.simulate import TRACES


@pytest.fixture(scope="module")
def noisy_config():
    from payloads import MIXED_PLAYERS, SEED_LOGISTIC

    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["players"] = copy.deepcopy(MIXED_PLAYERS)
    cfg["observability"]["commonsStock"]["noise"] = 0.2
    return cfg


@pytest.fixture(scope="module")
def big_run(noisy_config):
    return bdpd_jax.simulate(noisy_config, n_arenas=1000, seed=7)


def test_same_seed_bit_identical_at_batch_sizes_1_7_1000(noisy_config, big_run):
    r7 = bdpd_jax.simulate(noisy_config, n_arenas=7, seed=7)
    head = big_run.players[big_run.players.arena < 7].reset_index(drop=True)
    pd.testing.assert_frame_equal(head, r7.players, check_exact=True)
    pd.testing.assert_frame_equal(
        big_run.turns[big_run.turns.arena < 7].reset_index(drop=True), r7.turns, check_exact=True
    )
    for a in (0, 3, 999):
        r1 = bdpd_jax.simulate(noisy_config, n_arenas=1, seed=7, arena_offset=a)
        one = big_run.players[big_run.players.arena == a].reset_index(drop=True)
        pd.testing.assert_frame_equal(one, r1.players, check_exact=True)


def test_arena_chunks_do_not_change_results(noisy_config, big_run):
    # chunks of 1000 and 7 arenas: unequal, and each runs a program of the test above (the 1000-
    # and the 7-arena one); every arena equals the unchunked runs' arena of its global index
    chunked = bdpd_jax.simulate(noisy_config, n_arenas=1007, seed=7, max_batch=1000)
    tail = bdpd_jax.simulate(noisy_config, n_arenas=7, seed=7, arena_offset=1000)
    for name in ("summary", "players"):
        got, head = getattr(chunked, name), getattr(big_run, name)
        pd.testing.assert_frame_equal(got[got.arena < 1000].reset_index(drop=True), head, check_exact=True)
        pd.testing.assert_frame_equal(
            got[got.arena >= 1000].reset_index(drop=True), getattr(tail, name), check_exact=True
        )


def test_turn_chunks_equal_one_scan(noisy_config):
    # 7 arenas: the one scan is the 7-arena program of the tests around (each width is a compile)
    one = bdpd_jax.simulate(noisy_config, n_arenas=7, seed=1, turns=30)
    chunked = bdpd_jax.simulate(noisy_config, n_arenas=7, seed=1, turns=30, chunk_turns=7)
    pd.testing.assert_frame_equal(one.players, chunked.players, check_exact=True)
    pd.testing.assert_frame_equal(one.summary, chunked.summary, check_exact=True)


def test_different_seeds_differ(noisy_config):
    # 7 arenas, 30 turns: the program of the 7-arena run above (the seed is data)
    a = bdpd_jax.simulate(noisy_config, n_arenas=7, seed=1).players
    b = bdpd_jax.simulate(noisy_config, n_arenas=7, seed=2).players
    assert not np.array_equal(a.requested.to_numpy()[:40], b.requested.to_numpy()[:40])


def test_vmap_equals_loop_over_single_arenas(noisy_config):
    cfg = ArenaConfig.model_validate(noisy_config)
    game, params = build(cfg)
    b, turns = 5, 12
    # per-arena parameter values differ, so the batch really carries several arenas
    regen = jnp.linspace(0.05, 0.4, b)
    pb = broadcast_batch(params, b)
    pb = jax.tree_util.tree_map(lambda x: x, pb)
    pb = type(pb)(**{**pb.__dict__, "engine": type(pb.engine)(**{**pb.engine.__dict__, "regen_rate": regen})})
    keys = jax.vmap(lambda a: rng.arena_key(3, a), out_axes=-1)(jnp.arange(b, dtype=jnp.uint32))

    def run_one(key, p):
        st = game.init(p)

        def body(s, _):
            s, rec = play(game, key, s, p)
            return s, rec.actual

        return jax.lax.scan(body, st, None, length=turns)[1]

    batched = jax.jit(jax.vmap(run_one, in_axes=-1, out_axes=-1))(keys, pb)
    single = jax.jit(run_one)
    for i in range(b):
        pi = jax.tree_util.tree_map(lambda x, i=i: x[..., i], pb)
        np.testing.assert_array_equal(np.asarray(batched[..., i]), np.asarray(single(keys[:, i], pi)))


def test_no_recompile_across_parameter_values(noisy_config):
    bdpd_jax.simulate(noisy_config, n_arenas=7, seed=0)  # the 7-arena program of the tests above
    before = dict(TRACES)
    for regen, k, thr, noise, intensity, wealth, _turns in [
        (0.3, 90.0, 3.0, 0.0, 0.9, 10.0, 30),
        (0.01, 500.0, 50.0, 0.4, 0.1, 0.0, 30),
    ]:
        cfg = copy.deepcopy(noisy_config)
        cfg["model"].update(
            regenRate=regen,
            commonsCapacity=k,
            threshold=thr,
            commonsInitial=k,
            hiddenReserveInitial=5.0,
            useHiddenReserve=False,
            collapseDie={"sides": 20, "successThreshold": 3},
        )
        cfg["observability"]["commonsStock"]["noise"] = noise
        cfg["players"][1]["intensity"] = intensity
        cfg["players"][0]["privateResource"] = wealth
        bdpd_jax.simulate(cfg, n_arenas=7, seed=5)
    assert before == TRACES, "changing parameter values must not retrace"


def test_maxturns_is_dynamic(noisy_config):
    # the 7-arena, 7-turn chunk program of the turn-chunk test above; 18 turns in chunks of 7
    # scan 21 turns: every game stops at its own maxTurns inside the last chunk
    bdpd_jax.simulate(noisy_config, n_arenas=7, seed=1, turns=30, chunk_turns=7)
    before = dict(TRACES)
    cfg = copy.deepcopy(noisy_config)
    cfg["model"]["maxTurns"] = 18
    cfg["model"]["threshold"] = 0.0
    r = bdpd_jax.simulate(cfg, n_arenas=7, seed=0, chunk_turns=7)
    assert before == TRACES
    assert r.summary.turns_played.max() == 18


def test_suite_runs_on_two_forced_cpu_devices():
    """tests/conftest.py forces two host devices, so sharded paths are exercised without a GPU."""
    assert jax.device_count() == 2
