"""Properties over random configs: conservation, non-negativity, frozen collapse, and the
summary agreeing with the per-turn frames."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from payloads import SEED_LOGISTIC

import bdpd_jax

PLAYERS = [
    {"strategy": "aggressive", "intensity": 0.5},
    {"strategy": "conservative"},
    {"strategy": "random"},
    {"strategy": "adaptive"},
]

numbers = st.fixed_dictionaries(
    {
        "regenRate": st.floats(0.0, 1.0, allow_subnormal=False),
        "commonsCapacity": st.floats(5.0, 300.0, allow_subnormal=False),
        "s0": st.floats(0.0, 1.5, allow_subnormal=False),
        "threshold": st.floats(0.0, 0.5, allow_subnormal=False),
        "reserve": st.booleans(),
        "hiddenReserveInitial": st.floats(0.0, 50.0, allow_subnormal=False),
        "sides": st.integers(1, 10),
        "succ": st.floats(0, 1, allow_subnormal=False),
        "noise": st.floats(0.0, 1.0, allow_subnormal=False),
        "intensity": st.floats(0.01, 1.0, allow_subnormal=False),
        "wealth": st.lists(st.floats(0.0, 500.0, allow_subnormal=False), min_size=4, max_size=4),
        "seed": st.integers(0, 1000),
    }
)


def config_of(d: dict) -> dict:
    cfg = copy.deepcopy(SEED_LOGISTIC)
    k = d["commonsCapacity"]
    cfg["model"].update(
        regenRate=d["regenRate"],
        commonsCapacity=k,
        commonsInitial=k * d["s0"],
        threshold=k * d["threshold"],
        useHiddenReserve=d["reserve"],
        hiddenReserveInitial=d["hiddenReserveInitial"],
        collapseDie={"sides": d["sides"], "successThreshold": int(d["succ"] * d["sides"])},
    )
    cfg["observability"]["commonsStock"]["noise"] = d["noise"]
    cfg["players"] = [{**p, "privateResource": w} for p, w in zip(PLAYERS, d["wealth"], strict=False)]
    cfg["players"][0]["intensity"] = d["intensity"]
    return cfg


def check_invariants(res, cfg) -> None:
    t, p, s = res.turns, res.players, res.summary
    m = cfg["model"]
    assert (t.stock >= 0).all()
    assert (p.actual >= 0).all() and (p.actual <= p.requested * (1 + 1e-5) + 1e-6).all()
    total = p.groupby(["arena", "turn"]).actual.sum().to_numpy()
    prev_stock = t.groupby("arena").stock.shift(1).fillna(m["commonsInitial"]).to_numpy()
    existed = prev_stock + t.reserve_drawn.to_numpy()
    assert (total <= existed * (1 + 1e-5) + 1e-5).all(), "harvested more than existed"
    assert (t.reserve_drawn <= m["hiddenReserveInitial"] + 1e-5).all()
    # wealth grows by exactly the actual harvest (no sanctions configured)
    w_prev = p.groupby(["arena", "player"]).wealth.shift(1)
    first = w_prev.isna()
    w0 = np.array([pl["privateResource"] for pl in cfg["players"]], dtype=np.float32)[p.player[first]]
    w_prev[first] = w0
    np.testing.assert_allclose(p.wealth, w_prev + p.actual, rtol=1e-5, atol=1e-4)
    # a collapsed arena stays collapsed: collapse only on its last played turn
    last = t.groupby("arena").turn.transform("max") == t.turn
    assert not (t.collapsed & ~last).any()
    # summary agrees with the per-turn frames
    g = t.groupby("arena")
    np.testing.assert_array_equal(s.turns_played, g.turn.max().to_numpy())
    np.testing.assert_array_equal(s.survived, ~g.collapsed.any().to_numpy())
    collapsed_at = t[t.collapsed].set_index("arena").turn
    np.testing.assert_array_equal(s.collapse_turn.dropna().to_numpy(), collapsed_at.to_numpy())
    final = p[p.turn == p.groupby("arena").turn.transform("max")]
    for i in range(4):
        np.testing.assert_array_equal(s[f"wealth_{i}"].to_numpy(), final[final.player == i].wealth.to_numpy())
        assert ((s[f"rank_{i}"] >= 1) & (s[f"rank_{i}"] <= 4)).all()
    for c in ("cooperation_index", "announce_frequency", "silent_defection", "sanction_rate"):
        # null (NaN) only on a collapse turn, where no regeneration was measured (kernels/metrics.py)
        undefined = c in ("cooperation_index", "silent_defection")
        assert (t[c].between(0, 1) | (undefined & t[c].isna() & t.collapsed)).all(), c
    assert t.lie_score.isna().all()  # nobody announces in the plain game: null, not 0


@given(numbers)
def test_invariants_hold_on_random_configs(d):
    cfg = config_of(d)
    res = bdpd_jax.simulate(cfg, n_arenas=24, seed=d["seed"])
    check_invariants(res, cfg)


def test_invariants_on_the_default_game():
    cfg = bdpd_jax.default_config().model_dump()
    res = bdpd_jax.simulate(cfg, n_arenas=200, seed=0)
    check_invariants(res, cfg)


def test_bad_requests_are_zero_and_flagged():
    import jax
    import jax.numpy as jnp

    from bdpd_jax.kernels import rng
    from bdpd_jax.kernels.turn import step
    from bdpd_jax.prepare.game import build

    game, params = build(bdpd_jax.ArenaConfig.model_validate({**SEED_LOGISTIC, "players": PLAYERS}))
    # one compiled program (as the kernels run): op by op, the turn took ~3x the CPU
    first = jax.jit(lambda key, p, requests: step(game, key, game.init(p), requests, p))
    _, rec = first(rng.arena_key(0, 0), params, jnp.array([jnp.nan, -1.0, jnp.inf, 2.0]))
    assert list(np.asarray(rec.invalid)) == [True, True, True, False]
    np.testing.assert_allclose(np.asarray(rec.actual), [0, 0, 0, 2.0])
    assert float(rec.stock) >= 0


def test_history_off_keeps_summary_only():
    # 200 arenas of the default game as a dict: the history run is the default-game test's program
    cfg = bdpd_jax.default_config().model_dump()
    full = bdpd_jax.simulate(cfg, n_arenas=200, seed=4)
    lean = bdpd_jax.simulate(cfg, n_arenas=200, seed=4, history=False)
    import pandas as pd

    # every outcome comes from the kernel's tally, ex_post_over_usage included: the same without history
    assert full.summary.ex_post_over_usage.notna().all()
    pd.testing.assert_frame_equal(full.summary, lean.summary, check_exact=True)
    with pytest.raises(ValueError, match="history=False"):
        _ = lean.turns
