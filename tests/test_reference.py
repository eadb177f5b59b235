"""The kernels match the independent plain-Python reference turn by turn.

Both are fed the same random draws: the harness reads them from the kernels' counter-based
generator (observation noise, policy uniforms, the die uniform) and hands them to the
reference, which implements the rules from the seed text on its own.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from reference import RefArena

from bdpd_jax.config.game import ArenaConfig
from bdpd_jax.kernels import rng
from bdpd_jax.kernels.params import ENV_VARS, NOISE_STREAM
from bdpd_jax.kernels.policies import BUILTINS
from bdpd_jax.kernels.turn import decide, step
from bdpd_jax.prepare.game import build

STRATS = ["aggressive", "conservative", "adaptive", "random", "rcp", "idle"]


@functools.cache
def _draw_fn(n: int, x64: bool):
    """One jitted program for all of a turn's draws (eager calls per draw are slow)."""
    names = ENV_VARS + ("myWealth", "myCapacity")

    def f(key, turn):
        players = jnp.arange(n)
        scal = jnp.stack(
            [
                jax.vmap(lambda p, nm=nm: rng.normal(key, turn, p, rng.obs_purpose(NOISE_STREAM[nm])))(players)
                for nm in names
            ]
        )
        peers = jnp.stack(
            [
                jax.vmap(lambda p, nm=nm: rng.normal(key, turn, p, rng.obs_purpose(NOISE_STREAM[nm]), (n,)))(players)
                for nm in ("othersWealth", "othersHarvest")
            ]
        )
        us = jax.vmap(lambda p: rng.uniform(key, turn, p, rng.POLICY))(players)
        return scal, peers, us, rng.uniform(key, turn, 0, rng.DIE)

    return jax.jit(f)


def draws(game, key, turn, n):
    """The kernels' draws for one turn, routed by name for the reference."""
    scal, peers, us, u_die = (np.asarray(a, float) for a in _draw_fn(n, bool(jax.config.jax_enable_x64))(key, turn))
    names = ENV_VARS + ("myWealth", "myCapacity")
    zs = []
    for p in range(n):
        d = {nm: float(scal[i, p]) for i, nm in enumerate(names)}
        d["othersWealth"], d["othersHarvest"] = list(peers[0, p]), list(peers[1, p])
        zs.append(d)
    return zs, list(us), float(u_die)


def successes(u: float, model: dict) -> float:
    p = model["collapseDie"]["successThreshold"] / model["collapseDie"]["sides"]
    if p >= 1:
        return math.inf
    if p <= 0:
        return 0.0
    return math.floor(math.log(u) / math.log(p))


@functools.cache
def compiled(game, x64: bool):
    """One jitted init/decide/step per game (and dtype mode), shared by all examples."""
    return (
        jax.jit(game.init),
        jax.jit(lambda k, s, p: decide(game, k, s, p)),
        jax.jit(lambda k, s, r, p: step(game, k, s, r, p)),
    )


def canonical_order(game, params):
    """The same game with its strategies in STRATS order: ``build`` lists them in order of
    first use, so two assignments of the same strategies would be two programs. Relabelling the
    strategy indices (policies, candidates, each player's index) changes no number."""
    order = tuple(BUILTINS[s] for s in STRATS)
    assert sorted(map(order.index, game.policies)) == list(range(len(order)))
    new = np.asarray([order.index(p) for p in game.policies], np.int32)  # old index -> new index
    candidates = tuple(tuple(sorted(int(new[i]) for i in c)) for c in game.candidates)
    game = dataclasses.replace(game, policies=order, candidates=candidates)
    players = dataclasses.replace(params.players, strategy=new[np.asarray(params.players.strategy)])
    return game, dataclasses.replace(params, players=players)


def assert_turn_matches(rec, out: dict, t: int, rtol: float) -> None:
    """A played turn's kernel record equals the reference's: the commons, each player's
    harvest and wealth, and the collapse flag."""
    for name in ("stock", "regen", "reserve_drawn"):
        np.testing.assert_allclose(float(getattr(rec, name)), out[name], rtol=rtol, atol=1e-9, err_msg=f"{name} t={t}")
    for name in ("actual", "wealth"):
        np.testing.assert_allclose(
            np.asarray(getattr(rec, name)), out[name], rtol=rtol, atol=1e-9, err_msg=f"{name} t={t}"
        )
    assert bool(rec.collapsed) == out["collapsed"], t


def play_both(cfg_dict: dict, seed: int, turns: int, external=None, rtol=1e-9):
    cfg = ArenaConfig.model_validate(cfg_dict)
    # every strategy compiled in, in one order, so examples differing only in assignment share one program
    game, params = canonical_order(*build(cfg, extra_policies=tuple(STRATS)))
    model = cfg.model.model_dump()
    model["collapseDie"] = cfg.model.engine.collapse_die.model_dump()
    obs_cfg = {k: v.model_dump() for k, v in cfg.observability.items()}
    ref = RefArena(model, obs_cfg, [p.model_dump() for p in cfg.players])
    key = rng.arena_key(seed, 0)
    jinit, jdecide, jstep = compiled(game, bool(jax.config.jax_enable_x64))
    state = jinit(params)
    n = game.n_players
    for t in range(1, turns + 1):
        zs, us, u_die = draws(game, key, t, n)
        req_k, state = jdecide(key, state, params)
        if not ref.over:
            obs = [ref.observe(i, zs[i]) for i in range(n)]
            req_r = [ref.decide(i, obs[i], us[i]) for i in range(n)]
            np.testing.assert_allclose(np.asarray(req_k), req_r, rtol=rtol, atol=1e-9, err_msg=f"requests turn {t}")
        if external is not None:
            req_r = external[t - 1]
            req_k = jnp.asarray(req_r, state.wealth.dtype)
        state, rec = jstep(key, state, req_k, params)
        out = ref.step(list(np.asarray(req_k, float)), successes(u_die, model))
        if out is None:
            assert not bool(rec.played)
            continue
        assert bool(rec.played)
        assert_turn_matches(rec, out, t, rtol)
        assert list(np.asarray(rec.invalid)) == out["invalid"]
        for m in ("cooperation_index", "silent_defection"):
            assert float(rec.metrics[m]) == pytest.approx(out[m], nan_ok=True), (m, t)
        assert math.isnan(float(rec.metrics["lie_score"]))
    assert int(state.turn) == ref.turn and bool(state.collapsed) == ref.collapsed


