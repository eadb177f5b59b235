"""The array form over players and pact slots (kernels/unroll.py) gives the numbers of the
unrolled form, bit for bit: every state and record leaf of whole runs, and the pact-table
writes on their own.

Bit for bit, not to an ulp: the two forms run the same operations on the same values. The
sums over players (demand, rationing) and over slots (violation counts) are one reduction
over the same [N] / [P] vector in both forms; the per-player where-chains become selects of
the same values; the least cap over slots is a min (exact in any order); the counts are
integers; the sanction sums keep their spec order.
"""

from __future__ import annotations

import dataclasses
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from payloads import HEAVY, propose_many_args

import bdpd_jax
from bdpd_jax.config.game import ArenaConfig
from bdpd_jax.kernels import pacts as P
from bdpd_jax.kernels import unroll
from bdpd_jax.kernels.rollout import init_batch, run_turns
from bdpd_jax.prepare.game import broadcast_batch, build
from bdpd_jax.run.simulate import arena_keys

B, T = 3, 8


def _prior_as_array(state):
    g = state.extra.get("governance")
    if g is None or not isinstance(g.prior, tuple):
        return state
    prior = np.stack([np.stack([np.asarray(x) for x in row]) for row in g.prior])
    return dataclasses.replace(state, extra={**state.extra, "governance": dataclasses.replace(g, prior=prior)})


def _run(config: dict, unrolled: bool, governance: dict | None = None):
    """(final state, records) of T turns of B arenas, both axes in one form (fresh traces)."""
    game, params = build(ArenaConfig.model_validate(config), governance=governance)
    pb = broadcast_batch(params, B)
    keys = arena_keys(11, np.arange(B))
    with unroll.forced(players=unrolled, slots=unrolled):
        st = jax.jit(partial(init_batch, game))(pb)
        final, recs = jax.device_get(jax.jit(partial(run_turns, game, T, True))(keys, st, pb))
    return _prior_as_array(final), recs


def _assert_same(a, b) -> None:
    la, ta = jax.tree_util.tree_flatten_with_path(a)
    lb, tb = jax.tree_util.tree_flatten_with_path(b)
    assert ta == tb
    for (path, x), (_, y) in zip(la, lb, strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=jax.tree_util.keystr(path))


def _remember(obs, mem, key):  # a user policy with a memory and a key: running mean of the stock seen
    s = jnp.where(jnp.isnan(obs["commonsStock"]), 0.0, obs["commonsStock"])
    n = mem[1] + 1.0
    mean = mem[0] + (s - mem[0]) / n
    return 0.01 * mean * (1.0 + jax.random.uniform(key)), jnp.stack([mean, n])


REMEMBER = bdpd_jax.Policy(_remember, name="remember", memory_size=2)
MIX = ("conservative", "aggressive", "adaptive", "random", "rcp", REMEMBER, "idle")


def plain_value(n: int, scheduler: str, mix: tuple = MIX) -> dict:
    players = [{"strategy": mix[i % len(mix)], "privateResource": 10.0 * i} for i in range(n)]
    return {
        "model": {
            "maxPlayers": n,
            "minPlayers": 1,
            "maxTurns": T,
            "scheduler": scheduler,
            "commonsInitial": 30.0 * n,
            "commonsCapacity": 30.0 * n,
            "regenRate": 0.3,
        },
        "observability": {"commonsStock": {"visible": True, "noise": 0.05}, "othersHarvest": {"visible": True}},
        "players": players,
        # switched strategies: players with several candidates and their memory rows
        "perturbations": [
            {
                "id": "o1",
                "type": "strategy_override",
                "trigger": {"kind": "turn", "turn": 3},
                "payload": {"player": 1, "strategy": "adaptive"},
            },
            {
                "id": "o2",
                "type": "strategy_override",
                "trigger": {"kind": "turn", "turn": 5},
                "payload": {"player": n - 2, "strategy": "random"},
            },
        ],
    }


