"""Seneca arenas with players: the harvest coupling (docs/semantics.md §9), the seed's payload
playing a real game, rcp against aggressive, and the metrics' null where no share exists."""

from __future__ import annotations

import copy
import dataclasses
import math

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from payloads import SEED_LOGISTIC, SEED_SENECA, size

import bdpd_jax as bj
from bdpd_jax.kernels.metrics import METRICS, governance_metrics
from bdpd_jax.prepare.game import broadcast_batch, build
from bdpd_jax.run.simulate import TRACES, arena_keys, run_batch

MIX = ("rcp", "conservative", "adaptive", "aggressive")


def seed_seneca(players=MIX, turns=None, **seneca):
    """The seed's Seneca payload verbatim (004_* A.2.1) plus a players list."""
    c = copy.deepcopy(SEED_SENECA)
    c["players"] = [{"strategy": s} for s in players]
    if turns is not None:
        c["model"]["maxTurns"] = turns
    c["model"]["seneca"].update(seneca)
    return c


@pytest.fixture(scope="module")
def seed_game():
    return bj.simulate(seed_seneca(), n_arenas=2, progress=False)


def test_seed_payload_with_players_plays_a_real_game(seed_game):
    res = seed_game
    assert res.summary.survived.all() and (res.summary.turns_played == 80).all()
    p = res.players
    assert (p.actual > 0).all() and (p.actual <= p.requested).all()
    # requests are the capacity rule in R units: aggressive asks harvestScale x capacity(30)
    aggr = p[p.strategy == "aggressive"]
    assert aggr.requested.iloc[0] == pytest.approx(1e-4 * 2.5, rel=1e-5)
    for _, t in res.turns.groupby("arena"):
        assert t.stock.is_monotonic_decreasing and 0.9 < t.stock.iloc[-1] < 1.0
        # what left R on turn 1: the harvest plus the dynamics' (negative) regen, all in R units
        first = p[(p.arena == t.arena.iloc[0]) & (p.turn == 1)].actual.sum()
        assert 1.0 - t.stock.iloc[0] == pytest.approx(first - t.regen.iloc[0], rel=1e-4)


def test_every_engine_parameter_is_a_leaf(seed_game):
    """Other values of every number of model.seneca (and R0): the same compiled program, and
    requests that scale with harvestScale."""
    before = dict(TRACES)
    other = {
        "k1": 0.05,
        "k2": 0.2,
        "l1": 0.001,
        "l2": 0.02,
        "l3": 1e-4,
        "capitalSeed": 0.02,
        "pollutionSeed": 0.002,
        "dt": 0.05,
        "harvestScale": 2e-4,
        "collapseFraction": 1e-2,
        "rtol": 1e-5,
        "atol": 1e-8,
    }
    c = seed_seneca(**other)
    c["model"]["commonsInitial"] = 2.0
    res = bj.simulate(c, n_arenas=2, progress=False)
    assert before == TRACES
    b = bj.simulate(seed_seneca(harvestScale=2e-4), n_arenas=2, progress=False)
    assert before == TRACES
    np.testing.assert_allclose(
        b.players.requested[b.players.turn == 1].to_numpy(),
        2 * seed_game.players.requested[seed_game.players.turn == 1].to_numpy(),
        rtol=1e-5,
    )
    assert res.turns.capital.iloc[0] != seed_game.turns.capital.iloc[0]


# --- strategy matters: rcp outlives aggressive -----------------------------------------------


def _rcp_vs_aggressive_program(turns):
    c = seed_seneca(("rcp",) * 4, turns=turns)
    seen = ("commonsStock", "capitalStock", "pollutionLevel")
    c["observability"] = {v: {"visible": True, "noise": 0.1} for v in seen}
    game, p = build(bj.ArenaConfig.load(c), extra_policies=("aggressive",))
    return game, p, [pol.name for pol in game.policies]


