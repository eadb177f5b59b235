"""Governance kernels against the plain-Python reference (tests/reference_governance.py),
the seed's own examples, frames and config errors."""

from __future__ import annotations

import copy
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import reference_governance as R
from hypothesis import given
from hypothesis import strategies as st
from payloads import propose_many_args

from bdpd_jax.config.game import ArenaConfig
from bdpd_jax.kernels import pacts as P
from bdpd_jax.kernels import sanctions as S
from bdpd_jax.kernels.metrics import METRICS, governance_metrics
from bdpd_jax.run.simulate import simulate

N, SLOTS, WIDTH = 4, 4, 4
STATUS = {0: None, 1: "proposed", 2: "active", 3: "rejected"}

_propose = jax.jit(P.propose)
_pledge = jax.jit(P.pledge)
_accept = jax.jit(P.accept)
_reject = jax.jit(P.reject)
_check = jax.jit(P.check)


@jax.jit
def _end_of_turn(pk, prior, actual, sp):
    pk, violated = P.check(pk, actual, jnp.ones((N,), bool))
    k, after = S.ordinals(prior, violated, pk.term, len(P.PACT_TERM_TYPES))
    count = S.counts(violated, pk.term, len(P.PACT_TERM_TYPES))
    amount, fired, _ = S.amounts(sp, prior, count)
    return pk, after, violated, k, amount, fired, prior + S.table(count)


def sanction_params(specs, k: int = 2):
    """The specs as K = ``k`` slots, the ones past them inactive (one shape: one program)."""
    lad = np.zeros((k, WIDTH))
    for j, s in enumerate(specs):
        lad[j, : len(s["ladder"])] = s["ladder"]
    term = [S.ANY_TERM if s["termType"] is None else P.term_code(s["termType"]) for s in specs]
    pad = k - len(specs)
    return S.SanctionParams(
        jnp.asarray([True] * len(specs) + [False] * pad),
        jnp.asarray(term + [S.ANY_TERM] * pad, jnp.int32),
        jnp.asarray(lad, jnp.float32),
        jnp.asarray([len(s["ladder"]) for s in specs] + [1] * pad, jnp.int32),
    )


# ---------------------------------------------------------------- the seed's own examples
def test_harvest_equal_to_cap_is_no_breach():
    pk, _ = _pledge(P.empty(SLOTS, N), 0, 2.5, 1)
    for a, breach in ((2.5, False), (2.5 + 1e-7, False), (2.501, True)):
        _, v = _check(pk, jnp.asarray([a, 9.0, 9.0, 9.0]), jnp.ones((N,), bool))
        assert bool(v[0, 0]) is breach and not bool(v[0, 1:].any())


def test_fourth_violation_on_ladder_costs_10():
    sp = sanction_params([{"termType": "harvest_cap", "ladder": [1, 3, 10]}])
    pk, _ = _pledge(P.empty(SLOTS, N), 1, 1.0, 1)
    prior = jnp.zeros((2, N), jnp.int32)
    costs = []
    for _ in range(5):
        pk, prior, _, k, amount, _, _ = _end_of_turn(pk, prior, jnp.asarray([0.0, 2.0, 0.0, 0.0]), sp)
        costs.append(float(amount[1]))
    assert costs == [1.0, 3.0, 10.0, 10.0, 10.0]
    assert int(pk.violation_count[0]) == 5


def test_rejected_pact_binds_no_one():
    pk, slot = _propose(P.empty(SLOTS, N), 0, jnp.asarray([True, True, False, False]), P.HARVEST_CAP, 1.0, 0.0, 1)
    assert int(pk.status[slot]) == P.PROPOSED
    pk = _reject(pk, slot, 1)
    pk = _accept(pk, slot, 1, 2)  # too late: rejected is terminal
    assert int(pk.status[slot]) == P.REJECTED
    _, v = _check(pk, jnp.full((N,), 50.0), jnp.ones((N,), bool))
    assert not bool(v.any())


def test_pledge_is_active_at_once_and_proposals_activate_on_last_acceptance():
    pk, s0 = _pledge(P.empty(SLOTS, N), 2, 3.0, 4)
    assert int(pk.status[s0]) == P.ACTIVE and int(pk.accepted_turn[s0]) == 4
    pk, s1 = _propose(pk, 0, jnp.asarray([False, True, True, False]), P.NO_AGGRESSION, 0.0, 0.1, 5)
    assert bool(pk.parties[s1, 0])  # the proposer is a party
    pk = _accept(pk, s1, 1, 6)
    assert int(pk.status[s1]) == P.PROPOSED
    pk = _accept(pk, s1, 2, 7)
    assert int(pk.status[s1]) == P.ACTIVE and int(pk.accepted_turn[s1]) == 7