config_st = st.fixed_dictionaries(
    {
        "regen": st.floats(0.0, 0.6, allow_subnormal=False),
        "K": st.floats(20.0, 400.0, allow_subnormal=False),
        "s0_frac": st.floats(0.2, 1.2, allow_subnormal=False),
        "threshold_frac": st.just(0.0) | st.floats(1e-6, 0.3, allow_subnormal=False),
        "reserve": st.booleans(),
        "reserve0": st.floats(0.0, 40.0, allow_subnormal=False),
        "sides": st.integers(1, 12),
        "succ_frac": st.floats(0.0, 1.0, allow_subnormal=False),
        "strategies": st.lists(st.sampled_from(STRATS), min_size=4, max_size=4),
        "noise": st.floats(0.0, 0.3, allow_subnormal=False),
        "res": st.sampled_from(["exact", "qualitative", "sign"]),
        "ratio_visible": st.booleans(),
        "stock_visible": st.booleans(),
        "seed": st.integers(0, 2**31),
    }
)


def make_config(d: dict) -> dict:
    n = len(d["strategies"])
    return {
        "model": {
            "maxPlayers": n,
            "minPlayers": n,
            "maxTurns": 25,
            "commonsInitial": d["K"] * d["s0_frac"],
            "commonsCapacity": d["K"],
            "regenRate": d["regen"],
            "threshold": d["K"] * d["threshold_frac"],
            "useHiddenReserve": d["reserve"],
            "hiddenReserveInitial": d["reserve0"],
            "collapseDie": {"sides": d["sides"], "successThreshold": int(round(d["succ_frac"] * d["sides"]))},
        },
        "observability": {
            "commonsStock": {
                "visible": d["stock_visible"],
                "noise": d["noise"],
                "resolution": d["res"] if d["res"] != "sign" else "exact",
            },
            "commonsRatio": {"visible": d["ratio_visible"], "noise": d["noise"], "resolution": d["res"]},
            "nPlayers": {"visible": True},
            "othersWealth": {"visible": True, "noise": d["noise"]},
            "othersHarvest": {"visible": True, "noise": 0.0},
        },
        "players": [
            {"strategy": s, "intensity": 0.3 + 0.1 * i, "reductionFactor": 0.5 + 0.25 * i, "privateResource": 5.0 * i}
            for i, s in enumerate(d["strategies"])
        ],
    }


@given(config_st)
def test_policies_and_turns_match_reference_x64(d):
    with jax.enable_x64(True):
        play_both(make_config(d), d["seed"], 25)


@given(
    config_st,
    st.lists(
        st.lists(
            st.floats(-5.0, 60.0, allow_subnormal=False) | st.just(math.nan) | st.just(math.inf), min_size=4, max_size=4
        ),
        min_size=25,
        max_size=25,
    ),
)
def test_random_requests_match_reference_x64(d, reqs):
    n = len(d["strategies"])
    external = [r[:n] for r in reqs]
    with jax.enable_x64(True):
        play_both(make_config(d), d["seed"], 25, external=external)


def test_float32_default_matches_reference_closely(logistic_config):
    play_both(logistic_config, 11, 30, rtol=2e-4)


def test_die_collapse_probability_matches_the_rule():
    """Monte Carlo over arenas: P(no collapse) for n excess units is (s/sides)^n."""
    cfg = {
        "model": {
            "maxPlayers": 1,
            "minPlayers": 1,
            "maxTurns": 1,
            "commonsInitial": 10,
            "commonsCapacity": 100,
            "threshold": 0,
            "hiddenReserveInitial": 50,
            "collapseDie": {"sides": 6, "successThreshold": 4},
        },
        "players": [{"strategy": "idle"}],
    }
    from bdpd_jax.prepare.game import build as b

    # request 13 = stock 10 + 3 excess units: survive iff 3 successes in a row
    game, params = b(ArenaConfig.model_validate(cfg))

    def run(params):  # keys, batch, init and turn as one program (eager, each op compiles apart)
        keys = jax.vmap(lambda a: rng.arena_key(0, a), out_axes=-1)(jnp.arange(20000, dtype=jnp.uint32))
        p = jax.tree_util.tree_map(
            lambda x: jnp.broadcast_to(jnp.asarray(x)[..., None], jnp.shape(x) + (20000,)), params
        )
        st0 = jax.vmap(game.init, in_axes=-1, out_axes=-1)(p)
        f = jax.vmap(lambda k, s, pp: step(game, k, s, jnp.asarray([13.0]), pp), in_axes=-1, out_axes=-1)
        return f(keys, st0, p)

    _, rec = jax.jit(run)(params)
    survive = 1 - np.asarray(rec.collapsed).mean()
    assert survive == pytest.approx((4 / 6) ** 3, abs=0.015)
    drawn = np.asarray(rec.reserve_drawn)
    assert set(np.unique(drawn)) <= {0.0, 1.0, 2.0, 3.0}
    assert np.all(drawn[~np.asarray(rec.collapsed)] == 3.0)
