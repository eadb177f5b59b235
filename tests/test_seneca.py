"""The Seneca engine: Bardi's R-C-P ODE on diffrax (004_* A.1.1, A.2.1, Table A.3)."""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import bdpd_jax as bj
from bdpd_jax.config.engines import engine_config_model
from bdpd_jax.kernels.engines import get_engine
from bdpd_jax.kernels.engines.seneca import ORDER, SenecaState, vector_field
from bdpd_jax.kernels.policies import BUILTINS
from bdpd_jax.prepare.game import build
from bdpd_jax.run.simulate import TRACES

ENG = get_engine("seneca")
SEEN = {"commonsStock": {"visible": True}, "capitalStock": {"visible": True}, "pollutionLevel": {"visible": True}}


def cfg(players=("idle", "idle"), seneca=None, obs=SEEN, turns=3000, **model):
    return {
        "model": {"engineMode": "seneca", "maxTurns": turns, **({"seneca": seneca} if seneca else {}), **model},
        "observability": obs,
        "players": [{"strategy": s} for s in players],
    }


def params(**seneca):
    return ENG.params_from_model(
        engine_config_model("seneca").model_validate({"commonsInitial": 1.0, "seneca": seneca})
    )


def trajectory(p, turns):
    """R, C, P after each of ``turns`` turns of pure dynamics (no harvest)."""

    def body(s, _):
        s, _r = ENG.step(s, p)
        return s, jnp.stack([s.R, s.C, s.P])

    return np.asarray(jax.jit(lambda s: jax.lax.scan(body, s, None, length=turns)[1])(ENG.init(p)))


# --- the seed's note: capital peaks near turn 1450, pollution near turn 1820 -----------------


def euler_bardi(turns, k1=0.03, k2=0.30, l2=0.01, r=1.0, c=0.01, q=0.001, dt=0.1):
    """Plain-Python explicit Euler of Bardi's ODE, one step per turn (docs/seneca_defaults.md)."""
    out = []
    for _ in range(turns):
        rc, cp = k1 * r * c, k2 * c * q
        r, c, q = r + dt * (-rc), c + dt * (rc - cp), q + dt * (cp - l2 * q)
        out.append((r, c, q))
    return np.asarray(out)


def test_peak_timing_through_simulate():
    """The seed's Seneca payload (004_* A.2.1) with 4 idle players is the pure Bardi run:
    the same peak turns as a plain Euler loop (1456, 1829), on every arena."""
    from payloads import SEED_SENECA

    c = {**SEED_SENECA, "model": {**SEED_SENECA["model"], "maxTurns": 3000}, "players": [{"strategy": "idle"}] * 4}
    res = bj.simulate(c, n_arenas=2, progress=False)
    ref = euler_bardi(3000)
    assert (res.players.actual == 0).all()
    for _, t in res.turns.groupby("arena"):
        assert {"stock", "capital", "pollution", "solver_failed"} <= set(t.columns)
        c_peak = int(t.turn.iloc[t.capital.to_numpy().argmax()])
        p_peak = int(t.turn.iloc[t.pollution.to_numpy().argmax()])
        assert (c_peak, p_peak) == (int(ref[:, 1].argmax()) + 1, int(ref[:, 2].argmax()) + 1) == (1456, 1829)
        np.testing.assert_allclose(t[["stock", "capital", "pollution"]].to_numpy(), ref, rtol=2e-4, atol=1e-7)
        assert not t.solver_failed.any()
        # zero harvest: R levels off near 0.451 (docs/seneca_defaults.md)
        assert t.stock.iloc[-1] == pytest.approx(0.4501, abs=2e-3)
    assert res.summary.survived.all()


@pytest.mark.parametrize("solver,integrator", [("tsit5", "tableau"), ("heun", "steps"), ("euler", "diffeqsolve")])
def test_peak_timing_other_solvers(solver, integrator):
    y = trajectory(params(solver=solver, integrator=integrator), 3000)
    c_peak, p_peak = int(np.argmax(y[:, 1])) + 1, int(np.argmax(y[:, 2])) + 1
    assert abs(c_peak - 1450) <= 0.03 * 1450 and abs(p_peak - 1820) <= 0.03 * 1820


