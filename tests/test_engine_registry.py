"""The engine registry: one contract over every engine (``bdpd_jax.testing.check_engine``), and
another engine added by one file's worth of code plus one ``register_engine`` line (a toy
engine and its config model defined here)."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import pytest

import bdpd_jax as bj
from bdpd_jax.config.engines import EngineConfig, register_engine, unregister_engine
from bdpd_jax.kernels.engines import ENGINES, Engine
from bdpd_jax.kernels.params import farr
from bdpd_jax.prepare import prepare
from bdpd_jax.testing import check_engine


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


def test_a_config_field_named_by_its_wire_name_reaches_the_engine(toy):
    """(An engine added in a test and run end to end: tests/test_extensions.py.)"""
    cfg = {
        "model": {"engineMode": "toy_decay", "maxTurns": 60, "commonsInitial": 100.0},
        "observability": {"commonsStock": {"visible": True}},
        "players": [{"strategy": "idle"}, {"strategy": "aggressive", "intensity": 0.01}],
    }
    prep = prepare(bj.ArenaConfig.load(cfg))
    assert float(prep.params.engine.initial) == 100.0 and prep.game.engine is toy
    with pytest.raises(ValueError, match="capitalStock"):
        bj.ArenaConfig.load({**cfg, "observability": {"capitalStock": {"visible": True}}})


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_engine_contract(name):
    """Every registered engine passes the public contract check (bdpd_jax.testing.check_engine):
    shapes, observations within its variables, recorded columns, one program for every params
    value, vmap equal to a loop, a stock never negative."""
    check_engine(name)
