"""``governance_agent`` (issue 17): the built-in regulator's rule and its effects against a
plain-Python reference (hypothesis inputs, and a whole run re-derived from its frames), the
regen mandate as the registry's own ``regen_set``, the external (live host) path through
``set_pending`` equal to the built-in one, batch == single arenas, one compile per sweep, and
config errors naming the field."""

from __future__ import annotations

import copy
import dataclasses
import math
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import reference_governance as R
from hypothesis import given, settings
from hypothesis import strategies as st
from payloads import MIXED_PLAYERS, SEED_LOGISTIC, SEED_SENECA

import bdpd_jax
from bdpd_jax.config.game import ArenaConfig
from bdpd_jax.config.plugins import PluginSpec, register_plugin
from bdpd_jax.kernels import governance_agent as G
from bdpd_jax.kernels import pacts as P
from bdpd_jax.kernels import plugins as K
from bdpd_jax.kernels.turn import play
from bdpd_jax.prepare.game import build
from bdpd_jax.run.runner import arena_keys

N = 4
LADDER = [1.0, 3.0, 10.0]
AGENT = {
    "type": "governance_agent",
    "id": "ga",
    "coop_below": 0.3,
    "stock_below": 0.5,
    "coop_above": 0.7,
    "stock_above": 0.5,
    "cap": 1.2,
    "tighten": 2.0,
    "loosen": 0.5,
    "regen": 0.2,
    "cooldown": 2,
}


def _cfg(agent=AGENT, turns=12, ladder=True):
    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["model"]["maxTurns"] = turns
    cfg["players"] = copy.deepcopy(MIXED_PLAYERS)
    if ladder:
        cfg["perturbations"] = [
            {
                "id": "ladder",
                "type": "sanction_graduated",
                "trigger": {"kind": "pact_violation"},
                "payload": {"ladder": LADDER},
            }
        ]
    cfg["plugins"] = [copy.deepcopy(agent)] if agent is not None else []
    return cfg


def _none(x):
    return None if math.isnan(x) else x


def _ref_params(a: dict) -> dict:
    return {
        k: a.get(k)
        for k in (
            "coop_below",
            "stock_below",
            "coop_above",
            "stock_above",
            "cap",
            "tighten",
            "loosen",
            "regen",
            "cooldown",
        )
    }


# -- the rule ----------------------------------------------------------------------------------
@jax.jit
def _decide(coop, ratio, turn, cap_now, scale, regen_now, last, pp):
    view = K.PluginView(
        turn=turn,
        stock=jnp.zeros(()),
        regen=jnp.zeros(()),
        actual=jnp.zeros(N),
        over=jnp.zeros(N, bool),
        violated=jnp.zeros(N, bool),
        against=jnp.zeros((N, N), bool),
        wealth=jnp.zeros(N, coop.dtype),
        metrics={"cooperation_index": coop},
        stock_ratio=ratio,
    )
    mem = {
        "pending": G.no_action(coop.dtype),
        "cap": cap_now,
        "scale": scale,
        "regen": regen_now,
        "last": last,
        "count": jnp.int32(0),
    }
    return G.decide(view, pp, mem)


UNIT = st.floats(0, 1, allow_subnormal=False)
MAYBE = lambda s: st.none() | s  # noqa: E731


@settings(max_examples=80, deadline=None)
@given(
    coop=MAYBE(UNIT),
    ratio=MAYBE(st.floats(0, 1.5, allow_subnormal=False)),
    turn=st.integers(1, 30),
    cap_now=MAYBE(st.sampled_from([0.5, 1.2])),
    scale=st.sampled_from([0.5, 1.0, 2.0, 4.0]),
    regen_now=MAYBE(st.sampled_from([0.05, 0.2])),
    last=MAYBE(st.integers(0, 30)),
    p=st.fixed_dictionaries(
        {
            "coop_below": UNIT,
            "stock_below": st.floats(0, 1, allow_subnormal=False),
            "coop_above": UNIT,
            "stock_above": st.floats(0, 1, allow_subnormal=False),
            "cap": MAYBE(st.sampled_from([0.5, 1.2, 3.0])),
            "tighten": st.sampled_from([0.5, 1.0, 2.0]),
            "loosen": st.sampled_from([0.25, 0.5, 1.0]),
            "regen": MAYBE(st.sampled_from([0.05, 0.2])),
            "cooldown": st.integers(0, 4),
        }
    ),
)
def test_rule_matches_reference(coop, ratio, turn, cap_now, scale, regen_now, last, p):
    nan = float("nan")
    f = lambda x: jnp.float64(nan if x is None else x)  # noqa: E731
    with jax.enable_x64(True):
        pp = G.AgentParams(
            coop_below=f(p["coop_below"]),
            stock_below=f(p["stock_below"]),
            coop_above=f(p["coop_above"]),
            stock_above=f(p["stock_above"]),
            cap=f(p["cap"]),
            tighten=f(p["tighten"]),
            loosen=f(p["loosen"]),
            regen=f(p["regen"]),
            cooldown=jnp.int32(p["cooldown"]),
        )
        got = _decide(
            f(coop),
            f(ratio),
            jnp.int32(turn),
            f(cap_now),
            f(scale),
            f(regen_now),
            jnp.int32(G.NEVER if last is None else last),
            pp,
        )
    want = R.governance_agent_rule(
        coop, ratio, turn, {"cap": cap_now, "scale": scale, "regen": regen_now, "last": last}, p
    )
    assert {k: _none(float(v)) for k, v in got._asdict().items()} == want


