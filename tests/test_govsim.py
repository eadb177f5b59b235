"""GovSim's commons: the engine, the unit-by-unit allocation and GovSim's metrics against the
plain-Python reference (tests/reference_govsim.py), batched and live; the scenarios."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import reference_govsim as ref
from hypothesis import given, settings
from hypothesis import strategies as st

import bdpd_jax as bj
from bdpd_jax.config.game import ArenaConfig
from bdpd_jax.host.live.arena import Arena
from bdpd_jax.kernels import rng
from bdpd_jax.kernels.actions import Actions
from bdpd_jax.kernels.rollout import batched
from bdpd_jax.kernels.schedule import BLOCK, hand_out
from bdpd_jax.kernels.turn import step
from bdpd_jax.prepare.game import broadcast_batch, build
from bdpd_jax.results.frames import outcome_columns
from bdpd_jax.run.simulate import arena_keys, compiled_final, to_numpy
from bdpd_jax.scenarios import EXPERIMENTS, GOVSIM_SCENARIOS, govsim

N, T, SEED = 5, 12, 7
COLS = (
    "govsim_survival_time",
    "govsim_survived",
    "govsim_total_gain",
    "govsim_gain",
    "govsim_efficiency",
    "govsim_equality",
    "govsim_over_usage",
)
# requests: mostly near the threshold (10), sometimes greedy, so runs both survive and collapse
REQUEST = st.one_of(st.integers(0, 12), st.integers(0, 12), st.integers(0, 40))
SEQUENCES = st.lists(st.lists(REQUEST, min_size=N, max_size=N), min_size=T, max_size=T)


def idle_config() -> dict:
    return govsim("fishery", "default", players=["idle"] * N)


@pytest.fixture(scope="module")
def kernel():
    """One compiled batched step and final-numbers program for the GovSim arena (B = 1)."""
    game, params = build(ArenaConfig.load(idle_config()))
    pb = broadcast_batch(params, 1)
    keys = arena_keys(SEED, np.arange(1))
    init = jax.jit(batched(game.init))
    stp = jax.jit(batched(lambda k, s, a, p: step(game, k, s, a, p)))
    return game, pb, keys, init, stp


def kernel_pick(key) -> ref.Pick:
    """The kernels' choices fed to the reference's unit-by-unit loop: rounds of e = min(BLOCK,
    floor(left)) labels (kernels/schedule.py ``hand_out``), each the floor(u_k m)-th of the m
    players short at the round's start, u_k element k of stream (month, round, UNITS); a label
    whose player was served meanwhile is skipped."""
    fn = jax.jit(lambda t, r: rng.uniform(key, t, r, rng.UNITS, (BLOCK,), "hash"))
    st: dict = {"turn": None}

    def pick(turn: int, open_: list[int], left: int) -> int:
        if st["turn"] != turn:
            st.update(turn=turn, round=0, labels=[])
        while True:
            if not st["labels"]:
                e, m = min(BLOCK, max(1, left)), np.float32(len(open_))
                u = np.asarray(fn(turn, st["round"]), np.float32)[:e]
                st["labels"] = [open_[min(int(np.floor(x * m)), len(open_) - 1)] for x in u]
                st["round"] += 1
            p = st["labels"].pop(0)
            if p in open_:
                return p

    return pick


def check_metrics(got: dict, want: dict) -> None:
    for c in COLS:
        g, w = got[c], want[c]
        if isinstance(w, float) and math.isnan(w):
            assert g is None or math.isnan(g), c
        else:
            assert g == pytest.approx(w, rel=1e-6, abs=1e-9), c


def batched_run(kernel, seq):
    """Play one arena (B = 1) through the batched step, a month per row of ``seq``: the catches
    of the months played and the metric columns."""
    game, pb, keys, init, stp = kernel
    state = init(pb)
    catches = []
    for t in range(len(seq)):
        req = jnp.asarray(np.asarray(seq[t], np.float32)[:, None])
        state, rec = stp(keys, state, Actions(req, jnp.full((N, 1), jnp.nan, jnp.float32)), pb)
        if bool(rec.played[0]):
            catches.append(np.asarray(rec.actual)[:, 0].tolist())
    final = to_numpy(compiled_final(game)(state, pb, float("nan")))
    cols = outcome_columns(final["outcomes"])
    return catches, {c: cols[c][0].item() for c in COLS}


@given(SEQUENCES)
def test_random_whole_unit_sequences_match_the_reference_batched(kernel, seq):
    key = arena_keys(SEED, np.arange(1))[:, 0]
    trace = ref.run(seq, pick=kernel_pick(key))
    catches, got = batched_run(kernel, seq)
    assert catches == [[float(x) for x in c] for c in trace["catches"]]
    check_metrics(got, ref.metrics(trace, T, N, 50.0))


@settings(max_examples=3)
@given(SEQUENCES)
def test_random_whole_unit_sequences_match_the_reference_live(seq):
    key = rng.arena_key(SEED, 0)
    trace = ref.run(seq, pick=kernel_pick(key))
    cfg = govsim("fishery", "default", players=[])
    arena = Arena(cfg, seed=SEED)
    for k in range(N):
        arena.join({"agentType": "scripted", "name": f"x{k}", "script": [{"harvest": seq[t][k]} for t in range(T)]})
    arena.run()
    live = [[d["actual"] for d in r["decisions"]] for r in arena.records]
    assert live == [[float(x) for x in c] for c in trace["catches"]]
    check_metrics(arena.summary()["govsim"], ref.metrics(trace, T, N, 50.0))


def test_reference_cases_of_the_issue(kernel):
    """The issue's cases: a month-1 collapse is 100 % over-usage; one defector at 3x the
    threshold is 0.2; one agent taking 9 and the others 0 is 0."""
    key = arena_keys(SEED, np.arange(1))[:, 0]
    cases = [([[20] * N] * T, 1.0), ([[30] + [10] * (N - 1)] * T, None), ([[9] + [0] * (N - 1)] * T, 0.0)]
    for seq, want in cases:
        trace = ref.run(seq, pick=kernel_pick(key))
        _, got = batched_run(kernel, seq)
        m = ref.metrics(trace, T, N, 50.0)
        check_metrics(got, m)
        if want is not None:
            assert got["govsim_over_usage"] == want
    _, got = batched_run(kernel, [[20] * N] * T)
    assert (got["govsim_survival_time"], got["govsim_gain"], got["govsim_efficiency"]) == (
        1,
        20.0,
        pytest.approx(100 / 600),
    )


def test_allocation_distribution_over_many_arenas():
    """All want the whole pool: each unit goes to a uniform player, so a catch is
    Binomial(100, 1/5) (mean 20, variance 16); one capped player (wants 10) gets its 10 almost
    surely and the others share 90 (mean 22.5). Same draws at any batch size."""
    b = 4000
    keys = jax.vmap(lambda a: rng.arena_key(3, a))(jnp.arange(b))
    fn = jax.jit(jax.vmap(lambda k, r: hand_out(k, 1, r, jnp.float32(100.0), "hash"), in_axes=(0, None)))
    got = np.asarray(fn(keys, jnp.full((N,), 100.0)))
    assert (got.sum(axis=1) == 100).all() and (got == np.floor(got)).all()
    assert np.abs(got.mean(axis=0) - 20).max() < 4 * math.sqrt(16 / b)
    assert abs(got[:, 0].var(ddof=1) - 16) < 1.6
    capped = np.asarray(fn(keys, jnp.asarray([10.0, 100, 100, 100, 100])))
    assert (capped[:, 0] == 10).mean() > 0.99
    assert np.abs(capped[:, 1:].mean(axis=0) - 22.5).max() < 4 * math.sqrt(18 / b)
    one = np.asarray(
        jax.jit(jax.vmap(lambda k, r: hand_out(k, 1, r, jnp.float32(100.0), "hash"), in_axes=(0, None)))(
            keys[7:9], jnp.full((N,), 100.0)
        )
    )
    np.testing.assert_array_equal(one, got[7:9])
    equality = 1 - np.asarray([ref.gini(list(g)) for g in got[:500]])
    assert 0.85 < equality.mean() < 0.95  # the issue's "mean equality ~ 0.90" for one month


def interleaving_law(requests: list[int], pool: int) -> dict[tuple[int, ...], float]:
    """A law that is NOT GovSim's: the first ``pool`` units of a uniformly random order of all
    requested units (each unit to a player in proportion to what it still wants)."""
    states: dict[tuple[int, ...], float] = {(0,) * len(requests): 1.0}
    for _ in range(pool):
        nxt: dict[tuple[int, ...], float] = {}
        for got, p in states.items():
            rest = [r - g for r, g in zip(requests, got, strict=True)]
            for i, w in enumerate(rest):
                if w > 0:
                    g = got[:i] + (got[i] + 1,) + got[i + 1 :]
                    nxt[g] = nxt.get(g, 0.0) + p * w / sum(rest)
        states = nxt
    return states


def chi2_pvalue(samples: np.ndarray, law: dict[tuple[int, ...], float]) -> float:
    """Pearson's chi-square of sampled catch vectors against a law (outcomes outside it: p 0)."""
    from scipy.stats import chisquare

    keys = list(law)
    seen = {tuple(int(x) for x in row) for row in samples}
    if not seen <= set(keys):
        return 0.0
    index = {k: n for n, k in enumerate(keys)}
    obs = np.bincount([index[tuple(int(x) for x in row)] for row in samples], minlength=len(keys))
    exp = np.asarray([law[k] for k in keys]) * len(samples)
    return float(chisquare(obs, exp).pvalue) if len(keys) > 1 else 1.0