# --- accuracy: float64 against scipy, and the order of convergence ---------------------------


def _scipy(p, turns):
    from scipy.integrate import solve_ivp

    k1, k2, l1, l2, l3, dt = (float(getattr(p, n)) for n in ("k1", "k2", "l1", "l2", "l3", "dt"))

    def f(t, y):
        r, c, q = y
        return [-k1 * r * c - l3 * r, k1 * r * c - k2 * c * q - l1 * c, k2 * c * q - l2 * q]

    y0 = [float(p.initial), float(p.capital0), float(p.pollution0)]
    t = np.arange(1, turns + 1) * dt
    return solve_ivp(f, (0, t[-1]), y0, t_eval=t, method="DOP853", rtol=1e-12, atol=1e-14).y.T


@pytest.mark.parametrize("draw", range(2))
@pytest.mark.parametrize(
    "how", [{"adaptive": True, "rtol": 1e-10, "atol": 1e-13}, {"integrator": "tableau", "substeps": 4}]
)
def test_float64_matches_solve_ivp(draw, how):
    rng = np.random.default_rng(draw)
    seneca = {
        "k1": float(rng.uniform(0.1, 1.0)),
        "k2": float(rng.uniform(0.1, 1.0)),
        "l1": float(rng.uniform(0, 0.05)),
        "l2": float(rng.uniform(0, 0.05)),
        "l3": float(rng.uniform(0, 0.01)),
        "capitalSeed": float(rng.uniform(0.01, 0.2)),
        "pollutionSeed": float(rng.uniform(0.001, 0.05)),
        "solver": "tsit5",
        **how,
    }
    with jax.enable_x64(True):
        p = params(**seneca)
        assert p.k1.dtype == jnp.float64
        y = trajectory(p, 300)
        ref = _scipy(p, 300)
    np.testing.assert_allclose(y, ref, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("solver", ["euler", "heun", "bosh3", "tsit5"])
def test_solver_order(solver):
    """Error after a fixed model time against substeps: log-log slope ~ the solver's order."""
    integrator = "steps" if solver == "euler" else "tableau"
    base = {"k1": 0.8, "k2": 0.6, "l1": 0.02, "l2": 0.05, "l3": 0.01, "capitalSeed": 0.1, "pollutionSeed": 0.05}
    with jax.enable_x64(True):
        p0 = params(solver=solver, integrator=integrator, dt=1.0, **base)
        ref = _scipy(p0, 10)[-1]
        subs = [2, 4, 8, 16] if ORDER[solver] < 5 else [1, 2, 4]
        errs = [
            np.abs(
                trajectory(params(solver=solver, integrator=integrator, dt=1.0, substeps=n, **base), 10)[-1] - ref
            ).max()
            for n in subs
        ]
    slope = -np.polyfit(np.log(subs), np.log(errs), 1)[0]
    # asymptotic order from below; Tsit5's tableau makes it converge a little faster pre-asymptotically
    assert ORDER[solver] - 0.35 < slope < ORDER[solver] + 0.7, (solver, slope, errs)


@pytest.mark.parametrize("solver", ["euler", "heun", "tsit5"])
def test_integrators_agree(solver):
    """diffrax solver steps, the unrolled tableau and a full diffeqsolve take the same steps."""
    ys = {
        i: trajectory(params(solver=solver, integrator=i, substeps=2), 200) for i in ("steps", "tableau", "diffeqsolve")
    }
    np.testing.assert_allclose(ys["steps"], ys["diffeqsolve"], rtol=2e-6)
    np.testing.assert_allclose(ys["tableau"], ys["diffeqsolve"], rtol=2e-6)


# --- batching: vmap == loop, no recompiles across parameter values ---------------------------


def test_vmap_equals_loop():
    draws = [params(k1=0.03 + 0.01 * i, l2=0.01 * (i + 1), capitalSeed=0.01 * (i + 1)) for i in range(4)]
    batch = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs, -1), *draws)
    run = lambda p: trajectory(p, 400)  # noqa: E731
    vm = np.asarray(jax.vmap(lambda p: jnp.asarray(trajectory_jnp(p, 400)), in_axes=-1, out_axes=-1)(batch))
    for i, p in enumerate(draws):
        # XLA's vectorised CPU code may contract a multiply-add differently: equal to ~1 ulp
        np.testing.assert_allclose(vm[..., i], run(p), rtol=1e-6, atol=0)