# (wealth-weighted has no player loop of its own; sequential: its per-player memory rows).
# CI runs every built-in and the Policy under the sequential scheduler (both player loops, one
# case: 11 s on 2 cores against 16 s for the two below); BDPD_HEAVY=1 adds the two below.
SCHEDULERS = [
    ("sequential", 7, MIX),
    ("simultaneous", 7, MIX),
    ("sequential", 4, ("adaptive", REMEMBER, "conservative", "aggressive")),
]


@pytest.mark.heavy
@pytest.mark.parametrize("scheduler, n, mix", SCHEDULERS if HEAVY else SCHEDULERS[:1])
def test_array_form_equals_unrolled_form_bit_for_bit(scheduler, n, mix):
    """Every built-in, a user Policy with memory and key, strategy overrides (several
    candidates per player), under each scheduler: the same state and records."""
    cfg = plain_value(n, scheduler, mix)
    final, recs = _run(cfg, unrolled=True)
    assert np.asarray(recs.played).all() and np.ptp(np.asarray(recs.requested)) > 0
    _assert_same((final, recs), _run(cfg, unrolled=False))


def _governed(n: int) -> dict:
    players = [{"strategy": ("aggressive", "conservative", "adaptive", "random")[i % 4]} for i in range(n)]
    for i, p in enumerate(players):
        talk = [
            {
                "announce": "biased",
                "bias": 0.3,
                "propose": {
                    "turn": 2 + i % 3,
                    "parties": list(range(0, n, 3)),
                    "terms": {"type": "no_aggression", "tolerance": 0.1},
                },
            },
            {"comply": True, "announce": "honest", "pledge": {"turn": 1 + i % 4, "maxHarvest": 1.5}},
            {
                "accept": "min_cap",
                "acceptMinCap": 1.0,
                "propose": {
                    "turn": 3,
                    "parties": [i, (i + 1) % n],
                    "terms": {"type": "harvest_cap", "maxHarvest": 2.0},
                },
            },
            {"accept": "never", "comply": True},
            None,
        ][i % 5]
        if talk is not None:
            p["talk"] = talk
    return {
        "model": {
            "maxPlayers": n,
            "minPlayers": 1,
            "maxTurns": T,
            "commonsCapacity": 40.0 * n,
            "commonsInitial": 40.0 * n,
        },
        "players": players,
        "pacts": [{"parties": [0, 2], "terms": {"type": "harvest_cap", "maxHarvest": 3}}],
        "perturbations": [
            {
                "id": "g",
                "type": "sanction_graduated",
                "trigger": {"kind": "pact_violation", "termType": "harvest_cap"},
                "payload": {"ladder": [1, 3, 10]},
            },
            {"id": "s", "type": "sanction", "trigger": {"kind": "pact_violation"}, "payload": {"amount": 0.5}},
        ],
    }


def test_governance_array_form_equals_unrolled_form():
    """Talk (announcements, pledges, proposals, answers, compliance), a pre-declared pact,
    a ladder and a flat sanction, in a table too small for the 4 pacts the scripts make
    (3 slots: proposals dropped). Violations, sanctions and drops happen; same numbers."""
    cfg = _governed(5)
    final, recs = _run(cfg, unrolled=True, governance={"pact_slots": 3})
    end = recs.extra["governance"]["end"]
    assert np.asarray(end["violated"]).sum() > 0 and np.asarray(recs.sanction).sum() > 0
    assert (np.asarray(end["turn_extra"]["pacts_dropped"])[-1] > 0).all()
    _assert_same((final, recs), _run(cfg, unrolled=False, governance={"pact_slots": 3}))


N, SLOTS = 5, 6
player = st.integers(-1, N)  # -1 and N: invalid proposers
request = st.tuples(
    player,
    st.sets(st.integers(0, N - 1), max_size=N),
    st.sampled_from(P.PACT_TERM_TYPES),
    st.integers(-1, 12).map(lambda k: k / 4),
    st.integers(-1, 4).map(lambda k: k / 8),
    st.booleans(),
)