def survival(scale, noise, wealth, seed, b, turns):
    """Collapse turns (maxTurns if alive) of b arenas of 4 rcp and b of 4 aggressive players,
    one program for both (strategy, harvestScale, noise and wealth are leaves)."""
    game, p, names = _rcp_vs_aggressive_program(turns)
    pb = broadcast_batch(p, 2 * b)
    strat = np.repeat([names.index("rcp"), names.index("aggressive")], b)
    dt = pb.engine.harvest_scale.dtype
    pb = dataclasses.replace(
        pb,
        engine=dataclasses.replace(pb.engine, harvest_scale=jnp.full((2 * b,), scale, dt)),
        obs=dataclasses.replace(pb.obs, noise=jnp.where(pb.obs.noise > 0, noise, 0.0).astype(dt)),
        players=dataclasses.replace(
            pb.players,
            strategy=jnp.asarray(np.broadcast_to(strat, (4, 2 * b)), jnp.int32),
            wealth0=jnp.full((4, 2 * b), wealth, dt),
        ),
    )
    state, _ = run_batch(game, pb, arena_keys(seed, np.arange(2 * b)), turns, turns, False)
    t = np.asarray(state.turn)
    return t[:b], t[b:]


@settings(max_examples=4)
@given(
    scale=st.floats(1e-3, 2e-3), noise=st.floats(0.0, 0.3), wealth=st.floats(20.0, 100.0), seed=st.integers(0, 2**31)
)
def test_rcp_outlives_aggressive_on_average(scale, noise, wealth, seed):
    """Capacities of 2e-3 to 1.2e-2 R0 a turn: 4 aggressive players take the commons within
    ~125 turns (docs/semantics.md §9); rcp, over the same arenas, lasts >= 1.5x longer."""
    b, turns = size(96, 1000), size(300, 3000)
    rcp, aggr = survival(scale, noise, wealth, seed, b, turns)
    diff = rcp.mean() - aggr.mean()
    se = math.sqrt(rcp.var(ddof=1) / b + aggr.var(ddof=1) / b)
    assert diff > 1.96 * se and rcp.mean() > 1.5 * aggr.mean(), (rcp.mean(), aggr.mean(), se)


def test_rcp_against_aggressive_compiles_once():
    b, turns = size(96, 1000), size(300, 3000)
    survival(1e-3, 0.1, 30.0, 0, b, turns)
    before = TRACES["run"]
    survival(5e-4, 0.2, 60.0, 1, b, turns)
    assert TRACES["run"] == before


# --- config -----------------------------------------------------------------------------------


@pytest.mark.parametrize("scale,players", [(0.1, MIX), (0.5, ("conservative", "idle"))])
def test_harvest_scale_emptying_the_commons_at_once_is_rejected(scale, players):
    with pytest.raises(ValueError, match="harvestScale"):
        bj.ArenaConfig.load(seed_seneca(players, harvestScale=scale))


def test_harvest_scale_rejected_when_not_positive():
    for bad in (0.0, -1e-4):
        with pytest.raises(ValueError, match="harvestScale"):
            bj.ArenaConfig.load(seed_seneca(harvestScale=bad))
    bj.ArenaConfig.load(seed_seneca(("idle",) * 4, harvestScale=0.5))  # idle players never harvest


# --- metrics where their input does not exist ------------------------------------------------

grid = st.integers(0, 64).map(lambda k: k / 16)


@given(
    actual=st.lists(grid, min_size=4, max_size=4),
    announced=st.lists(st.one_of(st.none(), grid), min_size=4, max_size=4),
    regen=st.integers(-40, 40).map(lambda k: k / 16),
)
def test_metrics_null_exactly_where_no_share(actual, announced, regen):
    ann = jnp.asarray([math.nan if a is None else a for a in announced], jnp.float32)
    args = (jnp.asarray(actual, jnp.float32), ann, jnp.float32(1.0), jnp.float32(regen), jnp.ones((4,), bool))
    on, off = governance_metrics(*args, True), governance_metrics(*args, False)
    for m in METRICS:
        if m in ("cooperation_index", "silent_defection"):
            assert math.isnan(float(off[m])) and not math.isnan(float(on[m]))
        else:
            np.testing.assert_array_equal(np.asarray(on[m]), np.asarray(off[m]))