def test_full_table_and_invalid_terms_are_flagged_never_silent():
    pk = P.empty(SLOTS, N)
    for i in range(SLOTS + 1):
        pk, slot = _pledge(pk, i % N, 1.0, 1)
    assert int(slot) == -1 and int(pk.dropped) == 1
    pk, slot = _propose(P.empty(SLOTS, N), 0, jnp.ones((N,), bool), P.HARVEST_CAP, 0.0, 0.0, 1)
    pk, slot2 = _propose(pk, 0, jnp.ones((N,), bool), P.NO_AGGRESSION, 0.0, -0.1, 1)
    assert int(slot) == -1 and int(slot2) == -1 and int(pk.invalid) == 2 and int((pk.status != 0).sum()) == 0


# ---------------------------------------------------------------- kernels == reference
grid = st.integers(0, 320).map(lambda k: k / 64)  # dyadic: exact in float32
caps_st = st.integers(1, 24).map(lambda k: k / 4)
player = st.integers(0, N - 1)
op = st.one_of(
    st.tuples(
        st.just("propose"),
        player,
        st.sets(player, max_size=N),
        st.sampled_from(R.TERM_TYPES),
        caps_st,
        st.integers(-1, 4).map(lambda k: k / 8),
    ),
    st.tuples(st.just("pledge"), player, caps_st),
    st.tuples(st.just("accept"), st.integers(0, SLOTS - 1), player),
    st.tuples(st.just("reject"), st.integers(0, SLOTS - 1), player),
)
turn_st = st.tuples(st.lists(op, max_size=3), st.lists(grid, min_size=N, max_size=N))
spec_st = st.lists(
    st.fixed_dictionaries(
        {
            "termType": st.sampled_from([None, *R.TERM_TYPES]),
            "ladder": st.lists(st.integers(0, 40).map(lambda k: k / 4), min_size=1, max_size=WIDTH),
        }
    ),
    min_size=1,
    max_size=2,
)


@given(turns=st.lists(turn_st, min_size=1, max_size=6), specs=spec_st)
def test_pacts_checkers_and_ladders_match_reference(turns, specs):
    ref = R.RefRegistry(SLOTS)
    pk = P.empty(SLOTS, N)
    prior = jnp.zeros((2, N), jnp.int32)
    sp = sanction_params(specs)
    for t, (ops, actual) in enumerate(turns, start=1):
        # near-cap harvests: snap some to the caps in force
        caps = [p["terms"].get("maxHarvest") for p in ref.pacts if p["terms"]["type"] == "harvest_cap"]
        actual = [caps[i % len(caps)] if caps and i % 2 == 0 else a for i, a in enumerate(actual)]
        for o in ops:
            if o[0] == "propose":
                _, who, parties, term, mh, tol = o
                terms = {"type": term, "maxHarvest": mh if term == "harvest_cap" else 0.0, "tolerance": tol}
                if term == "harvest_cap":
                    terms["tolerance"] = 0.0
                ref.propose(who, parties, terms, t)
                mask = jnp.asarray([i in parties for i in range(N)])
                pk, _ = _propose(pk, who, mask, P.term_code(term), terms["maxHarvest"], terms["tolerance"], t)
            elif o[0] == "pledge":
                ref.pledge(o[1], o[2], t)
                pk, _ = _pledge(pk, o[1], o[2], t)
            elif o[0] == "accept":
                ref.accept(o[1] if o[1] < len(ref.pacts) else None, o[2], t)
                pk = _accept(pk, o[1], o[2], t)
            else:
                ref.reject(o[1] if o[1] < len(ref.pacts) else None, o[2])
                pk = _reject(pk, o[1], o[2])
        events = ref.check_violations(actual, [True] * N)
        ref_amount, _ = R.sanctions(specs, events, N)
        pk, prior, violated, k, amount, fired, counted = _end_of_turn(pk, prior, jnp.asarray(actual, jnp.float32), sp)
        np.testing.assert_array_equal(np.asarray(counted), np.asarray(prior))  # per-term counts == the ordinals' tally
        got = sorted((int(n), int(p), int(k[p, n])) for p, n in zip(*np.nonzero(np.asarray(violated)), strict=True))
        want = sorted((e["partyId"], e["pactId"], e["ordinal"]) for e in events)
        assert got == want
        np.testing.assert_allclose(np.asarray(amount), ref_amount, rtol=1e-6)
        assert int(fired.sum()) == sum(1 for e in events for s in specs if s["termType"] in (None, e["termType"]))
        assert [STATUS[int(s)] for s in pk.status[: len(ref.pacts)]] == [p["status"] for p in ref.pacts]
        assert [int(c) for c in pk.violation_count[: len(ref.pacts)]] == [p["violationCount"] for p in ref.pacts]
        assert int(pk.dropped) == ref.dropped and int(pk.invalid) == ref.invalid