def test_allocation_law_is_govsims_chi_square():
    """The rounds of ``hand_out`` draw GovSim's unit-by-unit law exactly: Pearson's chi-square of
    4000 arenas' catches against the reference's exact law (tests/reference_govsim.py
    ``allocation_law``) in cases where players are served mid-way; and the test has power: the
    same samples reject the proportional interleaving law (a unit of (1, 3) goes to player 0
    with probability 1/2 under GovSim's rule, 1/4 under the interleaving)."""
    b = 4000
    keys = jax.vmap(lambda a: rng.arena_key(11, a))(jnp.arange(b))
    fn = jax.jit(jax.vmap(lambda k, r, d: hand_out(k, 1, r, d, "hash"), in_axes=(0, None, None)))
    cases = [([1, 3, 0, 0], 1), ([1, 3, 0, 0], 2), ([2, 2, 5, 0], 6), ([1, 1, 1, 4], 5), ([3, 0, 2, 6], 7)]
    for req, pool in cases:
        got = np.asarray(fn(keys, jnp.asarray(req, jnp.float32), jnp.float32(pool)))
        assert (got.sum(axis=1) == pool).all()
        assert chi2_pvalue(got, ref.allocation_law(req, pool)) > 1e-3, (req, pool)
    got = np.asarray(fn(keys, jnp.asarray([1, 3, 0, 0], jnp.float32), jnp.float32(1)))
    assert chi2_pvalue(got, interleaving_law([1, 3, 0, 0], 1)) < 1e-6


