"""Schedulers: sequential never serves stock an earlier player took, wealth-weighted meets its
water-filling rule, all conserve the stock; sequential policy players see what was left."""

from __future__ import annotations

import copy
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from reference_perturb import serve_sequential, water_fill

from bdpd_jax import simulate
from bdpd_jax.config.game import ArenaConfig
from bdpd_jax.kernels import rng
from bdpd_jax.kernels.observe import capacity
from bdpd_jax.kernels.schedule import SCHEDULERS, get_scheduler, turn_order
from bdpd_jax.prepare.game import build

N = 4


def game_of(scheduler, stock=50.0, reserve=True, reserve0=20.0):
    cfg = {
        "model": {
            "scheduler": scheduler,
            "maxPlayers": N,
            "minPlayers": N,
            "commonsInitial": stock,
            "commonsCapacity": 150,
            "threshold": 0,
            "useHiddenReserve": reserve,
            "hiddenReserveInitial": reserve0,
        },
        "players": [{"strategy": "idle"}] * N,
    }
    return build(ArenaConfig.model_validate(cfg))


@functools.cache
def run_scheduler(name: str):
    """The scheduler ``name`` jitted with the game static, as the turn runs it: one compile
    per game and dtype mode serves every hypothesis example (eager, each example would
    compile the scheduler's loops again)."""
    return jax.jit(get_scheduler(name), static_argnums=0)


# a turn's order jitted, and one over many turns at once (vmapped over the turn number)
order_of = jax.jit(turn_order, static_argnums=0)
orders_of = jax.jit(jax.vmap(turn_order, in_axes=(None, None, 0)), static_argnums=0)


reqs_st = st.lists(st.floats(0.0, 40.0), min_size=N, max_size=N)


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
@given(
    reqs=reqs_st,
    stock=st.floats(0.0, 80.0),
    reserve=st.booleans(),
    seed=st.integers(0, 2**20),
    wealth=st.lists(st.floats(0.0, 200.0), min_size=N, max_size=N),
)
def test_every_scheduler_conserves_stock(name, reqs, stock, reserve, seed, wealth):
    with jax.enable_x64(True):
        game, params = game_of(name, stock, reserve)
        es = game.engine.init(params.engine)
        key = rng.arena_key(seed, 0)
        r = jnp.asarray(reqs)
        out = run_scheduler(name)(game, key, 1, es, r, params, wealth=jnp.asarray(wealth))
        taken = float(es.stock - out.engine.stock) + float(out.reserve_drawn)
        actual = np.asarray(out.actual)
        assert np.all(actual >= 0) and np.all(actual <= np.asarray(reqs) + 1e-12)
        assert actual.sum() == pytest.approx(taken, abs=1e-9)
        assert float(out.reserve_drawn) == pytest.approx(float(es.reserve - out.engine.reserve), abs=1e-12)


@given(reqs=reqs_st, stock=st.floats(0.0, 80.0), seed=st.integers(0, 2**20))
def test_sequential_never_serves_what_an_earlier_player_took(reqs, stock, seed):
    with jax.enable_x64(True):
        game, params = game_of("sequential", stock, reserve=False)
        es = game.engine.init(params.engine)
        key = rng.arena_key(seed, 0)
        out = run_scheduler("sequential")(game, key, 1, es, jnp.asarray(reqs), params)
        order = np.asarray(order_of(game, key, 1))
        assert sorted(order) == list(range(N))
        want = serve_sequential(stock, [reqs[p] for p in order])
        np.testing.assert_allclose(np.asarray(out.actual)[order], want, atol=1e-12)


def test_sequential_order_is_uniform_over_turns():
    game, _ = game_of("sequential")
    key = rng.arena_key(0, 0)
    firsts = np.asarray(orders_of(game, key, jnp.arange(1, 801)))[:, 0]
    counts = np.bincount(firsts, minlength=N)
    assert counts.min() > 800 / N * 0.75


@given(reqs=reqs_st, stock=st.floats(0.0, 80.0), wealth=st.lists(st.floats(0.0, 200.0), min_size=N, max_size=N))
def test_wealth_weighted_is_water_filling_by_capacity(reqs, stock, wealth):
    with jax.enable_x64(True):
        game, params = game_of("wealth-weighted", stock, reserve=False)
        es = game.engine.init(params.engine)
        out = run_scheduler("wealth-weighted")(
            game, rng.arena_key(0, 0), 1, es, jnp.asarray(reqs), params, wealth=jnp.asarray(wealth)
        )
        a = np.asarray(out.actual)
        np.testing.assert_allclose(a, water_fill(reqs, wealth, min(stock, sum(reqs))), atol=1e-7)
        # the rule itself: every unsatisfied player sits at the same level lam = a_i / c_i,
        # and every satisfied one at or below it
        c = np.asarray(capacity(np.asarray(wealth)))
        unsat = a < np.asarray(reqs) - 1e-9
        if unsat.any():
            lam = (a / c)[unsat]
            assert np.ptp(lam) < 1e-7 * max(1.0, lam.max())
            assert np.all((a / c)[~unsat] <= lam.max() + 1e-9)