_propose_many = jax.jit(P.propose_many)

request = st.tuples(
    player,
    st.sets(player, max_size=N),
    st.sampled_from(R.TERM_TYPES),
    st.integers(-1, 12).map(lambda k: k / 4),
    st.integers(-1, 4).map(lambda k: k / 8),
    st.booleans(),
)


@given(filled=st.lists(st.tuples(player, caps_st), max_size=SLOTS), reqs=st.lists(request, min_size=1, max_size=5))
def test_propose_many_equals_one_proposal_after_another(filled, reqs):
    """The one-step store of a turn's proposals (the r-th stored takes the r-th empty slot)
    gives the table, slots and counters of ``propose`` called once per proposal, in order,
    on a table already holding pledges (full tables and invalid terms included)."""
    pk = P.empty(SLOTS, N)
    for who, cap in filled:
        pk, _ = _pledge(pk, who, cap, 1)
    reqs = reqs + [(0, set(), "harvest_cap", 1.0, 0.0, False)] * (5 - len(reqs))  # one shape: one trace
    chain, want = pk, []
    for who, parties, term, mh, tol, when in reqs:
        mask = jnp.asarray([i in parties for i in range(N)])
        chain, slot = _propose(chain, who, mask, P.term_code(term), mh, tol, 2, when)
        want.append(int(slot))
    got, slots = _propose_many(*propose_many_args(pk, reqs, 2))
    assert [int(x) for x in slots] == want
    for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(chain), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


_ladder_sum = jax.jit(S.ladder_sum)


@given(
    ladder=st.lists(st.integers(0, 40).map(lambda k: k / 4), min_size=1, max_size=WIDTH),
    before=st.integers(0, 12),
    m=st.integers(0, 6),
)
def test_ladder_sum_equals_rung_by_rung(ladder, before, m):
    """m violations after ``before`` earlier ones cost ladder[min(k - 1, len - 1)] each, for
    k = before + 1 ... before + m (the last rung sticks), summed exactly for dyadic rungs."""
    padded = jnp.asarray(ladder + [99.0] * (WIDTH - len(ladder)), jnp.float32)  # padding never charged
    got = _ladder_sum(padded, jnp.int32(len(ladder)), jnp.asarray([before]), jnp.asarray([m]))
    want = sum(R.ladder_amount(ladder, k) for k in range(before + 1, before + m + 1))
    assert float(got[0]) == want


_metrics = jax.jit(governance_metrics)


@given(
    actual=st.lists(grid, min_size=N, max_size=N),
    announced=st.lists(st.one_of(st.none(), grid), min_size=N, max_size=N),
    regen=st.integers(0, 80).map(lambda k: k / 16),
    sanctioned=st.integers(0, N),
)
def test_metrics_match_reference(actual, announced, regen, sanctioned):
    want = R.metrics(actual, announced, sanctioned, regen)
    ann = jnp.asarray([math.nan if a is None else a for a in announced], jnp.float32)
    got = _metrics(
        jnp.asarray(actual, jnp.float32), ann, jnp.float32(sanctioned), jnp.float32(regen), jnp.ones((N,), bool)
    )
    for name in METRICS:
        if want[name] is None:
            assert math.isnan(float(got[name])), name
        else:
            assert float(got[name]) == pytest.approx(want[name], rel=1e-5, abs=1e-6), name
    for name in ("cooperation_index", "announce_frequency", "silent_defection", "sanction_rate"):
        assert 0.0 <= float(got[name]) <= 1.0


