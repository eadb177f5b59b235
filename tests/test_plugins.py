"""Governance plugins (issue 17): ``voluntary_sanction`` against a plain-Python reference
(hypothesis inputs, and a whole run re-derived from its frames), live == batch, provenance
rows, and a plugin type registered in this file working end to end."""

from __future__ import annotations

import copy
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import reference_governance as R
from hypothesis import given, settings
from hypothesis import strategies as st
from payloads import MIXED_PLAYERS, SEED_LOGISTIC

import bdpd_jax
from bdpd_jax.config.plugins import PluginSpec, register_plugin
from bdpd_jax.host.live.arena import Arena
from bdpd_jax.kernels import plugins as K
from bdpd_jax.kernels import voluntary_sanction as V

N = 4
RULES = st.sampled_from(["never", "always", "reciprocal"]) | st.tuples(
    st.just("if_richer_than"), st.floats(0, 30, allow_subnormal=False)
)
MONEY = st.floats(0, 30, allow_subnormal=False)


@jax.jit
def _turn(wealth, violated, over, against, before, rule, thr, cost, fine):
    pp = V.VoluntaryParams(cost=cost, fine=fine, rule=rule, threshold=thr)
    game = type("G", (), {"n_players": N})()
    view = K.PluginView(
        turn=jnp.int32(1),
        stock=jnp.zeros(()),
        regen=jnp.zeros(()),
        actual=jnp.zeros(N),
        over=over,
        violated=violated,
        against=against,
        wealth=wealth,
        metrics={},
    )
    eff, mem = V.act(game, view, pp, {"fined": before, "intent": jnp.zeros_like(before)})
    after = mem["fined"]
    w, paid = K.take(wealth, jnp.sum(eff.costs, axis=1))
    w, taken = K.take(w, jnp.sum(eff.fines, axis=0))
    return eff, w, taken, paid, after