def test_wealth_weighted_favours_the_rich_in_shortage():
    with jax.enable_x64(True):
        game, params = game_of("wealth-weighted", 10.0, reserve=False)
        es = game.engine.init(params.engine)
        out = run_scheduler("wealth-weighted")(
            game, rng.arena_key(0, 0), 1, es, jnp.full((N,), 5.0), params, wealth=jnp.asarray([0.0, 20.0, 100.0, 0.0])
        )
        a = np.asarray(out.actual)
        assert a[2] > a[1] > a[0] == pytest.approx(a[3]) and a.sum() == pytest.approx(10.0)


def test_sequential_policy_players_see_what_was_left():
    """All aggressive (h = min(cap, 0.5 S_seen)), exact observation, no reserve: the k-th
    mover requests half of what its predecessors left."""
    cfg = {
        "model": {
            "scheduler": "sequential",
            "maxPlayers": N,
            "minPlayers": N,
            "commonsInitial": 20,
            "commonsCapacity": 150,
            "threshold": 0,
            "useHiddenReserve": False,
            "maxTurns": 3,
        },
        "observability": {"commonsStock": {"visible": True}},
        "players": [{"strategy": "aggressive", "intensity": 0.5, "privateResource": 400}] * N,
    }
    r = simulate(cfg, n_arenas=3, seed=2)
    game, _ = build(ArenaConfig.model_validate(cfg))
    for a in range(3):
        key = rng.arena_key(2, a)
        p1 = r.players[(r.players.arena == a) & (r.players.turn == 1)].set_index("player")
        order = np.asarray(turn_order(game, key, 1))
        s = 20.0
        for p in order:
            assert p1.loc[p, "requested"] == pytest.approx(0.5 * s, rel=1e-5)
            s -= p1.loc[p, "actual"]


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_every_scheduler_runs_the_default_game(name, logistic_config):
    cfg = copy.deepcopy(logistic_config)
    cfg["model"]["scheduler"] = name
    r = simulate(cfg, n_arenas=8, seed=1)
    t = r.turns
    assert len(r.summary) == 8 and (t["stock"] >= 0).all()


def test_sequential_memory_rows_keep_what_each_player_saw():
    """Sequential with memoryful players (adaptive: memory[0] = the last stock it observed):
    each player's memory row (Game.memory_slots) holds the stock its predecessors in this
    turn's order left, not the stock at the start of the turn."""
    from bdpd_jax.prepare.game import broadcast_batch
    from bdpd_jax.run.simulate import arena_keys, compiled_init, compiled_run

    cfg = {
        "model": {
            "scheduler": "sequential",
            "maxPlayers": N,
            "minPlayers": N,
            "commonsInitial": 40,
            "commonsCapacity": 150,
            "threshold": 0,
            "useHiddenReserve": False,
            "maxTurns": 2,
        },
        "observability": {"commonsStock": {"visible": True}},
        "players": [
            {"strategy": "adaptive", "privateResource": 100},
            {"strategy": "aggressive"},
            {"strategy": "adaptive", "privateResource": 100},
            {"strategy": "conservative"},
        ],
    }
    game, params = build(ArenaConfig.model_validate(cfg))
    assert [p for _, p in game.memory_slots] == [0, 2]  # rows only where a memory is kept
    pb = broadcast_batch(params, 1)
    keys = arena_keys(5, np.arange(1))
    state = compiled_init(game)(keys, pb)
    final, rec = compiled_run(game, 2, True)(keys, state, pb)
    order = np.asarray(turn_order(game, rng.arena_key(5, 0), 2))
    actual = np.asarray(rec.actual)[1, :, 0]  # turn 2, per player
    left = float(np.asarray(rec.stock)[0, 0])  # stock at the start of turn 2
    seen = {}
    for p in order:
        seen[int(p)] = left
        left -= actual[p]
    mem = np.asarray(final.memory)[..., 0]  # [K, M]
    for k, (_, p) in enumerate(game.memory_slots):
        assert mem[k, 0] == pytest.approx(seen[p], rel=1e-6)