def test_seneca_metrics_null_and_over_usage_null(seed_game):
    res = seed_game
    t = res.turns
    assert (t.regen <= 0).all()
    assert t.cooperation_index.isna().all() and t.silent_defection.isna().all()
    assert (t.announce_frequency == 0).all() and (t.sanction_rate == 0).all()
    assert res.summary.ex_post_over_usage.isna().all() and res.summary.total_gain.gt(0).all()


def _logistic_collapsing():
    c = copy.deepcopy(SEED_LOGISTIC)
    c["players"] = [{"strategy": "aggressive"}] * 4
    c["model"].update(maxTurns=40, useHiddenReserve=False)
    return c


def test_logistic_collapse_turn_null_and_over_usage_without_it():
    c = _logistic_collapsing()
    res = bj.simulate(c, n_arenas=3, seed=1, progress=False)
    t, p = res.turns, res.players
    assert (~res.summary.survived).all()
    last = t.groupby("arena").turn.transform("max") == t.turn
    skipped = last & t.collapsed & (t.regen == 0)  # collapse before the dynamics ran
    assert skipped.any()
    assert t.cooperation_index[skipped].isna().all() and t.silent_defection[skipped].isna().all()
    assert t.cooperation_index[~skipped].notna().all()
    # ex_post_over_usage counts decisions on turns with a share only, by records and by accumulators
    m = p.merge(t[["arena", "turn", "regen"]].assign(ok=~skipped), on=["arena", "turn"])
    m = m[m.ok]
    want = (m.actual > m.regen / 4 + 1e-6).groupby(m.arena).mean().to_numpy()
    np.testing.assert_allclose(res.summary.ex_post_over_usage.to_numpy(), want, rtol=1e-6)


def test_ex_post_over_usage_counts_judged_turns_only():
    import jax.numpy as jnp

    from bdpd_jax.kernels import outcomes, sustainability

    actual = np.asarray([[1.0, 0.0], [1.0, 1.0], [2.0, 2.0], [5.0, 5.0]], np.float32)  # [T=4, N=2]
    regen = np.asarray([4.0, 0.0, 0.0, 0.0], np.float32)
    defined = [True, True, False, True]  # turn 3: a collapse turn, no share
    live = [True, True, True, False]  # turn 4: the game had ended (frozen), not counted
    t = sustainability.init_tally(2, jnp.float32)
    for k in range(4):
        t = sustainability.add(
            t, jnp.asarray(actual[k]), jnp.inf, regen[k], jnp.asarray(defined[k]), jnp.asarray(live[k])
        )
    over, judged = np.asarray(t.share_over)[:, None], np.asarray(t.share_judged)[None]
    gains = np.asarray(t.gains)[:, None]
    assert over.tolist() == [[1], [1]] and judged.tolist() == [2] and gains[:, 0].tolist() == [4.0, 3.0]
    nan = jnp.float32(np.nan)

    def ex_post(tally):
        return float(outcomes.outcomes(tally, jnp.int32(3), jnp.int32(3), nan, nan)["ex_post_over_usage"])

    assert ex_post(t) == 0.5
    assert np.isnan(ex_post(sustainability.Tally(t.gains, t.over, t.share_over * 0, jnp.int32(0))))


@pytest.mark.heavy
def test_seed_mix_keeps_the_median_arena_alive(seed_game):
    """The seed payload verbatim with the seed_game's mix, longer (docs/semantics.md §9): the
    same compiled program (chunks of 80 turns), small unless BDPD_HEAVY=1."""
    c = seed_seneca(turns=size(800, 3000))
    res = bj.simulate(c, n_arenas=size(2, 1000), chunk_turns=80, progress=False)
    st_ = res.summary.survival_time.to_numpy()
    assert np.median(st_) >= min(800, c["model"]["maxTurns"])