# -- the effects -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def built():
    game, params = build(ArenaConfig.model_validate(_cfg()))
    layer = next(lyr for lyr in game.layers if isinstance(lyr, K.PluginLayer))
    slot = layer.pact_slot(0, game.init(params).extra["governance"].pacts.n_slots)
    pp = params.extra[K.NAME][0]
    begin = jax.jit(lambda s, t: G.begin(game, t, s, pp, s.extra[K.NAME][0], slot))
    return game, params, slot, begin


ACTION = st.fixed_dictionaries(
    {
        "cap": st.sampled_from([None, -1.0, 0.0, 0.75, 2.5, math.inf]),
        "ladder_scale": st.sampled_from([None, -1.0, 0.0, 0.5, 3.0, math.inf]),
        "regen": st.sampled_from([None, -0.1, 0.0, 0.05, 0.3, math.inf]),
    }
)


@settings(max_examples=40, deadline=None)
@given(actions=st.lists(ACTION, min_size=1, max_size=3))
def test_effects_match_reference(built, actions):
    """A sequence of actions (valid or not) through the plugin's begin hook, the one
    apply function: the regulator's pact slot, the ladder scale, the regen rate and the
    memory follow the reference."""
    game, params, slot, begin = built
    state = game.init(params)
    assert slot == state.extra["governance"].pacts.n_slots - 1
    r0 = float(state.extra["perturb"]["engine"]["regen_rate"])
    mem = {"cap": None, "scale": 1.0, "regen": None, "last": None}
    for t, a in enumerate(actions, start=2):
        state = G.set_pending(state, 0, G.GovAction(*(jnp.nan if a[k] is None else a[k] for k in G.GovAction._fields)))
        state, memory, applied = begin(state, jnp.int32(t))
        state = dataclasses.replace(state, extra={**state.extra, K.NAME: (memory,)})
        mem = R.governance_agent_apply(a, mem, t)
        pk = state.extra["governance"].pacts
        if mem["cap"] is None:
            assert int(pk.status[slot]) in (P.INACTIVE,)
        else:
            assert int(pk.status[slot]) == P.ACTIVE and float(pk.max_harvest[slot]) == np.float32(mem["cap"])
            assert pk.parties[slot].all() and int(pk.proposer[slot]) == -1
        assert float(state.extra["governance"].scale) == np.float32(mem["scale"])
        want_r = r0 if mem["regen"] is None else mem["regen"]
        assert float(state.extra["perturb"]["engine"]["regen_rate"]) == np.float32(want_r)
        assert _none(float(memory["cap"])) == (None if mem["cap"] is None else np.float32(mem["cap"]))
        assert int(memory["last"]) == (G.NEVER if mem["last"] is None else mem["last"])
        assert np.isnan(np.asarray(memory["pending"])).all()  # cleared after use
        for k in G.GovAction._fields:  # the record: what applied
            x = a[k]
            valid = x is not None and (x > 0 if k == "cap" else math.isfinite(x) and x >= 0)
            assert (_none(float(getattr(applied, k))) is not None) == valid


# -- a whole run -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def run3():
    return bdpd_jax.simulate(_cfg(), n_arenas=3, seed=4)