def test_whole_units_floor_requests_on_any_engine():
    cfg = bj.default_config().model_dump()
    cfg["model"]["wholeUnits"] = True
    cfg["players"] = [{"strategy": "aggressive", "intensity": 0.9}] * 4
    res = bj.simulate(cfg, n_arenas=2, seed=1, turns=3)
    assert (res.players.requested == np.floor(res.players.requested)).all()
    assert (res.players.requested > 0).any()


def test_sustainability_threshold_per_engine():
    from bdpd_jax.kernels.engines import get_engine

    g = build(ArenaConfig.load(govsim("fishery")))[1].engine
    assert float(get_engine("govsim").sustainability_threshold(jnp.float32(77.0), g)) == 38.5
    cfg = bj.default_config().model_dump()
    lp = build(ArenaConfig.load(cfg))[1].engine
    f = float(get_engine("logistic").sustainability_threshold(jnp.float32(75.0), lp))
    x = 75.0 - f  # the remainder regrows exactly to the stock (r = 0.12, K = 150)
    assert x + 0.12 * x * (1 - x / 150) == pytest.approx(75.0, rel=1e-5)


def test_threshold_observation_follows_observability():
    cfg = govsim(
        "fishery",
        "universalization",
        players=[bj.Policy(lambda obs, mem, key: (obs["sustainabilityThreshold"] * 2, mem), name="double_threshold")]
        * N,
    )
    res = bj.simulate(cfg, n_arenas=1, seed=0, turns=2)
    assert res.players[res.players.turn == 1].requested.tolist() == [20.0] * N
    cfg["observability"]["sustainabilityThreshold"] = {"visible": False}
    res = bj.simulate(cfg, n_arenas=1, seed=0, turns=2)  # visibility is data: the program above
    assert (res.players[res.players.turn == 1].requested == 0).all()  # NaN (hidden) requests are treated as 0


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_scenarios_threshold_taker_keeps_the_pool(experiment):
    res = bj.simulate(govsim("pasture", experiment), n_arenas=2, seed=0, history=False)
    s = res.summary
    assert s.govsim_survived.all() and (s.govsim_over_usage == 0).all()
    if experiment != "newcomer":
        assert (s.govsim_gain == 120).all() and (s.govsim_efficiency == 1).all()


def test_scenarios_wording_and_errors():
    for sc in GOVSIM_SCENARIOS.values():
        assert sc.unit in sc.rules_text and "{threshold}" in sc.universalization
        assert "7" in sc.universalization_text(7)
    with pytest.raises(ValueError, match="scenario"):
        govsim("forest")
    with pytest.raises(ValueError, match="experiment"):
        govsim("fishery", "silence")