def trajectory_jnp(p, turns):
    def body(s, _):
        s, _r = ENG.step(s, p)
        return s, jnp.stack([s.R, s.C, s.P])

    return jax.lax.scan(body, ENG.init(p), None, length=turns)[1]


def test_no_recompile_across_parameter_values():
    bj.simulate(cfg(turns=50, seneca={"k1": 0.03}), n_arenas=3, progress=False)
    before = dict(TRACES)
    for k1 in (0.05, 0.5):
        bj.simulate(cfg(turns=50, seneca={"k1": k1, "l2": 0.02, "harvestScale": 0.5}), n_arenas=3, progress=False)
    assert before == TRACES


# --- harvest coupling, collapse, failure -----------------------------------------------------


def test_zero_harvest_is_pure_bardi():
    s = ENG.init(params())
    s2, delivered, died, drawn = ENG.step_one(s, jnp.float32(0.0), jnp.float32(0.5), params())
    assert float(delivered) == 0 and not bool(died) and float(drawn) == 0
    assert jax.tree_util.tree_all(jax.tree_util.tree_map(lambda a, b: bool(jnp.all(a == b)), s, s2))


def test_harvest_draws_on_R_and_collapse():
    # demands and deliveries in R units (docs/semantics.md §9); harvestScale only scales capacity
    p = params(harvestScale=0.1)
    s = ENG.init(p)
    s, got, _, _ = ENG.step_one(s, jnp.float32(0.2), jnp.float32(0.5), p)
    assert float(got) == pytest.approx(0.2) and float(s.R) == pytest.approx(0.8)
    s, got, _, _ = ENG.step_one(s, jnp.float32(100.0), jnp.float32(0.5), p)
    assert float(got) == pytest.approx(0.8) and float(s.R) == 0.0
    assert bool(ENG.check_end(s, p))
    # through the turn: aggressive players with a large harvestScale empty R; the game ends
    res = bj.simulate(
        cfg(players=("aggressive", "aggressive"), turns=200, seneca={"harvestScale": 0.1}), progress=False
    )
    assert not bool(res.summary.survived[0]) and res.turns.stock.iloc[-1] <= 1e-3
    assert (res.turns.reserve_drawn == 0).all()


def test_solver_failure_is_flagged_per_arena():
    # an adaptive solve allowed one step at an impossible tolerance cannot reach t1
    c = cfg(turns=20, seneca={"solver": "tsit5", "adaptive": True, "rtol": 1e-30, "atol": 1e-30, "maxSteps": 1})
    res = bj.simulate(c, n_arenas=2, progress=False)
    assert res.summary.solver_failed.all() and not res.summary.survived.any()
    assert np.isfinite(res.turns.stock).all() and res.turns.solver_failed.iloc[-1]


@pytest.mark.parametrize(
    "field,value", [("useHiddenReserve", True), ("hiddenReserveInitial", 5.0), ("collapseDie", {"sides": 6})]
)
def test_reserve_and_die_rejected_on_seneca(field, value):
    with pytest.raises(ValueError, match=field):
        bj.ArenaConfig.load(cfg(**{field: value}))


def test_seneca_block_only_on_seneca():
    with pytest.raises(ValueError, match="seneca"):
        bj.ArenaConfig.load({"model": {"engineMode": "logistic", "seneca": {"k1": 0.1}}})


# --- observations and heuristics -------------------------------------------------------------


@functools.partial(jax.jit, static_argnums=0)
def _first_obs(game, key, p):
    """Every player's observation of turn 1, as the turn computes it (jitted, the game static:
    configs that differ only in observability share the program)."""
    from bdpd_jax.kernels.observe import observe

    return observe(game, key, game.init(p), p)


