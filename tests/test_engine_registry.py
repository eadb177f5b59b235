"""The engine registry: one contract over every engine, and another engine added by one file's
worth of code plus one ``register_engine`` line (a toy engine and its config model defined here)."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import bdpd_jax as bj
from bdpd_jax.config.engines import EngineConfig, register_engine, unregister_engine
from bdpd_jax.kernels.engines import ENGINES, Engine
from bdpd_jax.kernels.params import ENV_VARS, farr
from bdpd_jax.prepare.game import build


class ToyParams(eqx.Module):
    initial: jax.Array  # float[]
    decay: jax.Array  # float[], fraction of the stock lost per turn


class ToyState(eqx.Module):
    stock: jax.Array  # float[]


class Toy(Engine):
    """A stock that decays geometrically and collapses below 1."""

    name = "toy_decay"
    variables = ("commonsStock", "commonsRatio")
    recorded = ("half",)

    def params_from_model(self, model):
        return ToyParams(initial=farr(model.commonsInitial), decay=farr(0.1))

    def init(self, p):
        return ToyState(stock=p.initial)

    def stock(self, s):
        return s.stock

    def step_one(self, s, demand, u, p):
        got = jnp.minimum(demand, s.stock)
        return ToyState(stock=s.stock - got), got, jnp.zeros((), bool), jnp.zeros_like(got)

    def step(self, s, p):
        new = s.stock * (1.0 - p.decay)
        return ToyState(stock=new), new - s.stock

    def check_end(self, s, p):
        return s.stock < 1.0

    def reference(self, s, p):
        return p.initial

    def extra_observations(self, s, p):
        return {"commonsStock": s.stock, "commonsRatio": s.stock / p.initial}

    def recorded_values(self, s):
        return {"half": s.stock / 2}


class ToyConfig(EngineConfig):
    commonsInitial: float = 50.0  # noqa: N815  (a field named by its wire name works too: its alias is itself)


@pytest.fixture
def toy():
    eng = register_engine(Toy(), ToyConfig)  # the one registration line
    yield eng
    unregister_engine(eng.name)


def test_toy_engine_runs_through_simulate(toy):
    cfg = {
        "model": {"engineMode": "toy_decay", "maxTurns": 60, "commonsInitial": 100.0},
        "observability": {"commonsStock": {"visible": True}},
        "players": [{"strategy": "idle"}, {"strategy": "aggressive", "intensity": 0.01}],
    }
    res = bj.simulate(cfg, n_arenas=2, progress=False)
    t = res.turns[res.turns.arena == 0]
    assert "half" in t.columns and np.allclose(t.half, t.stock / 2)
    assert not res.summary.survived.any()  # decays below 1 within 60 turns
    with pytest.raises(ValueError, match="capitalStock"):
        bj.ArenaConfig.load({**cfg, "observability": {"capitalStock": {"visible": True}}})


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_engine_contract(name):
    """Every registered engine: shapes, observations within its variables, recorded columns."""
    model = {"engineMode": name, "maxTurns": 5}
    game, p = build(bj.ArenaConfig.load({"model": model, "players": [{"strategy": "idle"}] * 2}))
    eng = game.engine
    assert set(eng.variables) <= set(ENV_VARS)
    s = eng.init(p.engine)
    assert jnp.shape(eng.stock(s)) == ()
    s1, got, died, drawn = eng.step_one(s, farr(0.0), farr(0.5), p.engine)
    assert float(got) == 0.0 and not bool(died)
    s2, regen = eng.step(s1, p.engine)
    assert jax.tree_util.tree_structure(s2) == jax.tree_util.tree_structure(s)
    assert jnp.shape(regen) == () and jnp.shape(eng.check_end(s2, p.engine)) == ()
    assert set(eng.extra_observations(s2, p.engine)) <= set(eng.variables)
    assert set(eng.recorded_values(s2)) == set(eng.recorded)
    assert jnp.shape(eng.failed(s2)) == ()
    # params are all leaves: one program serves every parameter value
    jax.jit(eng.step)(s, p.engine)