@settings(max_examples=60, deadline=None)
@given(
    wealth=st.lists(MONEY, min_size=N, max_size=N),
    violated=st.lists(st.booleans(), min_size=N, max_size=N),
    over=st.lists(st.booleans(), min_size=N, max_size=N),
    against=st.lists(st.lists(st.booleans(), min_size=N, max_size=N), min_size=N, max_size=N),
    before=st.lists(st.lists(st.booleans(), min_size=N, max_size=N), min_size=N, max_size=N),
    rules=st.lists(RULES, min_size=N, max_size=N),
    cost=st.floats(0, 5, allow_subnormal=False),
    fine=st.floats(0, 10, allow_subnormal=False),
)
def test_voluntary_sanction_matches_reference(wealth, violated, over, against, before, rules, cost, fine):
    against = [[a and i != j for j, a in enumerate(row)] for i, row in enumerate(against)]
    with jax.enable_x64(True):
        code = [V.IF_RICHER if isinstance(r, tuple) else V.RULES.index(r) for r in rules]
        thr = [r[1] if isinstance(r, tuple) else 0.0 for r in rules]
        eff, w, taken, paid, after = _turn(
            jnp.asarray(wealth, jnp.float64),
            jnp.asarray(violated),
            jnp.asarray(over),
            jnp.asarray(against),
            jnp.asarray(before),
            jnp.asarray(code, jnp.int32),
            jnp.asarray(thr, jnp.float64),
            jnp.float64(cost),
            jnp.float64(fine),
        )
    imposed, w_ref, taken_ref, paid_ref, after_ref = R.voluntary_sanction(
        wealth, violated, over, against, before, rules, cost, fine
    )
    got = (np.asarray(eff.fines) > 0) | (np.asarray(eff.costs) > 0)
    want = np.asarray(imposed) & ((fine > 0) | (cost > 0))
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(np.asarray(w), w_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(taken), taken_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(paid), paid_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(np.asarray(after), np.asarray(after_ref))
    assert (np.asarray(w) >= 0).all()


VS = {
    "type": "voluntary_sanction",
    "id": "vs",
    "cost": 0.5,
    "fine": 2.0,
    "sanctioner": ["always", "never", {"if_richer_than": 20}, "reciprocal"],
}


def _cfg(plugins, turns=8):
    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["model"]["maxTurns"] = turns
    cfg["players"] = copy.deepcopy(MIXED_PLAYERS)
    cfg["plugins"] = copy.deepcopy(plugins)
    return cfg


def test_a_whole_run_re_derived_from_its_frames():
    """No pacts: the targets are the over-harvesters; every turn's fines, costs and wealths
    follow the reference from the frames of the turn before."""
    res = bdpd_jax.simulate(_cfg([VS]), n_arenas=4, seed=2)
    pl, tu, s = res.players, res.turns, res.sanctions
    assert len(s) > 0 and set(s.type) == {"voluntary_sanction"} and set(s.reason) == {"over_harvest"}
    rules = ["always", "never", ("if_richer_than", 20.0), "reciprocal"]
    for arena in range(4):
        p = pl[pl.arena == arena]
        before = [[False] * N for _ in range(N)]
        w_prev = [float(x["privateResource"]) for x in MIXED_PLAYERS]
        for turn in sorted(p.turn.unique()):
            g = p[p.turn == turn].sort_values("player")
            regen = float(tu[(tu.arena == arena) & (tu.turn == turn)].regen.iloc[0])
            actual = g.actual.to_numpy(float)
            pre = [w_prev[i] + actual[i] for i in range(N)]
            over = [a > regen / N + 1e-6 for a in actual]
            imposed, w_ref, taken, paid, before = R.voluntary_sanction(
                pre, [False] * N, over, [[False] * N] * N, before, rules, 0.5, 2.0
            )
            rows = s[(s.arena == arena) & (s.turn == turn)]
            assert sorted(zip(rows.payer, rows.player, strict=True)) == sorted(
                (j, i) for j in range(N) for i in range(N) if imposed[j][i]
            )
            np.testing.assert_allclose(g.wealth.to_numpy(float), w_ref, rtol=1e-5, atol=1e-4)
            np.testing.assert_allclose(g.sanction.to_numpy(float), taken, rtol=1e-5, atol=1e-4)
            np.testing.assert_allclose(g.sanction_cost.to_numpy(float), paid, rtol=1e-5, atol=1e-4)
            w_prev = list(g.wealth.to_numpy(float))
    # sanction_rate counts the players fined
    fined = s.groupby(["arena", "turn"]).player.nunique()
    t = tu.set_index(["arena", "turn"]).sanction_rate
    np.testing.assert_allclose(t.loc[fined.index].to_numpy(), fined.to_numpy() / N)


def test_live_arena_equals_batch_and_logs_the_same_rows():
    cfg = _cfg([VS], turns=6)
    cfg["pacts"] = [{"parties": [0, 1, 3], "terms": {"type": "harvest_cap", "maxHarvest": 1.5}}]
    res = bdpd_jax.simulate(cfg, n_arenas=1, seed=5)
    arena = Arena(cfg, seed=5)
    arena.run()
    pl, s = res.players, res.sanctions
    assert {"pact_violation", "over_harvest"} <= set(s.reason)
    for rec in arena.records:
        p = pl[pl.turn == rec["turn"]].sort_values("player")
        for key in ("wealth", "sanction", "actual"):
            np.testing.assert_array_equal(np.float32([d[key] for d in rec["decisions"]]), p[key].to_numpy())
        live = sorted(
            (arena.players.index(r["playerId"]), arena.players.index(r["paidBy"]), r["amount"], r["cost"], r["reason"])
            for r in rec["sanctions"]
            if r["type"] == "voluntary_sanction"
        )
        rows = s[(s.turn == rec["turn"]) & (s.type == "voluntary_sanction")]
        assert live == sorted(zip(rows.player, rows.payer, rows.amount, rows.cost, rows.reason, strict=True))


def test_config_errors_name_the_field():
    for plugins, needle in (
        ([{**VS, "cost": -1}], r"plugins\[0\].cost"),
        ([{**VS, "sanctioner": ["always"]}], r"plugins\[0\].sanctioner"),
        ([{**VS, "type": "nope"}], r"plugins\[0\].type"),
        ([VS, VS], r"plugins\[1\].id"),
    ):
        with pytest.raises(ValueError, match=needle):
            bdpd_jax.config.game.ArenaConfig.model_validate(_cfg(plugins))


# -- a plugin type registered in this file: the richest player pays to fine over-harvesters ----
def _bounty_act(game, view, pp, memory):
    n = game.n_players
    rich = jnp.arange(n) == jnp.argmax(view.wealth)
    hit = rich[:, None] & view.over[None, :] & ~jnp.eye(n, dtype=bool)
    dt = view.wealth.dtype
    fines = jnp.where(hit, pp["fine"].astype(dt), 0.0)
    costs = jnp.where(hit, pp["cost"].astype(dt), 0.0)
    return K.Effects(fines, costs, jnp.where(jnp.any(hit, axis=0), 1, 0).astype(jnp.int32)), memory + jnp.sum(hit)


class BountySpec(PluginSpec):
    type: Literal["bounty"]
    fine: float
    cost: float

    def params(self, config):
        return {"fine": jnp.float32(self.fine), "cost": jnp.float32(self.cost)}


@pytest.fixture(scope="module")
def bounty():
    if "bounty" not in K.plugin_names():
        register_plugin(
            "bounty", _bounty_act, BountySpec, init=lambda game, pp: jnp.zeros((), jnp.int32), reasons=("bounty",)
        )


def test_a_plugin_registered_here_works_end_to_end(bounty):
    cfg = _cfg([{"type": "bounty", "id": "b", "fine": 1.0, "cost": 0.25}], turns=5)
    res = bdpd_jax.simulate(cfg, n_arenas=2, seed=1)
    s = res.sanctions
    assert len(s) > 0 and set(s.id) == {"b"} and set(s.reason) == {"bounty"} and set(s.cost) == {0.25}
    pl = res.players
    for (arena, turn), rows in s.groupby(["arena", "turn"]):
        g = pl[(pl.arena == arena) & (pl.turn == turn)]
        assert rows.payer.nunique() == 1 and (rows.payer != rows.player).all()
        np.testing.assert_allclose(g.set_index("player").sanction.loc[rows.player].to_numpy(), 1.0)
    # live: the same kernel, the same rows
    arena = Arena(cfg, seed=1)
    arena.run()
    live = [(r["turn"], r["playerId"], r["paidBy"]) for rec in arena.records for r in rec["sanctions"]]
    rows = s[s.arena == 0]
    assert sorted(live) == sorted(
        (t, arena.players[i], arena.players[j]) for t, i, j in zip(rows.turn, rows.player, rows.payer, strict=True)
    )


def test_live_players_sanction_through_the_tool_under_the_same_rules():
    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["model"].update(maxPlayers=3, minPlayers=3, maxTurns=3)
    cfg["players"] = [{"strategy": "aggressive", "intensity": 0.5, "name": "a"}, {"strategy": "idle", "name": "i"}]
    cfg["plugins"] = [{"type": "voluntary_sanction", "id": "vs", "cost": 0.5, "fine": 2.0, "sanctioner": "never"}]
    arena = Arena(cfg, seed=2, no_talk=True)  # a governance tool, not talk: --no-talk keeps it
    calls = [
        {"tool": "sanction", "target": "a", "reason": "greedy"},
        {"tool": "sanction", "target": "i"},
        {"tool": "sanction", "target": "s"},
    ]
    arena.join({"agentType": "scripted", "name": "s", "script": [{"harvest": 0.0, "actions": calls}] * 3})
    r1 = arena.tick()
    ok = [t["result"]["ok"] for t in r1["tools"]]
    assert ok == [True, True, False] and "oneself" in r1["tools"][2]["result"]["reason"]
    rows = [(r["playerId"], r["paidBy"], r["amount"], r["cost"], r["reason"]) for r in r1["sanctions"]]
    assert rows == [("a", "s", 2.0, 0.5, "over_harvest")]  # i harvested nothing: no fine, no cost
    d = {x["playerId"]: x for x in r1["decisions"]}
    assert d["s"]["wealth"] == pytest.approx(30.0 - 0.5) and d["a"]["sanction"] == 2.0 and d["i"]["sanction"] == 0.0
    assert r1["metrics"]["sanction_rate"] == pytest.approx(1 / 3)
    # no call, no sanction (the rule is "never"); no_talk as above: the same game and programs
    arena2 = Arena(cfg, seed=2, no_talk=True)
    arena2.join({"agentType": "scripted", "name": "s", "script": [{"harvest": 0.0}]})
    assert arena2.tick()["sanctions"] == []


def test_plugin_numbers_sweep_in_one_compile():
    from bdpd_jax.run import simulate as sim

    cfg = _cfg([{**VS, "sanctioner": "always"}], turns=6)
    before = sim.TRACES["run"]
    sw = bdpd_jax.sweep(cfg, grid={"plugins[vs].fine": [0.0, 4.0], "plugins[vs].cost": [0.1, 2.0]}, replicates=4)
    assert sim.TRACES["run"] - before == 1 and len(sw.points) == 4