MIXED = ["threshold_taker", "aggressive", "random", "conservative", "threshold_taker"]


@pytest.fixture(scope="module")
def newcomer_batch():
    """GovSim's newcomer experiment with five different players, one batched arena (seed 4): the
    reference of the live and the server tests (one compiled program for both; the default
    experiment's live play is checked against the reference above, the newcomer's holds more:
    a player who joins in month 4)."""
    cfg = govsim("fishery", "newcomer", players=MIXED)
    return cfg, bj.simulate(cfg, n_arenas=1, seed=4)


def test_live_equals_batch_for_a_govsim_arena(newcomer_batch):
    cfg, res = newcomer_batch
    arena = Arena(cfg, seed=4)
    arena.run()
    pl = res.players
    for rec in arena.records:
        p = pl[pl.turn == rec["turn"]].sort_values("player")
        np.testing.assert_array_equal(
            np.asarray([d["actual"] for d in rec["decisions"]], np.float32), p.actual.to_numpy()
        )
    live = arena.summary()["govsim"]
    s = res.summary.iloc[0]
    for c in COLS:
        assert (live[c] is None and np.isnan(s[c])) or live[c] == pytest.approx(s[c], rel=1e-7), c


def test_server_runs_a_govsim_experiment_like_simulate(newcomer_batch, tmp_path):
    from fastapi.testclient import TestClient

    from bdpd_jax.host.server import create_app

    cfg, res = newcomer_batch
    with TestClient(create_app(tmp_path)) as client:
        r = client.post("/api/arenas", json={**cfg, "seed": 4})
        assert r.status_code == 200, r.text
        c = r.json()
        owner = {"X-Owner-Key": c["ownerKey"]}
        assert client.post(f"/api/arenas/{c['arenaId']}/start", headers=owner, json={}).status_code == 200
        for _ in range(15):
            client.post(f"/api/arenas/{c['arenaId']}/tick", headers=owner)
        live = client.get(f"/api/arenas/{c['arenaId']}/summary", headers=owner).json()["govsim"]
    s = res.summary.iloc[0]
    for col in COLS:
        assert (live[col] is None and np.isnan(s[col])) or live[col] == pytest.approx(s[col], rel=1e-7), col


def test_gains_are_catches_not_wealth_under_a_wealth_shock():
    """Issue 25's bug: a wealth_shock leaked into total_gain, efficiency and equality."""
    cfg = bj.default_config().model_dump()
    cfg["model"]["maxTurns"] = 6
    steady = bj.Policy(lambda obs, mem, key: (jnp.asarray(1.5, mem.dtype), mem), name="steady")  # wealth-blind
    cfg["players"] = [{"strategy": steady}] * 4

    def shocked_at(turn: int):
        shock = {
            "id": "w",
            "type": "wealth_shock",
            "trigger": {"kind": "turn", "turn": turn},
            "payload": {"factor": 0.5, "player": 1},
        }
        return bj.simulate({**cfg, "perturbations": [shock]}, n_arenas=2, seed=1)

    # the run without a shock: the same shock due after the last turn (it never fires; its turn is
    # a params leaf, so both runs are one compiled program)
    never = shocked_at(7)
    assert never.perturbations.empty
    plain = never.summary
    shocked = shocked_at(2)
    s = shocked.summary
    caught = shocked.players.groupby("arena").actual.sum().to_numpy()
    np.testing.assert_allclose(s.govsim_total_gain.to_numpy(), caught, rtol=1e-6)
    for c in ("total_gain", "govsim_total_gain", "govsim_equality", "equality", "efficiency"):
        np.testing.assert_array_equal(s[c].to_numpy(), plain[c].to_numpy(), err_msg=c)
    assert (s.wealth_1 != plain.wealth_1).all()  # the shock did hit the wealth


def test_govsim_rules_text_per_experiment():
    """An LLM player's rules: the scenario's wording; universalization adds the sentence with
    month 1's per-player threshold (10 of a pool of 100 among 5)."""
    from bdpd_jax.scenarios import EXPERIMENTS, GOVSIM_SCENARIOS, govsim_rules

    for name, sc in GOVSIM_SCENARIOS.items():
        for exp in EXPERIMENTS:
            text = govsim_rules(name, exp)
            assert text.startswith(sc.rules_text)
            assert (sc.universalization_text(10) in text) == (exp == "universalization")
    with pytest.raises(ValueError, match="scenario"):
        govsim_rules("ocean")
    with pytest.raises(ValueError, match="experiment"):
        govsim_rules("fishery", "silence")