# ---------------------------------------------------------------- whole runs
GOV_PLAYERS = [
    {"strategy": "aggressive", "talk": {"announce": "biased", "bias": 0.5}},
    {
        "strategy": "conservative",
        "talk": {"announce": "honest", "comply": True, "pledge": {"turn": 1, "maxHarvest": 2}},
    },
    {"strategy": "aggressive"},
    {
        "strategy": "random",
        "talk": {"propose": {"turn": 2, "parties": [0, 1, 2, 3], "terms": {"type": "no_aggression", "tolerance": 0.1}}},
    },
]
GOV_SPECS = [
    {
        "id": "g",
        "type": "sanction_graduated",
        "trigger": {"kind": "pact_violation", "termType": "harvest_cap"},
        "payload": {"ladder": [1, 3, 10]},
    },
    {"id": "s", "type": "sanction", "trigger": {"kind": "pact_violation"}, "payload": {"amount": 0.5}},
]


@pytest.fixture(scope="module")
def gov_run():
    from payloads import SEED_LOGISTIC

    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["players"] = copy.deepcopy(GOV_PLAYERS)
    cfg["pacts"] = [{"parties": [0, 2], "terms": {"type": "harvest_cap", "maxHarvest": 3}}]
    cfg["perturbations"] = copy.deepcopy(GOV_SPECS)
    return simulate(cfg, n_arenas=8, seed=3)


def test_metric_columns_recomputed_from_players_agree(gov_run):
    turns, players = gov_run.turns, gov_run.players
    assert turns["sanction_rate"].max() > 0 and players["announced"].notna().any()
    for (arena, turn), g in players.groupby(["arena", "turn"]):
        row = turns[(turns.arena == arena) & (turns.turn == turn)].iloc[0]
        ann = [None if math.isnan(a) else a for a in g["announced"]]
        # a collapse turn before the dynamics ran: regen 0 and not measured, no share
        measured = not (row["collapsed"] and row["regen"] == 0)
        want = R.metrics(list(g["actual"]), ann, int((g["sanction"] > 0).sum()), float(row["regen"]), measured)
        for name in METRICS:
            if want[name] is None:
                assert math.isnan(row[name])
            else:
                assert row[name] == pytest.approx(want[name], rel=1e-4, abs=1e-5), (name, arena, turn)
    frac = turns[["cooperation_index", "announce_frequency", "silent_defection", "sanction_rate"]]
    assert ((frac >= 0) & (frac <= 1) | (frac.isna() & turns.collapsed.to_numpy()[:, None])).all().all()


def test_announcements_rounded_and_biased(gov_run):
    p = gov_run.players
    a0 = p[p.player == 0]
    np.testing.assert_allclose(a0["announced"], np.round(a0["requested"] * 0.5, 3), atol=1.5e-3)
    assert np.allclose(a0["announced"] * 1000, np.round(a0["announced"] * 1000), atol=1e-2)
    assert p[p.player == 2]["announced"].isna().all()
    assert (p[p.player == 1]["requested"] <= 2 + 1e-6).all()  # complies with its pledge


def test_sanctions_deducted_and_violations_frame(gov_run):
    p, v = gov_run.players, gov_run.extra["violations"]
    assert len(v) > 0 and set(v.term_type) <= set(P.PACT_TERM_TYPES)
    # wealth_t = wealth_{t-1} + actual - sanction
    for _, g in p.groupby(["arena", "player"]):
        w = g["wealth"].to_numpy()
        np.testing.assert_allclose(w[1:], w[:-1] + g["actual"].to_numpy()[1:] - g["sanction"].to_numpy()[1:], rtol=1e-5)
    per_turn = v.groupby(["arena", "turn"]).size()
    t = gov_run.turns.set_index(["arena", "turn"])
    assert (t.loc[per_turn.index, "violations"] == per_turn).all()


def test_govsim_summary_columns(gov_run):
    s = gov_run.summary
    for c in ("survival_time", "total_gain", "efficiency", "equality", "ex_post_over_usage"):
        assert c in s
    assert ((s.equality >= 0) & (s.equality <= 1)).all() and (
        (s.ex_post_over_usage >= 0) & (s.ex_post_over_usage <= 1)
    ).all()
    gains = gov_run.players.groupby("arena")["actual"].sum()
    np.testing.assert_allclose(s.set_index("arena").total_gain.loc[gains.index], gains, rtol=1e-4)
    # ex_post_over_usage: decisions over the share, over the turns that had one (not a collapse turn
    # where the dynamics did not run: cooperation_index null there)
    t, p = gov_run.turns, gov_run.players
    m = p.merge(t[["arena", "turn", "regen", "cooperation_index"]], on=["arena", "turn"])
    m = m[m.cooperation_index.notna()]
    want = (m.actual > m.regen / 4 + 1e-6).groupby(m.arena).mean()
    np.testing.assert_allclose(s.set_index("arena").ex_post_over_usage.loc[want.index], want, rtol=1e-5)