_PROPOSE = {u: jax.jit(lambda *a: P.propose_many(*a)) for u in (True, False)}  # one trace cache per form


def _propose(unrolled: bool, *args):
    with unroll.forced(players=unrolled, slots=unrolled):
        return _PROPOSE[unrolled](*args)


@given(
    filled=st.lists(st.sampled_from([P.EMPTY, P.PROPOSED, P.ACTIVE, P.REJECTED]), min_size=SLOTS, max_size=SLOTS),
    reqs=st.lists(request, min_size=1, max_size=9),
)
def test_propose_many_array_form_equals_unrolled(filled, reqs):
    """The one-step store in both forms: slots taken, fields written, drops and invalid
    counts, on tables with empty slots anywhere."""
    pk = P.empty(SLOTS, N)
    pk = dataclasses.replace(pk, status=jnp.asarray(filled, jnp.int32))
    reqs = reqs + [(0, set(), "harvest_cap", 1.0, 0.0, False)] * (9 - len(reqs))  # one shape: one trace
    args = propose_many_args(pk, reqs, 4)
    _assert_same(_propose(True, *args), _propose(False, *args))


def test_thresholds_choose_the_form_by_length():
    assert unroll.players(unroll.MAX_PLAYERS) and not unroll.players(unroll.MAX_PLAYERS + 1)
    assert unroll.slots(unroll.MAX_SLOTS) and not unroll.slots(unroll.MAX_SLOTS + 1)
    with unroll.forced(players=False):
        assert not unroll.players(1) and unroll.slots(1)
    with unroll.forced(slots=True):
        assert unroll.slots(10**6) and unroll.players(1)


@given(st.integers(1, 12), st.integers(0, 2**31 - 1), st.booleans())
def test_sort_network_equals_the_library_sort(n, seed, nan):
    """The players' sort (kernels.metrics.sort_players): the unrolled compare-exchange network
    gives the library sort's values exactly, in numpy along the players' axis of [N, B] and
    in jnp per arena; so does the Gini built on it (NaN included)."""
    from bdpd_jax.kernels.metrics import gini, sort_players

    rng = np.random.default_rng(seed)
    w = (rng.random((n, 5)) * 4 - 1).astype(np.float32)
    w[:, 0] = 0.0
    w[rng.integers(n), 1] = 2.0  # ties
    if nan:
        w[rng.integers(n), 2] = np.nan
    clean = slice(3, None) if nan else slice(None)
    got = sort_players(w, 0, np)
    np.testing.assert_array_equal(got[:, clean], np.sort(w, axis=0)[:, clean])
    with unroll.forced(players=False):
        lib = gini(w, 0, np)
    np.testing.assert_array_equal(gini(w, 0, np), lib)
    per_arena = jax.jit(jax.vmap(gini, in_axes=1))
    net = np.asarray(per_arena(jnp.asarray(w)))
    with unroll.forced(players=False):
        sort = np.asarray(jax.jit(jax.vmap(gini, in_axes=1))(jnp.asarray(w)))
    np.testing.assert_array_equal(net, sort)
    np.testing.assert_allclose(net, lib, rtol=1e-6, atol=1e-7)


def test_over_players_is_the_whole_array_op_in_both_forms():
    """unroll.over_players(fn, ...) gives fn's values on the whole arrays, tuple results
    included, whether the players are unrolled or not (kernels.turn.sanitize uses it)."""
    from bdpd_jax.kernels.turn import sanitize

    x = jnp.array([1.5, -2.0, jnp.nan, jnp.inf, 0.0, 3.25], jnp.float32)
    want = (jnp.array([1.5, 0.0, 0.0, 0.0, 0.0, 3.25], jnp.float32), jnp.array([False, True, True, True, False, False]))
    for form in (True, False):
        with unroll.forced(players=form):
            got = jax.jit(sanitize)(x)
            both = unroll.over_players(lambda a, b: (a + b, a * b), x, 2 * x)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
        np.testing.assert_array_equal(both[0], x + 2 * x)
        np.testing.assert_array_equal(both[1], x * (2 * x))
