"""User policies: a pure JAX decide(obs, memory, key) as a player, vmapped like the built-ins."""

from __future__ import annotations

import copy

import jax
import jax.numpy as jnp
import numpy as np
from payloads import SEED_LOGISTIC

import bdpd_jax


def _config(strategies) -> dict:
    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["players"] = [{"strategy": s, "privateResource": 30} for s in strategies]
    return cfg


def test_policy_equal_to_a_builtin_gives_the_same_game():
    def aggressive_like(obs, mem, key):
        cap = obs["myCapacity"]
        s = obs["commonsStock"]
        return jnp.where(jnp.isnan(s), cap, jnp.minimum(cap, 0.5 * s)), mem

    mine = bdpd_jax.Policy(aggressive_like, name="mine", memory_size=0)
    a = bdpd_jax.simulate(_config(["conservative", "conservative", "aggressive", "aggressive"]), n_arenas=20, seed=3)
    b = bdpd_jax.simulate(_config(["conservative", "conservative", mine, mine]), n_arenas=20, seed=3)
    np.testing.assert_allclose(a.players.actual, b.players.actual, rtol=1e-6)
    assert set(b.players.strategy) == {"conservative", "mine"}


def test_policy_memory_and_key():
    def counter(obs, mem, key):
        n = mem[0] + 1.0  # turns seen so far
        h = jnp.where(n <= 3, 0.0, 1.0 + jax.random.uniform(key))  # idle 3 turns, then 1..2
        return h, mem.at[0].set(n)

    pol = bdpd_jax.Policy(counter, name="counter", memory_size=2)
    r = bdpd_jax.simulate(_config([pol, "idle", "idle", "idle"]), n_arenas=50, seed=1, turns=8)
    p = r.players[r.players.player == 0]
    assert (p[p.turn <= 3].requested == 0).all()
    later = p[p.turn > 3].requested
    assert later.between(1, 2).all() and later.nunique() > 10  # a fresh key per arena and turn
    again = bdpd_jax.simulate(_config([pol, "idle", "idle", "idle"]), n_arenas=50, seed=1, turns=8)
    np.testing.assert_array_equal(again.players.requested, r.players.requested)


def test_a_policy_player_can_be_swept_in_one_program():
    from bdpd_jax.run.simulate import TRACES

    greedy = bdpd_jax.Policy(lambda obs, mem, key: (obs["myCapacity"], mem), name="greedy")
    cfg = _config([greedy, "conservative", "aggressive", "aggressive"])
    bdpd_jax.sweep(cfg, grid={"model.regenRate": [0.1, 0.2], "players[2].intensity": [0.3, 0.9]}, replicates=2)
    before = dict(TRACES)
    sw = bdpd_jax.sweep(cfg, grid={"model.regenRate": [0.3, 0.4], "players[2].intensity": [0.5, 0.6]}, replicates=2)
    assert before == TRACES and len(sw.arenas) == 8