def test_sweep_tolerance_ladder_regen_compiles_once():
    from payloads import SEED_LOGISTIC

    from bdpd_jax.prepare.game import build
    from bdpd_jax.prepare.governance import stack_batch
    from bdpd_jax.run import simulate as sim

    cells = []
    for tol in (0.0, 0.2):
        for ladder in ([1.0], [1.0, 3.0, 10.0], [2.0, 2.0, 5.0, 20.0]):
            for r in (0.08, 0.16):
                cfg = copy.deepcopy(SEED_LOGISTIC)
                cfg["model"]["regenRate"] = r
                cfg["players"] = [
                    {"strategy": s, "talk": {"announce": "honest"}}
                    for s in ("aggressive", "conservative", "random", "adaptive")
                ]
                cfg["pacts"] = [{"parties": [0, 1, 2, 3], "terms": {"type": "no_aggression", "tolerance": tol}}]
                cfg["perturbations"] = [
                    {
                        "id": "g",
                        "type": "sanction_graduated",
                        "trigger": {"kind": "pact_violation"},
                        "payload": {"ladder": ladder},
                    }
                ]
                cells.append(build(ArenaConfig.model_validate(cfg), governance={"pact_slots": 2, "ladder_width": 4}))
    games = {g for g, _ in cells}
    assert len(games) == 1
    game = games.pop()
    params = stack_batch([p for _, p in cells], repeat=4)
    before = sim.TRACES["run"]
    b = params.max_turns.shape[-1]
    keys = sim.arena_keys(0, np.arange(b))
    state, _ = sim.run_batch(game, params, keys, 30, 10, False)
    assert sim.TRACES["run"] - before <= 1
    state, _ = sim.run_batch(game, params, keys, 30, 10, False)
    assert sim.TRACES["run"] - before <= 1
    wealth = np.asarray(state.wealth)
    assert np.isfinite(wealth).all()


def test_config_errors_name_field_and_value():
    bad = [
        (
            {
                "perturbations": [
                    {
                        "id": "a",
                        "type": "sanction_graduated",
                        "trigger": {"kind": "pact_violation"},
                        "payload": {"ladder": []},
                    }
                ]
            },
            "perturbations[0].payload.ladder",
        ),
        (
            {
                "perturbations": [
                    {
                        "id": "a",
                        "type": "sanction",
                        "trigger": {"kind": "pact_violation", "termType": "x"},
                        "payload": {"amount": 1},
                    }
                ]
            },
            "termType",
        ),
        ({"perturbations": [{"id": "a", "type": "nope"}]}, "perturbations[0].type"),
        (
            {"pacts": [{"parties": [0, 9], "terms": {"type": "harvest_cap", "maxHarvest": 1}}], "players": [{}, {}]},
            "pacts[0].parties[1]",
        ),
        ({"pacts": [{"parties": [0], "terms": {"type": "harvest_cap", "maxHarvest": 0}}]}, "terms.maxHarvest"),
        ({"pacts": [{"parties": [0], "terms": {"type": "no_aggression", "tolerance": -1}}]}, "terms.tolerance"),
        ({"players": [{"talk": {"announce": "loud"}}, {}]}, "announce"),
    ]
    for cfg, field in bad:
        with pytest.raises(ValueError, match=field.replace("[", r"\[").replace("]", r"\]")):
            ArenaConfig.model_validate(cfg)


def test_plain_game_unchanged_by_governance_code():
    from payloads import MIXED_PLAYERS, SEED_LOGISTIC

    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["players"] = copy.deepcopy(MIXED_PLAYERS)
    plain = simulate(cfg, n_arenas=4, seed=5)
    cfg2 = copy.deepcopy(cfg)
    cfg2["perturbations"] = [
        {"id": "s", "type": "sanction", "trigger": {"kind": "pact_violation"}, "payload": {"amount": 1}}
    ]
    gov = simulate(cfg2, n_arenas=4, seed=5)  # layer on, but no pact: nothing may change
    np.testing.assert_array_equal(plain.players["actual"].to_numpy(), gov.players["actual"].to_numpy())
    assert plain.turns["announce_frequency"].eq(0).all() and plain.turns["lie_score"].isna().all()