def _obs(config):
    from bdpd_jax.kernels.rng import arena_key

    game, p = build(bj.ArenaConfig.load(config))
    return _first_obs(game, arena_key(0, 0), p)


def test_extra_observations_through_observability():
    o = _obs(
        cfg(
            obs={
                "capitalStock": {"visible": True},
                "commonsRatio": {"visible": True},
                "pollutionLevel": {"visible": True, "noise": 0.5},
                "commonsStock": {"visible": True, "resolution": "qualitative"},
            }
        )
    )
    assert np.allclose(o["capitalStock"], 0.01) and np.allclose(o["commonsRatio"], 1.0)
    noisy = o["pollutionLevel"]
    assert np.all(noisy >= 0) and not np.allclose(noisy, 0.001)
    assert np.allclose(o["commonsStock"], 0.8)  # qualitative: top bucket's midpoint x R0
    hidden = _obs(cfg(obs={}))
    assert np.isnan(hidden["capitalStock"]).all() and np.isnan(hidden["pollutionLevel"]).all()


def _ctx(w=30.0):
    return {
        "wealth": jnp.float32(w),
        "reference": jnp.float32(1.0),
        "unit": jnp.float32(1.0),
        "intensity": 0.5,
        "reduction_factor": 1.0,
        "u": 0.5,
    }


def test_rcp_cuts_harvest_after_capital_peak_and_as_pollution_rises():
    rcp, cons = BUILTINS["rcp"], BUILTINS["conservative"]
    nan = jnp.float32(jnp.nan)
    mem = jnp.zeros((rcp.memory_size,), jnp.float32)
    hs = []
    for c, q in [(0.1, 0.001), (0.3, 0.01), (0.37, 0.05), (0.2, 0.3), (0.05, 0.4)]:
        obs = {
            "commonsStock": jnp.float32(0.7),
            "commonsRatio": nan,
            "capitalStock": jnp.float32(c),
            "pollutionLevel": jnp.float32(q),
        }
        h, mem = rcp.decide(obs, mem, _ctx())
        hs.append(float(h))
    base = float(cons.decide(obs, mem, _ctx())[0])
    assert hs[0] == pytest.approx(base * 0.1 / 0.101, rel=1e-5)  # rising capital: only the pollution share
    assert hs[2] > hs[3] > hs[4] and hs[4] < 0.2 * base


def test_rcp_falls_back_to_conservative_when_capital_hidden():
    res = bj.simulate(
        cfg(
            players=("rcp", "conservative"),
            obs={"commonsStock": {"visible": True}},
            turns=30,
            seneca={"harvestScale": 1e-3},
        ),
        progress=False,
    )
    pl = res.players
    np.testing.assert_array_equal(pl[pl.player == 0].requested.to_numpy(), pl[pl.player == 1].requested.to_numpy())


def test_idle_harvests_nothing_on_any_engine():
    # the Seneca game and shapes of test_no_recompile_across_parameter_values (one program)
    seneca = cfg(turns=50, seneca={"k1": 0.03})
    logistic = {"model": {"engineMode": "logistic", "maxTurns": 10}, "players": [{"strategy": "idle"}] * 2}
    for config in (seneca, logistic):
        res = bj.simulate(config, n_arenas=3, progress=False)
        assert (res.players.requested == 0).all() and (res.players.actual == 0).all()


def test_results_carry_rcp_columns_and_rhs_is_bardi():
    y = jnp.asarray([0.5, 0.2, 0.1])
    p = params(k1=0.3, k2=0.2, l1=0.01, l2=0.02, l3=0.03)
    d = np.asarray(vector_field(0.0, y, p))
    r, c, q = 0.5, 0.2, 0.1
    np.testing.assert_allclose(
        d, [-0.3 * r * c - 0.03 * r, 0.3 * r * c - 0.2 * c * q - 0.01 * c, 0.2 * c * q - 0.02 * q], rtol=1e-6
    )
    assert isinstance(ENG.init(p), SenecaState) and dataclasses.is_dataclass(ENG.init(p))