def test_a_whole_run_follows_the_rule(run3):
    """From each turn's frame (cooperation_index, stock / K), the reference rule gives the
    actions applied next turn; the regulator's pact binds everyone from then (violations of
    its slot are exactly the harvests above the cap) and the ladder amounts are scaled."""
    res = run3
    tu, pl, acts, viol, sanc = res.turns, res.players, res.governance_actions, res.violations, res.sanctions
    p = _ref_params(AGENT)
    k = SEED_LOGISTIC["model"]["commonsCapacity"]
    assert set(acts.action) == {"cap", "ladder_scale", "regen"}
    assert np.isinf(acts.value).any() and (acts[acts.action == "ladder_scale"].value.diff() < 0).any()  # lifts, loosens
    slot = 1  # one player slot (no pre-declared pact), then the regulator's
    for arena in range(3):
        t_a = tu[tu.arena == arena].set_index("turn")
        mem = {"cap": None, "scale": 1.0, "regen": None, "last": None}
        prior: dict = {}
        for turn in t_a.index:
            rows = acts[(acts.arena == arena) & (acts.turn == turn)]
            got = {r.action: r.value for r in rows.itertuples()}
            if turn > 1:
                prev = t_a.loc[turn - 1]
                want = R.governance_agent_rule(
                    _none(float(prev.cooperation_index)), float(prev.stock) / k, turn - 1, mem, p
                )
                assert got == {a: np.float32(v) for a, v in want.items() if v is not None}, (arena, turn)
                mem = R.governance_agent_apply(want, mem, turn)
            else:
                assert got == {}
            g = pl[(pl.arena == arena) & (pl.turn == turn)].sort_values("player")
            v = viol[(viol.arena == arena) & (viol.turn == turn) & (viol.pact == slot)]
            over = [] if mem["cap"] is None else [i for i, a in enumerate(g.actual) if a > mem["cap"] + 1e-6]
            assert sorted(v.player) == over
            s = sanc[(sanc.arena == arena) & (sanc.turn == turn)].sort_values("player")
            for i in over:
                prior[i] = prior.get(i, 0) + 1
            want_amounts = [R.ladder_amount(LADDER, prior[i]) * mem["scale"] for i in over]
            np.testing.assert_allclose(s.amount.to_numpy(float), want_amounts, rtol=1e-6)


def _loop(agent, seed, arena, turns, pending=None):
    """One arena turn by turn through the jitted one-arena ``play`` (no batch axis): its
    wealths and the actions applied; ``pending``: actions written by ``set_pending`` before
    each turn (the live host's path)."""
    game, params = build(ArenaConfig.model_validate(_cfg(agent, turns=turns)))
    step = _STEPS.setdefault(repr(agent), jax.jit(lambda k, s: play(game, k, s, params)))
    key = arena_keys(seed, np.arange(arena, arena + 1))[..., 0]
    state, out = game.init(params), []
    for t in range(turns):
        if pending is not None:
            state = G.set_pending(state, 0, pending[t])
        state, rec = step(key, state)
        out.append((np.asarray(state.wealth), rec.extra[K.NAME]["begin"]["actions"][0]))
    return out


_STEPS: dict = {}


def test_batch_equals_single_arenas(run3):
    """Each arena of the batched run equals that arena alone, turn by turn through ``play``."""
    pl, acts = run3.players, run3.governance_actions
    for i in range(3):
        out = _loop(AGENT, 4, i, 12)
        w = pl[pl.arena == i].wealth.to_numpy().reshape(-1, N)
        np.testing.assert_allclose(np.stack([o[0] for o in out]), w, rtol=1e-6, atol=1e-6)
        a = acts[acts.arena == i]
        got = [
            (t + 1, f, np.float32(v))
            for t, (_, act) in enumerate(out)
            for f, v in zip(G.GovAction._fields, act, strict=True)
            if not np.isnan(v)
        ]
        assert got == list(zip(a.turn, a.action, a.value.astype(np.float32), strict=True))


def test_external_mode_through_set_pending_equals_the_builtin_rule():
    """The live host's path: an ``external`` agent fed, between turns, the actions the
    built-in rule applied gives the same arena bit for bit (one apply function)."""
    builtin = _loop(AGENT, 4, 0, 12)
    assert any(not np.isnan(np.asarray(a)).all() for _, a in builtin)
    external = _loop({**AGENT, "external": True}, 4, 0, 12, pending=[a for _, a in builtin])
    for (w0, a0), (w1, a1) in zip(builtin, external, strict=True):
        np.testing.assert_array_equal(w0, w1)
        np.testing.assert_array_equal(np.asarray(a0), np.asarray(a1))