def test_scripted_writes_skipped_batchwide_are_exact(monkeypatch):
    """The rollout skips the scripted pact writes on turns when no arena of the batch has a
    pledge, proposal or pending answer (kernels/rollout.py). Arenas whose scripts fire on
    different turns, batched together, equal each arena run alone and the path that never
    skips, field for field. An arena runs alone as a batch of copies of itself (no other
    arena's script in its batch): the batch's program, not one more compile at width 1
    (widths are tested apart, tests/test_batch.py); the copies are cut in numpy, not by
    eager jax ops that compile each."""
    import dataclasses

    from bdpd_jax.kernels.governance import GovernanceLayer
    from bdpd_jax.prepare.game import broadcast_batch, build
    from bdpd_jax.run.simulate import arena_keys, compiled_init, compiled_run

    cfg = {
        "model": {"maxPlayers": 4, "minPlayers": 4, "maxTurns": 8},
        "players": [{"strategy": s} for s in ("aggressive", "conservative", "adaptive", "random")],
    }
    cfg["players"][1]["talk"] = {"comply": True, "pledge": {"turn": 3, "maxHarvest": 1.5}}
    cfg["players"][2]["talk"] = {"accept": "min_cap", "acceptMinCap": 1.0}
    cfg["players"][3]["talk"] = {
        "propose": {"turn": 2, "parties": [0, 1, 2, 3], "terms": {"type": "harvest_cap", "maxHarvest": 2.0}}
    }
    cfg["perturbations"] = [
        {
            "id": "g",
            "type": "sanction_graduated",
            "trigger": {"kind": "pact_violation"},
            "payload": {"ladder": [1, 3, 10]},
        }
    ]
    game, params = build(ArenaConfig.model_validate(cfg))
    b = 3
    pb = broadcast_batch(params, b)
    talk = pb.extra["governance"].talk
    # arena 0 as configured; arena 1 pledges at turn 6 and proposes at 5; arena 2 never does
    talk = dataclasses.replace(
        talk,
        pledge_turn=talk.pledge_turn.at[1].set(jnp.asarray([3, 6, 0])),
        propose_turn=talk.propose_turn.at[3].set(jnp.asarray([2, 5, 0])),
    )
    gp = dataclasses.replace(pb.extra["governance"], talk=talk)
    pb = dataclasses.replace(pb, extra={**pb.extra, "governance": gp})
    keys = arena_keys(0, np.arange(b))

    def run(g, k, p):
        st = compiled_init(g)(k, p)
        return compiled_run(g, 8, True)(k, st, p)

    batched = run(game, keys, pb)
    for i in range(b):
        copies = np.full(b, i)
        one = run(
            game, np.asarray(keys)[:, copies], jax.tree_util.tree_map(lambda x, c=copies: np.asarray(x)[..., c], pb)
        )
        for a, c in zip(jax.tree_util.tree_leaves(batched), jax.tree_util.tree_leaves(one), strict=True):
            np.testing.assert_array_equal(np.asarray(a)[..., i], np.asarray(c)[..., 0])
    # the path that never skips gives the same numbers
    from functools import partial

    from bdpd_jax.kernels.rollout import run_turns

    monkeypatch.setattr(GovernanceLayer, "busy", lambda self, game, turn, state, params: jnp.ones((), bool))
    always = jax.jit(partial(run_turns, game, 8, True))(keys, compiled_init(game)(keys, pb), pb)
    for a, c in zip(jax.tree_util.tree_leaves(batched), jax.tree_util.tree_leaves(always), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(c))
    # and the writes happened: arena 1's pledge is active from turn 6, arena 2 has none
    status = np.asarray(batched[1].extra["governance"]["end"]["status"])  # [T, P, B]
    assert (status[:, :, 2] == P.ACTIVE).sum(axis=1).tolist() == (status[:1, :, 2] == P.ACTIVE).sum(axis=1).tolist() * 8
    assert (status[5, :, 1] == P.ACTIVE).sum() > (status[4, :, 1] == P.ACTIVE).sum()