def test_regen_mandate_is_the_registrys_regen_set():
    """A regulator that always acts (stock_below above any ratio), with only a regen
    mandate, fires once at the end of turn 1: the same arena as a ``regen_set`` scheduled at
    turn 2. The regulator's run has ``run3``'s shapes (12 turns, 3 arenas, the ladder): its
    numbers are params, so it reuses that compiled program."""
    agent = {"type": "governance_agent", "id": "ga", "stock_below": 10.0, "regen": 0.05}
    a = bdpd_jax.simulate(_cfg(agent), n_arenas=3, seed=3)
    cfg = _cfg(None)
    cfg["perturbations"].append(
        {"id": "r", "type": "regen_set", "trigger": {"kind": "turn", "turn": 2}, "payload": {"value": 0.05}}
    )
    b = bdpd_jax.simulate(cfg, n_arenas=3, seed=3)
    acts = a.governance_actions
    assert list(zip(acts.arena, acts.turn, acts.action, acts.value, strict=True)) == [
        (i, 2, "regen", np.float32(0.05)) for i in range(3)
    ]
    for col in ("stock", "regen"):
        np.testing.assert_allclose(a.turns[col].to_numpy(), b.turns[col].to_numpy(), rtol=1e-6)
    np.testing.assert_allclose(a.players.wealth.to_numpy(), b.players.wealth.to_numpy(), rtol=1e-6)


def test_agent_numbers_sweep_in_one_compile():
    from bdpd_jax.run import simulate as sim

    before = sim.TRACES["run"]
    sw = bdpd_jax.sweep(
        _cfg(turns=5),
        grid={
            "plugins[ga].cap": [0.8, 2.0],
            "plugins[ga].coop_below": [0.2, 0.9],
            "plugins[ga].regen": [0.05, 0.3],
            "plugins[ga].cooldown": [1, 3],
        },
        replicates=2,
    )
    assert sim.TRACES["run"] - before == 1 and len(sw.points) == 16


def test_config_errors_name_the_field():
    for agent, needle in (
        ({**AGENT, "coop_below": 1.5}, r"plugins\[0\].coop_below"),
        ({**AGENT, "cap": 0}, r"plugins\[0\].cap"),
        ({**AGENT, "loosen": 2}, r"plugins\[0\].loosen"),
        ({**AGENT, "cooldown": -1}, r"plugins\[0\].cooldown"),
        ({**AGENT, "bogus": 1}, r"plugins\[0\].bogus"),
    ):
        with pytest.raises(ValueError, match=needle):
            ArenaConfig.model_validate(_cfg(agent))
    seneca = copy.deepcopy(SEED_SENECA)
    seneca["players"] = copy.deepcopy(MIXED_PLAYERS)
    seneca["plugins"] = [{"type": "governance_agent", "id": "ga", "regen": 0.1}]
    with pytest.raises(ValueError, match=r"plugins\[0\].regen"):
        ArenaConfig.model_validate(seneca)


# -- a plugin registered here mandates through the same effect record --------------------------
def _warden_act(game, view, pp, memory):
    n = game.n_players
    z = jnp.zeros((n, n), view.wealth.dtype)
    return K.Effects(z, z, jnp.zeros((n,), jnp.int32)), memory


def _warden_begin(game, turn, state, pp, memory, slot):
    """At the start of turn 3: a harvest cap on everyone, binding from then on."""
    nan = jnp.full((), jnp.nan, state.wealth.dtype)
    state, applied = G.apply_action(game, state, G.GovAction(jnp.where(turn == 3, pp, nan), nan, nan), slot, turn)
    return state, memory, applied


class WardenSpec(PluginSpec):
    type: Literal["warden"]
    cap: float

    def params(self, config):
        return jnp.float32(self.cap)


def test_a_plugin_registered_here_mandates_a_cap_for_all():
    if "warden" not in K.plugin_names():
        register_plugin("warden", _warden_act, WardenSpec, begin=_warden_begin, reserves_pact=True)
    cfg = _cfg(None, turns=5, ladder=False)
    cfg["plugins"] = [{"type": "warden", "id": "w", "cap": 1.0}]
    res = bdpd_jax.simulate(cfg, n_arenas=1, seed=2)
    a = res.governance_actions
    assert list(zip(a.turn, a.id, a.action, a.value, strict=True)) == [(3, "w", "cap", 1.0)]
    v, pl = res.violations, res.players
    want = sorted((t, i) for t, i, x in zip(pl.turn, pl.player, pl.actual, strict=True) if t >= 3 and x > 1.0 + 1e-6)
    assert want and sorted(zip(v.turn, v.player, strict=True)) == want and set(v.pact) == {1}
